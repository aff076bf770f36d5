#include "model/fuse_patterns.h"

#include <cmath>
#include <initializer_list>
#include <optional>
#include <unordered_set>
#include <utility>
#include <variant>
#include <vector>

namespace psched::model {
namespace {

class PatternFuser {
 public:
  explicit PatternFuser(RawGraph& g) : g_(g) {
    producer_.assign(g.tensors.size(), -1);
    readers_.resize(g.tensors.size());
    for (size_t i = 0; i < g.ops.size(); ++i) {
      producer_[static_cast<size_t>(g.ops[i].op.output)] = static_cast<int>(i);
      for (TensorId t : g.ops[i].op.inputs)
        readers_[static_cast<size_t>(t)].push_back(static_cast<int>(i));
    }
    for (const GraphIO& io : g.outputs) {
      if (io.tensor >= 0) output_.insert(io.tensor);
    }
    dropped_.assign(g.ops.size(), false);
  }

  int Run() {
    int fused = 0;
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      if (dropped_[i]) continue;
      const int op = static_cast<int>(i);
      fused += (FuseGatedActivation(op) || FuseGelu(op) || FuseLayerNorm(op)) ? 1 : 0;
    }
    std::vector<RawOp> kept;
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      if (!dropped_[i]) kept.push_back(std::move(g_.ops[i]));
    }
    g_.ops = std::move(kept);
    for (size_t i = 0; i < g_.ops.size(); ++i) {
      g_.tensors[static_cast<size_t>(g_.ops[i].op.output)].producer = static_cast<OpId>(i);
    }
    return fused;
  }

 private:
  Op& At(int op) { return g_.ops[static_cast<size_t>(op)].op; }

  // The canonical op producing `t` when it is `kind` with no fused activation; -1 otherwise.
  int Producer(TensorId t, OpKind kind) {
    const int p = producer_[static_cast<size_t>(t)];
    if (p < 0 || dropped_[static_cast<size_t>(p)]) return -1;
    const RawOp& raw = g_.ops[static_cast<size_t>(p)];
    if (raw.raw_kind != RawOpKind::kCanonical || raw.op.kind != kind) return -1;
    if (kind != OpKind::kActivation && raw.op.activation.kind != ActivationKind::kNone) return -1;
    return p;
  }
  // The only reader of `t` when `t` is inner to a pattern (one reader, not a graph output) and
  // that reader is a canonical `kind` op without a fused activation; -1 otherwise.
  int OnlyReader(TensorId t, OpKind kind) {
    const auto& r = readers_[static_cast<size_t>(t)];
    if (r.size() != 1 || output_.count(t) != 0) return -1;
    const RawOp& raw = g_.ops[static_cast<size_t>(r[0])];
    if (raw.raw_kind != RawOpKind::kCanonical || raw.op.kind != kind) return -1;
    if (kind != OpKind::kActivation && raw.op.activation.kind != ActivationKind::kNone) return -1;
    return r[0];
  }
  bool Inner(TensorId t, size_t readers) const {
    return readers_[static_cast<size_t>(t)].size() == readers && output_.count(t) == 0;
  }
  // The value of a constant tensor whose elements are all equal.
  std::optional<float> Scalar(TensorId t) const {
    const Tensor& tensor = g_.tensors[static_cast<size_t>(t)];
    if (tensor.constant == kInvalidId) return std::nullopt;
    const std::vector<float>& d = g_.constants[static_cast<size_t>(tensor.constant)].data;
    if (d.empty()) return std::nullopt;
    for (float v : d) {
      if (v != d[0]) return std::nullopt;
    }
    return d[0];
  }
  // For a binary op with one constant operand: the other operand, and the constant's tensor.
  bool SplitConstant(int op, TensorId* activation, TensorId* constant) const {
    const Op& o = g_.ops[static_cast<size_t>(op)].op;
    if (o.inputs.size() != 2) return false;
    for (int k = 0; k < 2; ++k) {
      const TensorId c = o.inputs[static_cast<size_t>(k)];
      const TensorId x = o.inputs[static_cast<size_t>(1 - k)];
      if (g_.tensors[static_cast<size_t>(c)].constant != kInvalidId &&
          g_.tensors[static_cast<size_t>(x)].constant == kInvalidId) {
        *activation = x;
        *constant = c;
        return true;
      }
    }
    return false;
  }
  bool ScalarOperand(int op, float want, float tolerance, TensorId* activation) const {
    TensorId c;
    if (!SplitConstant(op, activation, &c)) return false;
    const std::optional<float> v = Scalar(c);
    return v.has_value() && std::abs(*v - want) <= tolerance;
  }
  // `id` as a [channels] vector (a broadcast operand has dims like [1,1,C]).
  ConstantId ChannelVector(ConstantId id, int64_t channels) {
    if (g_.constants[static_cast<size_t>(id)].dims == std::vector<int64_t>{channels}) return id;
    Constant v = g_.constants[static_cast<size_t>(id)];
    v.dims = {channels};
    g_.constants.push_back(std::move(v));
    return static_cast<ConstantId>(g_.constants.size() - 1);
  }
  void Drop(std::initializer_list<int> ops) {
    for (int op : ops) dropped_[static_cast<size_t>(op)] = true;
  }
  // Turns `op` into a standalone activation of `x`.
  void MakeActivation(int op, TensorId x, Activation act) {
    Op& o = At(op);
    o.kind = OpKind::kActivation;
    o.inputs = {x};
    o.attrs = {};
    o.activation = act;
  }

  // x * sigmoid(x) and x * hard_sigmoid(x; 1/6, 1/2): `op` is the Mul.
  bool FuseGatedActivation(int op) {
    const Op& mul = At(op);
    if (mul.kind != OpKind::kMul || mul.activation.kind != ActivationKind::kNone ||
        mul.inputs.size() != 2 ||
        g_.ops[static_cast<size_t>(op)].raw_kind != RawOpKind::kCanonical) {
      return false;
    }
    for (int k = 0; k < 2; ++k) {
      const TensorId x = mul.inputs[static_cast<size_t>(k)];
      const TensorId gate = mul.inputs[static_cast<size_t>(1 - k)];
      const int p = Producer(gate, OpKind::kActivation);
      if (p < 0 || !Inner(gate, 1) || At(p).inputs[0] != x) continue;
      const Activation& a = At(p).activation;
      Activation fused;
      if (a.kind == ActivationKind::kSigmoid) {
        fused.kind = ActivationKind::kSilu;
      } else if (a.kind == ActivationKind::kHardSigmoid && std::abs(a.alpha - 1.0f / 6) < 1e-6f &&
                 std::abs(a.beta - 0.5f) < 1e-6f) {
        fused.kind = ActivationKind::kHardSwish;
      } else {
        continue;
      }
      MakeActivation(op, x, fused);
      Drop({p});
      return true;
    }
    return false;
  }

  // x * (erf(x / sqrt 2) + 1) * 0.5: `op` is the Erf.
  bool FuseGelu(int op) {
    const Op& erf = At(op);
    if (erf.kind != OpKind::kActivation || erf.activation.kind != ActivationKind::kErf)
      return false;
    TensorId x;
    int scale = Producer(erf.inputs[0], OpKind::kDiv);
    if (scale >= 0 &&
        !(ScalarOperand(scale, std::sqrt(2.0f), 1e-3f, &x) && At(scale).inputs[0] == x)) {
      scale = -1;
    }
    if (scale < 0) {
      scale = Producer(erf.inputs[0], OpKind::kMul);
      if (scale < 0 || !ScalarOperand(scale, std::sqrt(0.5f), 1e-3f, &x)) return false;
    }
    if (!Inner(erf.inputs[0], 1)) return false;
    TensorId e;
    const int plus_one = OnlyReader(erf.output, OpKind::kAdd);
    if (plus_one < 0 || !ScalarOperand(plus_one, 1.0f, 1e-6f, &e)) return false;
    const int times_x = OnlyReader(At(plus_one).output, OpKind::kMul);
    if (times_x < 0) return false;
    const std::vector<TensorId>& in = At(times_x).inputs;
    if (!((in[0] == x && in[1] == At(plus_one).output) ||
          (in[1] == x && in[0] == At(plus_one).output))) {
      return false;
    }
    const int half = OnlyReader(At(times_x).output, OpKind::kMul);
    TensorId m;
    if (half < 0 || !ScalarOperand(half, 0.5f, 1e-6f, &m)) return false;
    Activation gelu;
    gelu.kind = ActivationKind::kGelu;
    MakeActivation(half, x, gelu);
    Drop({scale, op, plus_one, times_x});
    return true;
  }

  bool MeanOverLastAxis(int op, TensorId in) const {
    const Op& o = g_.ops[static_cast<size_t>(op)].op;
    const auto* r = std::get_if<ReduceAttrs>(&o.attrs);
    const auto rank =
        static_cast<int32_t>(PhysicalDims(g_.tensors[static_cast<size_t>(in)]).size());
    return r != nullptr && r->reduce == ReduceKind::kMean &&
           r->axes == std::vector<int32_t>{rank - 1};
  }

  // The opset < 17 LayerNorm: `op` is the first ReduceMean.
  bool FuseLayerNorm(int op) {
    const Op& mean = At(op);
    if (mean.kind != OpKind::kReduce || mean.activation.kind != ActivationKind::kNone) return false;
    const TensorId x = mean.inputs[0];
    if (!MeanOverLastAxis(op, x) || !Inner(mean.output, 1)) return false;
    const int sub = readers_[static_cast<size_t>(mean.output)][0];
    if (At(sub).kind != OpKind::kSub || At(sub).activation.kind != ActivationKind::kNone ||
        At(sub).inputs != std::vector<TensorId>{x, mean.output}) {
      return false;
    }
    const TensorId d = At(sub).output;
    if (!Inner(d, 2)) return false;
    int square = -1, div = -1;
    for (int r : readers_[static_cast<size_t>(d)]) {
      const Op& o = At(r);
      if (o.kind == OpKind::kActivation && o.activation.kind == ActivationKind::kPow &&
          o.activation.alpha == 2.0f) {
        square = r;
      } else if (o.kind == OpKind::kMul && o.inputs == std::vector<TensorId>{d, d} &&
                 o.activation.kind == ActivationKind::kNone) {
        square = r;
      } else if (o.kind == OpKind::kDiv && o.inputs[0] == d &&
                 o.activation.kind == ActivationKind::kNone) {
        div = r;
      }
    }
    if (square < 0 || div < 0) return false;
    const int var = OnlyReader(At(square).output, OpKind::kReduce);
    if (var < 0 || !MeanOverLastAxis(var, d)) return false;
    const int add_eps = OnlyReader(At(var).output, OpKind::kAdd);
    TensorId v;
    if (add_eps < 0 || !ScalarOperand(add_eps, 0.0f, 1.0f, &v)) return false;
    TensorId eps_tensor;
    SplitConstant(add_eps, &v, &eps_tensor);
    const float eps = *Scalar(eps_tensor);
    if (!(eps >= 0)) return false;
    const int sqrt = OnlyReader(At(add_eps).output, OpKind::kActivation);
    if (sqrt < 0 || At(sqrt).activation.kind != ActivationKind::kSqrt ||
        !Inner(At(sqrt).output, 1) || At(div).inputs[1] != At(sqrt).output) {
      return false;
    }
    const int64_t channels = PhysicalDims(g_.tensors[static_cast<size_t>(x)]).back();
    LayerNormAttrs ln;
    ln.epsilon = eps;
    int last = div;
    std::vector<int> pattern = {op, sub, square, var, add_eps, sqrt, div};
    // * gamma and + beta, when they are per-channel constants.
    auto per_channel = [&](int o, TensorId* c) {
      TensorId a;
      if (!SplitConstant(o, &a, c)) return false;
      const Constant& k =
          g_.constants[static_cast<size_t>(g_.tensors[static_cast<size_t>(*c)].constant)];
      return a == At(last).output && static_cast<int64_t>(k.data.size()) == channels;
    };
    TensorId c;
    if (const int mul = OnlyReader(At(last).output, OpKind::kMul);
        mul >= 0 && per_channel(mul, &c)) {
      ln.scale = ChannelVector(g_.tensors[static_cast<size_t>(c)].constant, channels);
      last = mul;
      pattern.push_back(mul);
      if (const int add = OnlyReader(At(last).output, OpKind::kAdd);
          add >= 0 && per_channel(add, &c)) {
        ln.bias = ChannelVector(g_.tensors[static_cast<size_t>(c)].constant, channels);
        last = add;
        pattern.push_back(add);
      }
    }
    if (ln.scale == kInvalidId) {
      Constant ones;
      ones.name = g_.tensors[static_cast<size_t>(x)].name + "/layer_norm_scale";
      ones.dims = {channels};
      ones.data.assign(static_cast<size_t>(channels), 1.0f);
      g_.constants.push_back(std::move(ones));
      ln.scale = static_cast<ConstantId>(g_.constants.size() - 1);
    }
    Op& fused = At(last);
    fused.kind = OpKind::kLayerNorm;
    fused.inputs = {x};
    fused.attrs = ln;
    fused.activation = {};
    pattern.pop_back();
    for (int p : pattern) dropped_[static_cast<size_t>(p)] = true;
    return true;
  }

  RawGraph& g_;
  std::vector<int> producer_;
  std::vector<std::vector<int>> readers_;
  std::unordered_set<TensorId> output_;
  std::vector<bool> dropped_;
};

}  // namespace

int FusePatterns(RawGraph& graph) { return PatternFuser(graph).Run(); }

}  // namespace psched::model
