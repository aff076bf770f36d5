#include "model/canonicalize.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "model/fuse_patterns.h"

namespace psched::model {
namespace {

// `second` applied after `first` as one activation, when both are clamps (ReLU or Clip) whose
// ranges overlap: PyTorch exports ReLU6 as Relu followed by Clip(0, 6).
std::optional<Activation> ComposeClamps(const Activation& first, const Activation& second) {
  auto range = [](const Activation& a) -> std::optional<std::pair<float, float>> {
    if (a.kind == ActivationKind::kRelu) {
      return std::pair<float, float>{0.0f, std::numeric_limits<float>::infinity()};
    }
    if (a.kind == ActivationKind::kClip) return std::pair<float, float>{a.min, a.max};
    return std::nullopt;
  };
  const auto r1 = range(first);
  const auto r2 = range(second);
  if (!r1.has_value() || !r2.has_value()) return std::nullopt;
  const float lo = std::max(r1->first, r2->first);
  const float hi = std::min(r1->second, r2->second);
  if (lo > hi) return std::nullopt;
  Activation result;
  if (lo == 0.0f && hi == std::numeric_limits<float>::infinity()) {
    result.kind = ActivationKind::kRelu;
  } else {
    result.kind = ActivationKind::kClip;
    result.min = lo;
    result.max = hi;
  }
  return result;
}

class Canonicalizer {
 public:
  explicit Canonicalizer(RawGraph raw) : raw_(std::move(raw)) {}

  absl::StatusOr<Graph> Run();

 private:
  TensorId Resolve(TensorId t) const {
    while (alias_[static_cast<size_t>(t)] != t) t = alias_[static_cast<size_t>(t)];
    return t;
  }
  void RemoveIdentities();
  void FoldReshapesIntoTransposes();
  absl::Status RewriteBatchNorms();
  void FuseActivations();
  absl::StatusOr<Graph> Compact();

  bool IsGraphOutput(TensorId t) const;
  std::vector<int> ConsumerCounts() const;
  bool FoldBatchNorm(const RawOp& bn, RawOp* producer);
  void LowerBatchNorm(const RawOp& bn, std::vector<RawOp>* out);
  ConstantId NewConstant(std::string name, std::vector<int64_t> dims, std::vector<float> data);
  TensorId NewTensor(std::string name, Shape shape, int32_t onnx_rank, ConstantId constant);

  RawGraph raw_;
  std::vector<TensorId> alias_;
};

absl::StatusOr<Graph> Canonicalizer::Run() {
  alias_.resize(raw_.tensors.size());
  for (size_t i = 0; i < alias_.size(); ++i) alias_[i] = static_cast<TensorId>(i);
  RemoveIdentities();
  FusePatterns(raw_);
  FoldReshapesIntoTransposes();
  if (absl::Status s = RewriteBatchNorms(); !s.ok()) return s;
  FuseActivations();
  return Compact();
}

void Canonicalizer::RemoveIdentities() {
  std::vector<RawOp> kept;
  kept.reserve(raw_.ops.size());
  for (RawOp& op : raw_.ops) {
    for (TensorId& t : op.op.inputs) t = Resolve(t);
    if (op.raw_kind == RawOpKind::kIdentity) {
      alias_[static_cast<size_t>(op.op.output)] = op.op.inputs[0];
      continue;
    }
    kept.push_back(std::move(op));
  }
  raw_.ops = std::move(kept);
  for (GraphIO& io : raw_.outputs) io.tensor = Resolve(io.tensor);
  for (size_t i = 0; i < raw_.ops.size(); ++i) {
    raw_.tensors[static_cast<size_t>(raw_.ops[i].op.output)].producer = static_cast<OpId>(i);
  }
}

// A transpose reads its input through a view of any dims with the same element count and
// writes its output contiguously, so a reshape (a row-major copy) right before or right after
// it is one pass too many: the transpose reads the reshape's input, or writes the reshape's
// output, instead.
void Canonicalizer::FoldReshapesIntoTransposes() {
  std::vector<int> consumers = ConsumerCounts();
  std::vector<int> producer(raw_.tensors.size(), -1);
  for (size_t i = 0; i < raw_.ops.size(); ++i) {
    producer[static_cast<size_t>(raw_.ops[i].op.output)] = static_cast<int>(i);
  }
  std::vector<bool> dropped(raw_.ops.size(), false);
  for (size_t i = 0; i < raw_.ops.size(); ++i) {
    Op& op = raw_.ops[i].op;
    if (op.kind == OpKind::kTranspose && op.activation.kind == ActivationKind::kNone) {
      // reshape -> transpose: read the reshape's input.
      const TensorId in = op.inputs[0];
      const int p = producer[static_cast<size_t>(in)];
      if (p >= 0 && !dropped[static_cast<size_t>(p)] &&
          raw_.ops[static_cast<size_t>(p)].op.kind == OpKind::kReshape &&
          consumers[static_cast<size_t>(in)] == 1 && !IsGraphOutput(in)) {
        op.inputs[0] = raw_.ops[static_cast<size_t>(p)].op.inputs[0];
        dropped[static_cast<size_t>(p)] = true;
      }
    } else if (op.kind == OpKind::kReshape) {
      // transpose -> reshape: write the reshape's output.
      const TensorId in = op.inputs[0];
      const int p = producer[static_cast<size_t>(in)];
      if (p >= 0 && !dropped[static_cast<size_t>(p)] &&
          raw_.ops[static_cast<size_t>(p)].op.kind == OpKind::kTranspose &&
          raw_.ops[static_cast<size_t>(p)].op.activation.kind == ActivationKind::kNone &&
          consumers[static_cast<size_t>(in)] == 1 && !IsGraphOutput(in)) {
        Op& t = raw_.ops[static_cast<size_t>(p)].op;
        raw_.tensors[static_cast<size_t>(t.output)].producer = kInvalidId;
        t.output = op.output;
        producer[static_cast<size_t>(op.output)] = p;
        dropped[i] = true;
      }
    }
  }
  std::vector<RawOp> kept;
  kept.reserve(raw_.ops.size());
  for (size_t i = 0; i < raw_.ops.size(); ++i) {
    if (!dropped[i]) kept.push_back(std::move(raw_.ops[i]));
  }
  raw_.ops = std::move(kept);
  for (size_t i = 0; i < raw_.ops.size(); ++i) {
    raw_.tensors[static_cast<size_t>(raw_.ops[i].op.output)].producer = static_cast<OpId>(i);
  }
}

bool Canonicalizer::IsGraphOutput(TensorId t) const {
  for (const GraphIO& io : raw_.outputs) {
    if (io.tensor == t) return true;
  }
  return false;
}

std::vector<int> Canonicalizer::ConsumerCounts() const {
  std::vector<int> counts(raw_.tensors.size(), 0);
  for (const RawOp& op : raw_.ops) {
    for (TensorId t : op.op.inputs) ++counts[static_cast<size_t>(t)];
  }
  return counts;
}

ConstantId Canonicalizer::NewConstant(std::string name, std::vector<int64_t> dims,
                                      std::vector<float> data) {
  Constant c;
  c.name = std::move(name);
  c.dims = std::move(dims);
  c.data = std::move(data);
  raw_.constants.push_back(std::move(c));
  return static_cast<ConstantId>(raw_.constants.size() - 1);
}

TensorId Canonicalizer::NewTensor(std::string name, Shape shape, int32_t onnx_rank,
                                  ConstantId constant) {
  Tensor t;
  t.name = std::move(name);
  t.shape = shape;
  t.onnx_rank = onnx_rank;
  t.constant = constant;
  raw_.tensors.push_back(std::move(t));
  alias_.push_back(static_cast<TensorId>(alias_.size()));
  return static_cast<TensorId>(raw_.tensors.size() - 1);
}

// Per-channel scale s = gamma / sqrt(var + eps) and shift = beta - mean * s; empty when
// the parameters carry no data.
void BatchNormScaleShift(const RawGraph& g, const BatchNormParams& p, std::vector<float>* scale,
                         std::vector<float>* shift) {
  const Constant& gamma = g.constants[static_cast<size_t>(p.scale)];
  const Constant& beta = g.constants[static_cast<size_t>(p.bias)];
  const Constant& mean = g.constants[static_cast<size_t>(p.mean)];
  const Constant& var = g.constants[static_cast<size_t>(p.variance)];
  scale->clear();
  shift->clear();
  if (gamma.data.empty() || beta.data.empty() || mean.data.empty() || var.data.empty()) return;
  for (size_t c = 0; c < gamma.data.size(); ++c) {
    const float s = gamma.data[c] / std::sqrt(var.data[c] + p.epsilon);
    scale->push_back(s);
    shift->push_back(beta.data[c] - mean.data[c] * s);
  }
}

bool Canonicalizer::FoldBatchNorm(const RawOp& bn, RawOp* producer) {
  Op& p = producer->op;
  ConstantId* weight = nullptr;
  ConstantId* bias = nullptr;
  if (auto* conv = std::get_if<ConvAttrs>(&p.attrs); conv != nullptr) {
    weight = &conv->filter;
    bias = &conv->bias;
  } else if (auto* fc = std::get_if<FullyConnectedAttrs>(&p.attrs); fc != nullptr) {
    weight = &fc->weight;
    bias = &fc->bias;
  } else {
    return false;
  }
  std::vector<float> scale, shift;
  BatchNormScaleShift(raw_, bn.batch_norm, &scale, &shift);
  const Constant& w = raw_.constants[static_cast<size_t>(*weight)];
  const int64_t channels = w.dims[0];
  std::vector<float> new_weight, new_bias;
  const bool has_data = !scale.empty() && !w.data.empty() &&
                        (*bias == kInvalidId ||
                         !raw_.constants[static_cast<size_t>(*bias)].data.empty());
  if (has_data) {
    new_weight = w.data;
    const size_t per_channel = new_weight.size() / static_cast<size_t>(channels);
    for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
      for (size_t i = 0; i < per_channel; ++i) new_weight[c * per_channel + i] *= scale[c];
    }
    new_bias.resize(static_cast<size_t>(channels));
    for (size_t c = 0; c < static_cast<size_t>(channels); ++c) {
      const float b =
          *bias == kInvalidId ? 0.0f : raw_.constants[static_cast<size_t>(*bias)].data[c];
      new_bias[c] = b * scale[c] + shift[c];
    }
  }
  const std::string weight_name = w.name;
  const std::vector<int64_t> weight_dims = w.dims;
  *weight = NewConstant(absl::StrCat(weight_name, "+", bn.op.name), weight_dims,
                        std::move(new_weight));
  *bias = NewConstant(absl::StrCat(bn.op.name, ".bias"), {channels}, std::move(new_bias));
  // The producer now writes the BatchNormalization's output tensor.
  raw_.tensors[static_cast<size_t>(p.output)].producer = kInvalidId;
  p.output = bn.op.output;
  return true;
}

void Canonicalizer::LowerBatchNorm(const RawOp& bn, std::vector<RawOp>* out) {
  const Tensor& x = raw_.tensors[static_cast<size_t>(bn.op.inputs[0])];
  const Shape shape = x.shape;
  const int32_t rank = x.onnx_rank;
  const std::vector<int64_t> x_dims = x.dims;  // `x` dangles once NewTensor grows the tensors
  const bool x_channels_last = x.channels_last;
  std::vector<float> scale, shift;
  BatchNormScaleShift(raw_, bn.batch_norm, &scale, &shift);
  const TensorId scale_tensor =
      NewTensor(bn.op.name + ".scale", Shape{1, 1, shape.c}, rank,
                NewConstant(bn.op.name + ".scale", {1, 1, shape.c}, std::move(scale)));
  const TensorId shift_tensor =
      NewTensor(bn.op.name + ".shift", Shape{1, 1, shape.c}, rank,
                NewConstant(bn.op.name + ".shift", {1, 1, shape.c}, std::move(shift)));
  const TensorId scaled = NewTensor(bn.op.name + ".scaled", shape, rank, kInvalidId);
  raw_.tensors[static_cast<size_t>(scaled)].dims = x_dims;
  raw_.tensors[static_cast<size_t>(scaled)].channels_last = x_channels_last;
  RawOp mul;
  mul.op.name = bn.op.name + "/mul";
  mul.op.kind = OpKind::kMul;
  mul.op.inputs = {bn.op.inputs[0], scale_tensor};
  mul.op.output = scaled;
  mul.onnx_op_type = bn.onnx_op_type;
  RawOp add;
  add.op.name = bn.op.name + "/add";
  add.op.kind = OpKind::kAdd;
  add.op.inputs = {scaled, shift_tensor};
  add.op.output = bn.op.output;
  add.onnx_op_type = bn.onnx_op_type;
  out->push_back(std::move(mul));
  out->push_back(std::move(add));
}

absl::Status Canonicalizer::RewriteBatchNorms() {
  const std::vector<int> consumers = ConsumerCounts();
  std::vector<RawOp> rewritten;
  rewritten.reserve(raw_.ops.size());
  // Index in `rewritten` of each tensor's producer.
  std::vector<int> producer(raw_.tensors.size(), -1);
  for (RawOp& op : raw_.ops) {
    if (op.raw_kind == RawOpKind::kBatchNorm) {
      const TensorId in = op.op.inputs[0];
      const int p = producer[static_cast<size_t>(in)];
      const bool foldable = p >= 0 && consumers[static_cast<size_t>(in)] == 1 &&
                            !IsGraphOutput(in) &&
                            rewritten[static_cast<size_t>(p)].raw_kind == RawOpKind::kCanonical &&
                            rewritten[static_cast<size_t>(p)].op.activation.kind ==
                                ActivationKind::kNone;
      if (foldable && FoldBatchNorm(op, &rewritten[static_cast<size_t>(p)])) {
        producer.resize(raw_.tensors.size(), -1);
        producer[static_cast<size_t>(op.op.output)] = p;
        continue;
      }
      LowerBatchNorm(op, &rewritten);
      producer.resize(raw_.tensors.size(), -1);
      producer[static_cast<size_t>(rewritten[rewritten.size() - 2].op.output)] =
          static_cast<int>(rewritten.size() - 2);
      producer[static_cast<size_t>(op.op.output)] = static_cast<int>(rewritten.size() - 1);
      continue;
    }
    if (op.raw_kind != RawOpKind::kCanonical) {
      return absl::InternalError(absl::StrCat("canonicalize: unexpected raw op '", op.op.name, "'"));
    }
    producer.resize(raw_.tensors.size(), -1);
    producer[static_cast<size_t>(op.op.output)] = static_cast<int>(rewritten.size());
    rewritten.push_back(std::move(op));
  }
  raw_.ops = std::move(rewritten);
  return absl::OkStatus();
}

void Canonicalizer::FuseActivations() {
  const std::vector<int> consumers = ConsumerCounts();
  std::vector<int> producer(raw_.tensors.size(), -1);
  std::vector<RawOp> fused;
  fused.reserve(raw_.ops.size());
  for (RawOp& op : raw_.ops) {
    if (op.op.kind == OpKind::kActivation) {
      const TensorId in = op.op.inputs[0];
      const int p = producer[static_cast<size_t>(in)];
      if (p >= 0 && consumers[static_cast<size_t>(in)] == 1 && !IsGraphOutput(in)) {
        Op& target = fused[static_cast<size_t>(p)].op;
        std::optional<Activation> combined;
        if (AcceptsFusedActivation(target.kind) &&
            target.activation.kind == ActivationKind::kNone) {
          combined = op.op.activation;
        } else if (AcceptsFusedActivation(target.kind) || target.kind == OpKind::kActivation) {
          combined = ComposeClamps(target.activation, op.op.activation);
        }
        if (combined.has_value()) {
          target.activation = *combined;
          target.output = op.op.output;
          producer[static_cast<size_t>(op.op.output)] = p;
          continue;
        }
      }
    }
    producer[static_cast<size_t>(op.op.output)] = static_cast<int>(fused.size());
    fused.push_back(std::move(op));
  }
  raw_.ops = std::move(fused);
}

absl::StatusOr<Graph> Canonicalizer::Compact() {
  // Liveness, backwards from the graph outputs.
  std::vector<bool> live_tensor(raw_.tensors.size(), false);
  for (const GraphIO& io : raw_.outputs) live_tensor[static_cast<size_t>(io.tensor)] = true;
  std::vector<bool> live_op(raw_.ops.size(), false);
  for (size_t i = raw_.ops.size(); i-- > 0;) {
    const Op& op = raw_.ops[i].op;
    if (!live_tensor[static_cast<size_t>(op.output)]) continue;
    live_op[i] = true;
    for (TensorId t : op.inputs) live_tensor[static_cast<size_t>(t)] = true;
  }
  for (const GraphIO& io : raw_.inputs) live_tensor[static_cast<size_t>(io.tensor)] = true;

  Graph g;
  g.name = raw_.name;
  g.has_weights = raw_.has_weights;
  std::vector<TensorId> tensor_map(raw_.tensors.size(), kInvalidId);
  std::vector<ConstantId> constant_map(raw_.constants.size(), kInvalidId);
  auto map_constant = [&](ConstantId c) -> ConstantId {
    if (c == kInvalidId) return c;
    ConstantId& mapped = constant_map[static_cast<size_t>(c)];
    if (mapped == kInvalidId) {
      mapped = static_cast<ConstantId>(g.constants.size());
      g.constants.push_back(std::move(raw_.constants[static_cast<size_t>(c)]));
    }
    return mapped;
  };
  auto map_tensor = [&](TensorId t) -> TensorId {
    TensorId& mapped = tensor_map[static_cast<size_t>(t)];
    if (mapped == kInvalidId) {
      mapped = static_cast<TensorId>(g.tensors.size());
      Tensor tensor = raw_.tensors[static_cast<size_t>(t)];
      tensor.producer = kInvalidId;
      tensor.constant = map_constant(tensor.constant);
      g.tensors.push_back(std::move(tensor));
    }
    return mapped;
  };
  for (GraphIO io : raw_.inputs) {
    io.tensor = map_tensor(io.tensor);
    g.inputs.push_back(std::move(io));
  }
  for (size_t i = 0; i < raw_.ops.size(); ++i) {
    if (!live_op[i]) continue;
    Op op = std::move(raw_.ops[i].op);
    const auto id = static_cast<OpId>(g.ops.size());
    for (TensorId& t : op.inputs) {
      t = map_tensor(t);
      const Tensor& tensor = g.tensors[static_cast<size_t>(t)];
      if (tensor.constant == kInvalidId && tensor.producer == kInvalidId) {
        bool is_input = false;
        for (const GraphIO& io : g.inputs) is_input = is_input || io.tensor == t;
        if (!is_input) {
          return absl::InternalError(absl::StrCat("canonicalize: op '", op.name,
                                                  "' reads tensor '", tensor.name,
                                                  "' before it is produced"));
        }
      }
    }
    op.output = map_tensor(op.output);
    g.tensors[static_cast<size_t>(op.output)].producer = id;
    if (auto* conv = std::get_if<ConvAttrs>(&op.attrs)) {
      conv->filter = map_constant(conv->filter);
      conv->bias = map_constant(conv->bias);
    } else if (auto* fc = std::get_if<FullyConnectedAttrs>(&op.attrs)) {
      fc->weight = map_constant(fc->weight);
      fc->bias = map_constant(fc->bias);
    } else if (auto* ln = std::get_if<LayerNormAttrs>(&op.attrs)) {
      ln->scale = map_constant(ln->scale);
      ln->bias = map_constant(ln->bias);
    }
    g.ops.push_back(std::move(op));
  }
  for (GraphIO io : raw_.outputs) {
    io.tensor = map_tensor(io.tensor);
    g.outputs.push_back(std::move(io));
  }
  return g;
}

}  // namespace

bool AcceptsFusedActivation(OpKind kind) {
  switch (kind) {
    case OpKind::kConv2d:
    case OpKind::kConvTranspose2d:
    case OpKind::kFullyConnected:
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
      return true;
    default:
      return false;
  }
}

absl::StatusOr<Graph> Canonicalize(RawGraph raw) {
  return Canonicalizer(std::move(raw)).Run();
}

}  // namespace psched::model
