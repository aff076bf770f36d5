#include "predictor/op_config.h"

#include <algorithm>
#include <variant>

namespace psched::predictor {

using model::OpKind;
using model::Shape;

bool OpConfig::IsDepthwise() const {
  return kind == OpKind::kConv2d && groups > 1 && !inputs.empty() && inputs[0].c == groups;
}

double ActivationFlopsPerElement(model::ActivationKind kind) {
  using model::ActivationKind;
  constexpr double kExp = 10;  // a range reduction and a degree-5 polynomial
  switch (kind) {
    case ActivationKind::kNone:
      return 0;
    case ActivationKind::kRelu:
    case ActivationKind::kClip:
    case ActivationKind::kNeg:
    case ActivationKind::kAbs:
      return 1;
    case ActivationKind::kHardSigmoid:
      return 3;
    case ActivationKind::kHardSwish:
      return 4;
    case ActivationKind::kSqrt:
    case ActivationKind::kReciprocal:
      return 4;
    case ActivationKind::kExp:
    case ActivationKind::kLog:
      return kExp;
    case ActivationKind::kSigmoid:
    case ActivationKind::kTanh:
      return kExp + 2;
    case ActivationKind::kSilu:
      return kExp + 3;
    case ActivationKind::kErf:
      return kExp + 4;
    case ActivationKind::kGelu:
      return kExp + 7;
    case ActivationKind::kPow:
      return 2 * kExp;  // exp(alpha * log(x))
  }
  return 1;
}

namespace {

// A fully-connected op over rows (tokens): its input has the output's rows.
bool HasOutputRows(const OpConfig& config) {
  return !config.inputs.empty() && config.inputs[0].h == config.output.h &&
         config.inputs[0].w == config.output.w;
}

// Fills the MatMul extents a hand-made config left at zero from its three-axis view.
void DeriveMatMulDims(OpConfig& config) {
  MatMulDims& d = config.matmul;
  if (d.batch > 0 && d.m > 0 && d.n > 0 && d.k > 0 && d.lhs_batch > 0 && d.rhs_batch > 0) return;
  d = MatMulDims{1, config.output.h * config.output.w, config.output.c,
                 config.inputs.empty() ? 1 : config.inputs[0].c, 1, 1};
}

}  // namespace

void ComputeCost(OpConfig& config) {
  const double out = static_cast<double>(config.output.Elements());
  double in = 0;
  for (const Shape& s : config.inputs) in += static_cast<double>(s.Elements());
  double weights = 0;
  switch (config.kind) {
    case OpKind::kConv2d: {
      const double cin_per_group =
          config.inputs.empty() ? 1.0 : static_cast<double>(config.inputs[0].c) / config.groups;
      const double window = static_cast<double>(config.window.kernel_h) * config.window.kernel_w;
      weights = static_cast<double>(config.output.c) * window * cin_per_group;
      config.flops = 2.0 * out * window * cin_per_group;
      break;
    }
    case OpKind::kConvTranspose2d: {
      // Each input pixel scatters a window into cout / groups channels.
      const double in_pixels =
          config.inputs.empty() ? 0.0
                                : static_cast<double>(config.inputs[0].h * config.inputs[0].w);
      const double cin = config.inputs.empty() ? 1.0 : static_cast<double>(config.inputs[0].c);
      const double window = static_cast<double>(config.window.kernel_h) * config.window.kernel_w;
      weights = cin * window * static_cast<double>(config.output.c) / config.groups;
      config.flops = 2.0 * in_pixels * weights;
      break;
    }
    case OpKind::kFullyConnected:
      // Rows of a token matrix share one [out_c, in_c] weight; an input with other rows than
      // the output is read as one flattened vector.
      weights = (HasOutputRows(config) ? static_cast<double>(config.inputs[0].c) : in) *
                static_cast<double>(config.output.c);
      config.flops = 2.0 * in * static_cast<double>(config.output.c);
      break;
    case OpKind::kMatMul: {
      DeriveMatMulDims(config);
      const MatMulDims& d = config.matmul;
      const double m = static_cast<double>(d.m), n = static_cast<double>(d.n),
                   k = static_cast<double>(d.k);
      config.flops = 2.0 * static_cast<double>(d.batch) * m * n * k;
      // Both operands are read whole, computed or constant; `in` (activation inputs) would
      // miss a constant operand and count a shared one once per use.
      in = static_cast<double>(d.lhs_batch) * m * k + static_cast<double>(d.rhs_batch) * k * n;
      break;
    }
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      config.flops = out * config.window.kernel_h * config.window.kernel_w;
      break;
    case OpKind::kGlobalAvgPool:
    case OpKind::kReduce:
      config.flops = in;
      break;
    case OpKind::kLayerNorm:
      // Mean, variance, normalise, scale and shift: about 8 per element.
      weights = config.inputs.empty() ? 0.0 : 2.0 * static_cast<double>(config.inputs[0].c);
      config.flops = 8.0 * out;
      break;
    case OpKind::kSoftmax:
      // Max, subtract, exp, sum, scale.
      config.flops = out * (ActivationFlopsPerElement(model::ActivationKind::kExp) + 4.0);
      break;
    case OpKind::kActivation:
      config.flops = out * ActivationFlopsPerElement(config.activation);
      break;
    case OpKind::kDiv:
      // A vector divide issues at a quarter of the rate of an add.
      config.flops = 4.0 * out;
      break;
    case OpKind::kSlice:
      // Reads only the elements it takes.
      in = out;
      config.flops = 0;
      break;
    case OpKind::kConcat:
    case OpKind::kPad:
    case OpKind::kFlatten:
    case OpKind::kTranspose:
    case OpKind::kReshape:
      config.flops = 0;
      break;
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kResize:
      config.flops = out;
      break;
  }
  // A partial sum reads the output back before adding to it.
  const double written = config.accumulate ? 2.0 * out : out;
  config.bytes = 4.0 * (in + written + weights);
}

OpConfig WholeOpConfig(const model::Graph& graph, model::OpId id) {
  return WholeOpConfig(graph, id, model::AliasConcatInputs(graph));
}

OpConfig WholeOpConfig(const model::Graph& graph, model::OpId id,
                       const model::ConcatAliasing& aliasing) {
  const model::Op& op = graph.op(id);
  OpConfig config;
  config.kind = op.kind;
  for (model::TensorId t : graph.ActivationInputs(id))
    config.inputs.push_back(graph.tensor(t).shape);
  config.output = graph.output_shape(id);
  config.activation = op.activation.kind;
  if (const auto* conv = std::get_if<model::ConvAttrs>(&op.attrs)) {
    config.window = conv->window;
    config.groups = conv->groups;
  } else if (const auto* pool = std::get_if<model::PoolAttrs>(&op.attrs)) {
    config.window = pool->window;
  }
  config.output_pixel_stride = model::OutputPixelStride(graph, aliasing, id);
  if (op.kind == OpKind::kMatMul && op.inputs.size() == 2) {
    const std::vector<int64_t> a = model::PhysicalDims(graph.tensor(op.inputs[0]));
    const std::vector<int64_t> b = model::PhysicalDims(graph.tensor(op.inputs[1]));
    const std::vector<int64_t> out = model::PhysicalDims(graph.tensor(op.output));
    if (a.size() >= 2 && b.size() >= 2 && out.size() >= 2) {
      auto batch = [](const std::vector<int64_t>& d) {
        return model::ElementsOf(std::vector<int64_t>(d.begin(), d.end() - 2));
      };
      config.matmul = MatMulDims{batch(out), a[a.size() - 2], b.back(), a.back(),
                                 batch(a),   batch(b)};
    }
  } else if (const auto* concat = std::get_if<model::ConcatAttrs>(&op.attrs)) {
    // The importer keeps axis -1 for the concats the aliasing rule may lay out in place.
    config.concat_copies = concat->axis != -1;
  }
  ComputeCost(config);
  return config;
}

namespace {

// Output rows [begin, end) of a conv read input rows [first, last] (halo included); rows
// outside the input are padding.
void SliceRows(OpConfig& c, int64_t begin, int64_t end) {
  const model::Window2d& w = c.window;
  Shape& in = c.inputs[0];
  const int64_t first = begin * w.stride_h - w.pad_top;
  const int64_t last =
      (end - 1) * w.stride_h - w.pad_top + static_cast<int64_t>(w.kernel_h - 1) * w.dilation_h;
  const int64_t clipped_first = std::max<int64_t>(first, 0);
  const int64_t clipped_last = std::min<int64_t>(last, in.h - 1);
  c.window.pad_top = static_cast<int32_t>(clipped_first - first);
  c.window.pad_bottom = static_cast<int32_t>(last - clipped_last);
  in.h = std::max<int64_t>(clipped_last - clipped_first + 1, 1);
  c.output.h = end - begin;
}

// A MatMul subtask over `rows` rows of the flattened batch x m, described with batch x m equal
// to `rows` (as every MatMul config is): whole matrices where the count allows (a split by
// heads); else about as many GEMMs as the kernel runs (the first batch count from
// ceil(rows / m) to twice that which divides the rows), or one GEMM of all the rows. An operand
// broadcast over the batch stays one matrix.
void SliceMatMulRows(OpConfig& c, const MatMulDims& whole, int64_t rows) {
  MatMulDims& d = c.matmul;
  d.batch = 1;
  const int64_t least = (rows + whole.m - 1) / whole.m;
  for (int64_t b = least; b <= 2 * least && b <= rows; ++b) {
    if (rows % b == 0) {
      d.batch = b;
      break;
    }
  }
  d.m = rows / d.batch;
  if (whole.lhs_batch > 1) d.lhs_batch = std::min(whole.lhs_batch, d.batch);
  if (whole.rhs_batch > 1) d.rhs_batch = std::min(whole.rhs_batch, d.batch);
  c.output.h = rows;
  if (!c.inputs.empty() && whole.lhs_batch == whole.batch) c.inputs[0].h = rows;
  if (c.inputs.size() > 1) c.inputs[1].h = d.rhs_batch * whole.k;
}

// A row subtask of a row-wise op: the output's rows and those of every operand that has them
// (a broadcast operand is read whole).
void SliceOperandRows(OpConfig& c, const OpConfig& whole, int64_t rows) {
  for (Shape& in : c.inputs) {
    if (in.h == whole.output.h && in.w == whole.output.w) in.h = rows;
  }
  c.output.h = rows;
}

}  // namespace

OpConfig SubtaskConfig(const OpConfig& whole, model::SplitAxis axis, int64_t begin, int64_t end) {
  OpConfig c = whole;
  const int64_t n = end - begin;
  if (axis == model::SplitAxis::kNone || c.inputs.empty()) return c;
  switch (whole.kind) {
    case OpKind::kConv2d:
    case OpKind::kFullyConnected:
      break;
    case OpKind::kMatMul: {
      OpConfig full = whole;
      DeriveMatMulDims(full);
      c.matmul = full.matmul;
      switch (axis) {
        case model::SplitAxis::kOutputChannels:
          c.matmul.n = n;
          c.output.c = n;
          if (c.inputs.size() > 1) c.inputs[1].c = n;
          break;
        case model::SplitAxis::kInputChannels:
          c.accumulate = true;
          c.matmul.k = n;
          c.inputs[0].c = n;
          if (c.inputs.size() > 1) c.inputs[1].h = full.matmul.rhs_batch * n;
          break;
        case model::SplitAxis::kRows:
          SliceMatMulRows(c, full.matmul, n);
          break;
        default:
          break;
      }
      ComputeCost(c);
      return c;
    }
    case OpKind::kSoftmax:
    case OpKind::kLayerNorm:
    case OpKind::kActivation:
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv:
      if (axis == model::SplitAxis::kRows) SliceOperandRows(c, whole, n);
      ComputeCost(c);
      return c;
    default:
      return c;
  }
  const bool conv = whole.kind == OpKind::kConv2d;
  switch (axis) {
    case model::SplitAxis::kNone:
      return c;
    case model::SplitAxis::kOutputChannels:
      if (conv && whole.groups > 1) {
        // A slice of whole groups keeps each group's channel counts.
        const int64_t out_per_group = whole.output.c / whole.groups;
        const int64_t in_per_group = whole.inputs[0].c / whole.groups;
        c.output.c = n * out_per_group;
        c.inputs[0].c = n * in_per_group;
        c.groups = static_cast<int32_t>(n);
      } else {
        c.output.c = n;
      }
      break;
    case model::SplitAxis::kInputChannels:
      c.accumulate = true;
      if (conv || HasOutputRows(c)) {
        c.inputs[0].c = n;
      } else {
        c.inputs[0] = Shape{1, 1, n};
      }
      break;
    case model::SplitAxis::kRows:
      if (conv) {
        SliceRows(c, begin, end);
      } else {
        c.inputs[0].h = n;  // token rows of a fully-connected op
        c.output.h = n;
      }
      break;
  }
  ComputeCost(c);
  return c;
}

OpConfig SubtaskConfig(const model::Graph& graph, model::OpId id, model::SplitAxis axis,
                       int64_t begin, int64_t end) {
  return SubtaskConfig(WholeOpConfig(graph, id), axis, begin, end);
}

}  // namespace psched::predictor
