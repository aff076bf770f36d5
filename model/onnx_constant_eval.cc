// Nodes whose inputs are all constants, evaluated at import. Exporters leave such sub-graphs
// in models with static shapes: attention masks built with Equal/Where, Swin's shifted-window
// masks (Range, Mod, ScatterND), Swin V2's relative-position MLP over a constant table
// (MatMul), and shape arithmetic. Folding them leaves only the computation on activations.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {
namespace {

enum class Family {
  kArithmetic,
  kCompare,
  kLogical,
  kUnary,
  kWhere,
  kRange,
  kMatMul,
  kScatterND,
  kConcat,
  kClip
};

const std::unordered_map<std::string_view, Family>& FoldableOps() {
  static const auto* ops =
      new std::unordered_map<std::string_view, Family>{{"Add", Family::kArithmetic},
                                                       {"Sub", Family::kArithmetic},
                                                       {"Mul", Family::kArithmetic},
                                                       {"Div", Family::kArithmetic},
                                                       {"Mod", Family::kArithmetic},
                                                       {"Pow", Family::kArithmetic},
                                                       {"Min", Family::kArithmetic},
                                                       {"Max", Family::kArithmetic},
                                                       {"Equal", Family::kCompare},
                                                       {"Less", Family::kCompare},
                                                       {"Greater", Family::kCompare},
                                                       {"LessOrEqual", Family::kCompare},
                                                       {"GreaterOrEqual", Family::kCompare},
                                                       {"And", Family::kLogical},
                                                       {"Or", Family::kLogical},
                                                       {"Xor", Family::kLogical},
                                                       {"Not", Family::kUnary},
                                                       {"Neg", Family::kUnary},
                                                       {"Abs", Family::kUnary},
                                                       {"Sqrt", Family::kUnary},
                                                       {"Exp", Family::kUnary},
                                                       {"Log", Family::kUnary},
                                                       {"Reciprocal", Family::kUnary},
                                                       {"Floor", Family::kUnary},
                                                       {"Ceil", Family::kUnary},
                                                       {"Relu", Family::kUnary},
                                                       {"Sigmoid", Family::kUnary},
                                                       {"Tanh", Family::kUnary},
                                                       {"Erf", Family::kUnary},
                                                       {"Sign", Family::kUnary},
                                                       {"Where", Family::kWhere},
                                                       {"Range", Family::kRange},
                                                       {"MatMul", Family::kMatMul},
                                                       {"ScatterND", Family::kScatterND},
                                                       {"Concat", Family::kConcat},
                                                       {"Clip", Family::kClip}};
  return *ops;
}

// For each element of `out_dims` in row-major order, the flat index of the element of an
// operand of `dims` that numpy broadcasting reads.
std::vector<int64_t> BroadcastSources(const std::vector<int64_t>& dims,
                                      const std::vector<int64_t>& out_dims) {
  const size_t rank = out_dims.size();
  std::vector<int64_t> stride(rank, 0);
  int64_t s = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    const size_t axis = rank - dims.size() + i;
    stride[axis] = dims[i] == 1 ? 0 : s;
    s *= dims[i];
  }
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  std::vector<int64_t> sources;
  sources.reserve(static_cast<size_t>(total));
  std::vector<int64_t> index(rank, 0);
  int64_t flat = 0;
  for (int64_t i = 0; i < total; ++i) {
    sources.push_back(flat);
    for (size_t a = rank; a-- > 0;) {
      flat += stride[a];
      if (++index[a] < out_dims[a]) break;
      flat -= stride[a] * out_dims[a];
      index[a] = 0;
    }
  }
  return sources;
}

ConstValue Empty(int32_t dtype, std::vector<int64_t> dims) {
  ConstValue out;
  out.dtype = dtype;
  out.has_data = true;
  out.dims = std::move(dims);
  return out;
}

void Push(ConstValue* out, double v) {
  if (out->IsFloat()) {
    out->floats.push_back(static_cast<float>(v));
  } else {
    out->ints.push_back(static_cast<int64_t>(v));
  }
}

// out gets element `i` of `c`, exactly (int64 values are not routed through double).
void PushFrom(ConstValue* out, const ConstValue& c, int64_t i) {
  if (out->IsFloat()) {
    out->floats.push_back(static_cast<float>(c.At(i)));
  } else if (c.IsFloat()) {
    out->ints.push_back(static_cast<int64_t>(c.At(i)));
  } else {
    out->ints.push_back(c.ints[static_cast<size_t>(i)]);
  }
}

// Integer arithmetic wraps instead of overflowing (hostile constants must not be UB).
absl::StatusOr<int64_t> IntArithmetic(std::string_view op, int64_t x, int64_t y, bool fmod) {
  const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
  if (op == "Add") return static_cast<int64_t>(ux + uy);
  if (op == "Sub") return static_cast<int64_t>(ux - uy);
  if (op == "Mul") return static_cast<int64_t>(ux * uy);
  if (op == "Min") return std::min(x, y);
  if (op == "Max") return std::max(x, y);
  if (op == "Pow") {
    if (y < 0) return absl::InvalidArgumentError("integer Pow with a negative exponent");
    uint64_t r = 1;
    for (int64_t i = 0; i < std::min<int64_t>(y, 64); ++i) r *= ux;
    return static_cast<int64_t>(r);
  }
  if (y == 0)
    return absl::InvalidArgumentError(absl::StrCat("integer ", std::string(op), " by zero"));
  if (x == INT64_MIN && y == -1) return op == "Div" ? x : 0;
  if (op == "Div") return x / y;
  const int64_t r = x % y;  // C fmod semantics: the sign of the dividend
  if (fmod || r == 0 || (r < 0) == (y < 0)) return r;
  return r + y;  // ONNX Mod with fmod=0: the sign of the divisor
}

double FloatArithmetic(std::string_view op, double x, double y) {
  if (op == "Add") return x + y;
  if (op == "Sub") return x - y;
  if (op == "Mul") return x * y;
  if (op == "Div") return x / y;
  if (op == "Pow") return std::pow(x, y);
  if (op == "Min") return std::min(x, y);
  if (op == "Max") return std::max(x, y);
  return std::fmod(x, y);  // Mod on floats requires fmod=1
}

bool Compare(std::string_view op, double x, double y) {
  if (op == "Equal") return x == y;
  if (op == "Less") return x < y;
  if (op == "Greater") return x > y;
  if (op == "LessOrEqual") return x <= y;
  return x >= y;
}

double Unary(std::string_view op, double x) {
  if (op == "Not") return x == 0 ? 1 : 0;
  if (op == "Neg") return -x;
  if (op == "Abs") return std::abs(x);
  if (op == "Sqrt") return std::sqrt(x);
  if (op == "Exp") return std::exp(x);
  if (op == "Log") return std::log(x);
  if (op == "Reciprocal") return 1.0 / x;
  if (op == "Floor") return std::floor(x);
  if (op == "Ceil") return std::ceil(x);
  if (op == "Relu") return std::max(x, 0.0);
  if (op == "Sigmoid") return 1.0 / (1.0 + std::exp(-x));
  if (op == "Tanh") return std::tanh(x);
  if (op == "Erf") return std::erf(x);
  return x > 0 ? 1 : x < 0 ? -1 : 0;  // Sign
}

}  // namespace

std::vector<std::string_view> ConstantEvaluableOps() {
  std::vector<std::string_view> ops;
  for (const auto& [op, family] : FoldableOps()) ops.push_back(op);
  return ops;
}

bool IsConstantEvaluable(std::string_view op_type) { return FoldableOps().count(op_type) != 0; }

absl::StatusOr<bool> Importer::FoldConstantNode(const NodeProto& node) {
  const auto it = FoldableOps().find(node.op_type());
  if (it == FoldableOps().end() || node.input_size() == 0) return false;
  std::vector<ConstPtr> in;
  for (int i = 0; i < node.input_size(); ++i) {
    if (!HasInput(node, i)) {
      in.push_back(nullptr);
      continue;
    }
    auto v = InputValue(node, i);
    if (!v.ok()) return v.status();
    if (!(*v)->is_constant() || !(*v)->constant->has_data) return false;
    in.push_back((*v)->constant);
  }
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto folded = [&]() -> absl::StatusOr<ConstValue> {
    const std::string_view op = node.op_type();
    switch (it->second) {
      case Family::kArithmetic:
      case Family::kCompare:
      case Family::kLogical:
        return FoldBroadcast(node, in);
      case Family::kUnary: {
        if (in.size() != 1) return NodeError(node, "expects one input");
        const ConstValue& x = *in[0];
        if (op == "Not" && x.dtype != TensorProto::BOOL) return NodeError(node, "Not needs bool");
        ConstValue out = Empty(x.dtype, x.dims);
        for (int64_t i = 0; i < x.Elements(); ++i) Push(&out, Unary(op, x.At(i)));
        return out;
      }
      case Family::kWhere:
        return FoldBroadcast(node, in);
      case Family::kRange:
        return FoldRange(node, in);
      case Family::kMatMul:
        return FoldMatMul(node, in);
      case Family::kScatterND:
        return FoldScatterND(node, in);
      case Family::kConcat:
        return FoldConcat(node, in);
      case Family::kClip: {
        // Bounds are inputs 1 and 2 (opset 11+) or attributes; absent means unbounded.
        auto lo_attr = AttrFloat(node, "min", -INFINITY);
        auto hi_attr = AttrFloat(node, "max", INFINITY);
        if (!lo_attr.ok()) return lo_attr.status();
        if (!hi_attr.ok()) return hi_attr.status();
        double lo = *lo_attr, hi = *hi_attr;
        for (size_t i = 1; i < in.size() && i < 3; ++i) {
          if (in[i] == nullptr) continue;
          if (in[i]->Elements() != 1) return NodeError(node, "min and max must be scalars");
          (i == 1 ? lo : hi) = in[i]->At(0);
        }
        const ConstValue& x = *in[0];
        ConstValue out = Empty(x.dtype, x.dims);
        for (int64_t i = 0; i < x.Elements(); ++i) Push(&out, std::min(std::max(x.At(i), lo), hi));
        return out;
      }
    }
    return Unsupported(node, "no constant evaluation");
  }();
  if (!folded.ok()) return folded.status();
  if (absl::Status s = DefineConstant(node, 0, *std::move(folded)); !s.ok()) return s;
  return true;
}

// Element-wise operators with numpy broadcasting: arithmetic, comparisons, logic and Where
// (condition, x, y).
absl::StatusOr<ConstValue> Importer::FoldBroadcast(const NodeProto& node,
                                                   const std::vector<ConstPtr>& in) {
  const std::string_view op = node.op_type();
  const bool where = op == "Where";
  const bool variadic = op == "Min" || op == "Max";
  if (where ? in.size() != 3 : (!variadic && in.size() != 2)) {
    return NodeError(node, absl::StrCat("expects ", where ? 3 : 2, " inputs"));
  }
  for (const ConstPtr& c : in) {
    if (c == nullptr) return NodeError(node, "an input is missing");
  }
  std::vector<int64_t> out_dims = in[0]->dims;
  for (size_t i = 1; i < in.size(); ++i) {
    std::vector<int64_t> next;
    if (!Broadcast(out_dims, in[i]->dims, &next)) {
      return NodeError(node, absl::StrCat("inconsistent shapes: ", DimsString(out_dims), " and ",
                                          DimsString(in[i]->dims), " do not broadcast"));
    }
    out_dims = std::move(next);
  }
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", out_dims);
      !s.ok() && !out_dims.empty()) {
    return s;
  }
  const ConstValue& a = *in[where ? 1 : 0];
  const ConstValue& b = *in[where ? 2 : 1];
  if (a.IsFloat() != b.IsFloat()) {
    return NodeError(node, absl::StrCat("operand types differ: ", DtypeName(a.dtype), " and ",
                                        DtypeName(b.dtype)));
  }
  const bool compare = FoldableOps().at(op) == Family::kCompare;
  const bool logical = FoldableOps().at(op) == Family::kLogical;
  if (logical && (a.dtype != TensorProto::BOOL || b.dtype != TensorProto::BOOL)) {
    return NodeError(node, absl::StrCat(std::string(op), " needs bool operands"));
  }
  auto fmod = AttrInt(node, "fmod", 0);
  if (!fmod.ok()) return fmod.status();
  if (op == "Mod" && a.IsFloat() && *fmod == 0) {
    return NodeError(node, "Mod of floats needs fmod=1");
  }
  ConstValue out = Empty(compare || logical ? TensorProto::BOOL : a.dtype, out_dims);
  if (variadic && in.size() == 1) {
    out = *in[0];
    return out;
  }
  std::vector<std::vector<int64_t>> sources;
  for (const ConstPtr& c : in) sources.push_back(BroadcastSources(c->dims, out_dims));
  const size_t n = sources[0].size();
  for (size_t i = 0; i < n; ++i) {
    if (where) {
      const bool cond = in[0]->At(sources[0][i]) != 0;
      PushFrom(&out, cond ? a : b, cond ? sources[1][i] : sources[2][i]);
      continue;
    }
    if (compare) {
      out.ints.push_back(Compare(op, a.At(sources[0][i]), b.At(sources[1][i])) ? 1 : 0);
    } else if (logical) {
      const bool x = a.At(sources[0][i]) != 0, y = b.At(sources[1][i]) != 0;
      out.ints.push_back(op == "And" ? (x && y) : op == "Or" ? (x || y) : (x != y));
    } else if (a.IsFloat()) {
      double r = FloatArithmetic(op, a.At(sources[0][i]), b.At(sources[1][i]));
      for (size_t k = 2; k < in.size(); ++k) r = FloatArithmetic(op, r, in[k]->At(sources[k][i]));
      out.floats.push_back(static_cast<float>(r));
    } else {
      auto r = IntArithmetic(op, a.ints[static_cast<size_t>(sources[0][i])],
                             b.ints[static_cast<size_t>(sources[1][i])], *fmod != 0);
      for (size_t k = 2; r.ok() && k < in.size(); ++k) {
        r = IntArithmetic(op, *r, in[k]->ints[static_cast<size_t>(sources[k][i])], *fmod != 0);
      }
      if (!r.ok()) return NodeError(node, r.status().message());
      out.ints.push_back(*r);
    }
  }
  return out;
}

absl::StatusOr<ConstValue> Importer::FoldRange(const NodeProto& node,
                                               const std::vector<ConstPtr>& in) {
  if (in.size() != 3 || !in[0] || !in[1] || !in[2]) return NodeError(node, "expects 3 inputs");
  for (const ConstPtr& c : in) {
    if (c->Elements() != 1) return NodeError(node, "start, limit and delta must be scalars");
  }
  const double start = in[0]->At(0), limit = in[1]->At(0), delta = in[2]->At(0);
  if (delta == 0) return NodeError(node, "delta is zero");
  const double count = std::max(std::ceil((limit - start) / delta), 0.0);
  if (!(count <= static_cast<double>(options_.max_tensor_elements))) {
    return absl::ResourceExhaustedError(absl::StrCat(NodeLabel(node),
                                                     " output has more than max_tensor_elements (",
                                                     options_.max_tensor_elements, ") elements"));
  }
  ConstValue out = Empty(in[0]->dtype, {static_cast<int64_t>(count)});
  for (int64_t i = 0; i < out.dims[0]; ++i) Push(&out, start + static_cast<double>(i) * delta);
  return out;
}

// Batched, broadcast MatMul of two float constants.
absl::StatusOr<ConstValue> Importer::FoldMatMul(const NodeProto& node,
                                                const std::vector<ConstPtr>& in) {
  if (in.size() != 2 || !in[0] || !in[1]) return NodeError(node, "expects 2 inputs");
  ConstValue a = *in[0], b = *in[1];
  if (!a.IsFloat() || !b.IsFloat()) return Unsupported(node, "MatMul of non-float constants");
  if (a.dims.size() == 1) a.dims.insert(a.dims.begin(), 1);
  if (b.dims.size() == 1) b.dims.push_back(1);
  if (a.dims.size() < 2 || b.dims.size() < 2 || a.dims.back() != b.dims[b.dims.size() - 2]) {
    return NodeError(node, absl::StrCat("inconsistent shapes: ", DimsString(in[0]->dims), " x ",
                                        DimsString(in[1]->dims), " do not multiply"));
  }
  const int64_t m = a.dims[a.dims.size() - 2], k = a.dims.back(), n = b.dims.back();
  const std::vector<int64_t> batch_a(a.dims.begin(), a.dims.end() - 2);
  const std::vector<int64_t> batch_b(b.dims.begin(), b.dims.end() - 2);
  std::vector<int64_t> batch;
  if (!Broadcast(batch_a, batch_b, &batch)) {
    return NodeError(node, "batch dims do not broadcast");
  }
  std::vector<int64_t> out_dims = batch;
  out_dims.push_back(m);
  out_dims.push_back(n);
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", out_dims); !s.ok()) return s;
  if (static_cast<double>(ElementsOf(out_dims)) * static_cast<double>(k) > 4e9) {
    return absl::ResourceExhaustedError(
        absl::StrCat(NodeLabel(node), ": folding this constant MatMul is too much work"));
  }
  const std::vector<int64_t> src_a = BroadcastSources(batch_a, batch);
  const std::vector<int64_t> src_b = BroadcastSources(batch_b, batch);
  ConstValue out = Empty(TensorProto::FLOAT, out_dims);
  out.floats.assign(static_cast<size_t>(ElementsOf(out_dims)), 0.0f);
  for (size_t p = 0; p < src_a.size(); ++p) {
    const float* pa = a.floats.data() + src_a[p] * m * k;
    const float* pb = b.floats.data() + src_b[p] * k * n;
    float* po = out.floats.data() + static_cast<int64_t>(p) * m * n;
    for (int64_t i = 0; i < m; ++i)
      for (int64_t kk = 0; kk < k; ++kk) {
        const float av = pa[i * k + kk];
        for (int64_t j = 0; j < n; ++j) po[i * n + j] += av * pb[kk * n + j];
      }
  }
  std::vector<int64_t> dims =
      in[0]->dims.size() == 1 || in[1]->dims.size() == 1 ? std::vector<int64_t>{} : out_dims;
  if (dims.empty()) {
    // A 1-D operand's axis is dropped from the result, as numpy does.
    dims = batch;
    if (in[0]->dims.size() != 1) dims.push_back(m);
    if (in[1]->dims.size() != 1) dims.push_back(n);
  }
  out.dims = std::move(dims);
  return out;
}

absl::StatusOr<ConstValue> Importer::FoldScatterND(const NodeProto& node,
                                                   const std::vector<ConstPtr>& in) {
  if (in.size() != 3 || !in[0] || !in[1] || !in[2]) return NodeError(node, "expects 3 inputs");
  auto reduction = AttrString(node, "reduction", "none");
  if (!reduction.ok()) return reduction.status();
  if (*reduction != "none") return Unsupported(node, "ScatterND with a reduction");
  ConstValue out = *in[0];
  const ConstValue& idx = *in[1];
  const ConstValue& upd = *in[2];
  if (!idx.IsInteger() || idx.dims.empty() || upd.IsFloat() != out.IsFloat()) {
    return NodeError(node, "indices must be integers and updates of the data's type");
  }
  const auto q = static_cast<int64_t>(idx.dims.back());
  const auto r = static_cast<int64_t>(out.dims.size());
  if (q < 1 || q > r) return NodeError(node, "the indices' last axis exceeds the data's rank");
  int64_t slice = 1;
  for (int64_t a = q; a < r; ++a) slice *= out.dims[static_cast<size_t>(a)];
  const int64_t updates = idx.Elements() / q;
  if (upd.Elements() != updates * slice) {
    return NodeError(node, absl::StrCat("updates ", DimsString(upd.dims), " do not match indices ",
                                        DimsString(idx.dims), " into ", DimsString(out.dims)));
  }
  for (int64_t u = 0; u < updates; ++u) {
    int64_t offset = 0;
    for (int64_t a = 0; a < q; ++a) {
      const int64_t dim = out.dims[static_cast<size_t>(a)];
      int64_t i = idx.ints[static_cast<size_t>(u * q + a)];
      if (i < 0) i += dim;
      if (i < 0 || i >= dim) {
        return NodeError(node, absl::StrCat("index ", idx.ints[static_cast<size_t>(u * q + a)],
                                            " out of range for axis ", a, " of ", dim));
      }
      offset = offset * dim + i;
    }
    for (int64_t e = 0; e < slice; ++e) {
      const auto to = static_cast<size_t>(offset * slice + e);
      const auto from = static_cast<size_t>(u * slice + e);
      if (out.IsFloat()) {
        out.floats[to] = upd.floats[from];
      } else {
        out.ints[to] = upd.ints[from];
      }
    }
  }
  return out;
}

absl::StatusOr<ConstValue> Importer::FoldConcat(const NodeProto& node,
                                                const std::vector<ConstPtr>& in) {
  auto axis_attr = AttrInt(node, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  for (const ConstPtr& c : in) {
    if (!c) return NodeError(node, "an input is missing");
  }
  const std::vector<int64_t>& first = in[0]->dims;
  const auto rank = static_cast<int64_t>(first.size());
  const int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
  if (axis < 0 || axis >= rank) {
    return NodeError(node,
                     absl::StrCat("axis ", *axis_attr, " out of range for ", DimsString(first)));
  }
  std::vector<int64_t> out_dims = first;
  out_dims[static_cast<size_t>(axis)] = 0;
  for (const ConstPtr& c : in) {
    bool same = c->dims.size() == first.size() && c->IsFloat() == in[0]->IsFloat();
    for (size_t a = 0; same && a < first.size(); ++a) {
      same = static_cast<int64_t>(a) == axis || c->dims[a] == first[a];
    }
    if (!same) {
      return NodeError(node,
                       absl::StrCat("inconsistent shapes: cannot concatenate ", DimsString(c->dims),
                                    " with ", DimsString(first), " on axis ", axis));
    }
    out_dims[static_cast<size_t>(axis)] += c->dims[static_cast<size_t>(axis)];
  }
  ConstValue out = Empty(in[0]->dtype, out_dims);
  int64_t outer = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= first[static_cast<size_t>(a)];
  for (int64_t o = 0; o < outer; ++o) {
    for (const ConstPtr& c : in) {
      const int64_t chunk = c->Elements() / std::max<int64_t>(outer, 1);
      for (int64_t e = 0; e < chunk; ++e) PushFrom(&out, *c, o * chunk + e);
    }
  }
  return out;
}

}  // namespace psched::model::onnx_importer
