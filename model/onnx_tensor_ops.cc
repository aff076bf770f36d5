// The general tensor operators: what transformers and modern CNNs add to the classic CNN set.
// Each works on row-major tensors in ONNX order; an image in channels-last layout is converted
// by a kTranspose op first (AsRowMajor), and back before a convolution (AsChannelsLast).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {
namespace {

int64_t NormalizeAxis(int64_t axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int64_t>(rank) : axis;
}

std::vector<int64_t> StripLeadingOnes(std::vector<int64_t> d) {
  size_t i = 0;
  while (i + 1 < d.size() && d[i] == 1) ++i;
  d.erase(d.begin(), d.begin() + static_cast<std::ptrdiff_t>(i));
  return d;
}

}  // namespace

absl::StatusOr<Value> Importer::AsRowMajor(const NodeProto& node, const Value& v) {
  if (!v.channels_last) return v;
  if (auto it = row_major_of_.find(v.tensor); it != row_major_of_.end()) return it->second;
  const std::vector<int64_t>& d = v.onnx_dims;  // [1,C,H,W]
  const std::string name =
      absl::StrCat(graph_.tensors[static_cast<size_t>(v.tensor)].name, "/row_major");
  auto out = NewActivation(name, d, false);
  if (!out.ok()) return out.status();
  TransposeAttrs t;
  t.in_dims = PhysicalOf(d, true);  // [1,H,W,C]
  t.perm = {0, 3, 1, 2};
  AppendOp(node, name, RawOpKind::kCanonical, OpKind::kTranspose, {v.tensor}, *out, t);
  Value r;
  r.tensor = *out;
  r.onnx_dims = d;
  r.channels_last = false;
  row_major_of_[v.tensor] = r;
  return r;
}

absl::StatusOr<Value> Importer::AsChannelsLast(const NodeProto& node, const Value& v) {
  if (v.channels_last) return v;
  const std::vector<int64_t>& d = v.onnx_dims;
  if (d.size() != 4 || d[0] != 1) {
    return Unsupported(node, absl::StrCat("expects a [1,C,H,W] image, got ", DimsString(d)));
  }
  if (auto it = channels_last_of_.find(v.tensor); it != channels_last_of_.end()) return it->second;
  const std::string name =
      absl::StrCat(graph_.tensors[static_cast<size_t>(v.tensor)].name, "/channels_last");
  auto out = NewActivation(name, d, true);
  if (!out.ok()) return out.status();
  TransposeAttrs t;
  t.in_dims = d;
  t.perm = {0, 2, 3, 1};
  AppendOp(node, name, RawOpKind::kCanonical, OpKind::kTranspose, {v.tensor}, *out, t);
  Value r;
  r.tensor = *out;
  r.onnx_dims = d;
  r.channels_last = true;
  channels_last_of_[v.tensor] = r;
  return r;
}

absl::StatusOr<Value> Importer::AsExactRowMajor(const NodeProto& node, const Value& v) {
  auto r = AsRowMajor(node, v);
  if (!r.ok()) return r.status();
  // Identities vanish in canonicalisation, so what counts is the tensor they alias.
  TensorId root = r->tensor;
  for (OpId p = graph_.tensors[static_cast<size_t>(root)].producer;
       p != kInvalidId && graph_.ops[static_cast<size_t>(p)].raw_kind == RawOpKind::kIdentity;
       p = graph_.tensors[static_cast<size_t>(root)].producer) {
    root = graph_.ops[static_cast<size_t>(p)].op.inputs[0];
  }
  if (PhysicalDims(graph_.tensors[static_cast<size_t>(root)]) == r->onnx_dims) return r;
  if (auto it = exact_of_.find(r->tensor); it != exact_of_.end()) return it->second;
  auto exact = AddStep(node, "exact_dims", OpKind::kReshape, {r->tensor}, r->onnx_dims);
  if (!exact.ok()) return exact.status();
  exact_of_[r->tensor] = *exact;
  return *exact;
}

absl::StatusOr<Value> Importer::ImageInput(const NodeProto& node, int index) {
  auto x = ActivationInput(node, index);
  if (!x.ok()) return x.status();
  if ((*x)->onnx_dims.size() != 4) return **x;  // the caller reports the rank
  return AsChannelsLast(node, **x);
}

absl::Status Importer::ReshapeRowMajor(const NodeProto& node, const Value& x,
                                       std::vector<int64_t> out_onnx_dims) {
  auto in = AsExactRowMajor(node, x);
  if (!in.ok()) return in.status();
  const Tensor& t = graph_.tensors[static_cast<size_t>(in->tensor)];
  const bool out_cl = false;
  const std::vector<int64_t> out_phys = PhysicalOf(out_onnx_dims, out_cl);
  if (StripLeadingOnes(t.dims) == StripLeadingOnes(out_phys) &&
      t.shape == ViewOf(out_phys, out_cl)) {
    return AddOp(node, RawOpKind::kIdentity, OpKind::kReshape, {in->tensor},
                 std::move(out_onnx_dims), {}, out_cl)
        .status();
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kReshape, {in->tensor},
               std::move(out_onnx_dims), {}, out_cl)
      .status();
}

absl::Status Importer::TransposeActivation(const NodeProto& node, const Value& x,
                                           const std::vector<int64_t>& perm) {
  const std::vector<int64_t>& in = x.onnx_dims;
  std::vector<int64_t> out;
  for (int64_t p : perm) out.push_back(in[static_cast<size_t>(p)]);
  // Physical axis of each ONNX axis of the input.
  std::vector<int64_t> phys_axis(in.size());
  std::iota(phys_axis.begin(), phys_axis.end(), 0);
  if (x.channels_last) phys_axis = {0, 3, 1, 2};
  TransposeAttrs t;
  t.in_dims = PhysicalOf(in, x.channels_last);
  bool identity = true;
  for (size_t i = 0; i < perm.size(); ++i) {
    t.perm.push_back(static_cast<int32_t>(phys_axis[static_cast<size_t>(perm[i])]));
    identity = identity && t.perm.back() == static_cast<int32_t>(i);
  }
  if (identity) {
    // The data is already in the output's order (a channels-last image seen as NHWC).
    return AddOp(node, RawOpKind::kCanonical, OpKind::kReshape, {x.tensor}, out, {}, false)
        .status();
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kTranspose, {x.tensor}, out, t, false).status();
}

absl::Status Importer::SliceActivation(const NodeProto& node, int output_index, const Value& x,
                                       const std::vector<int64_t>& begin,
                                       const std::vector<int64_t>& step,
                                       const std::vector<int64_t>& sizes,
                                       std::vector<int64_t> out_onnx_dims) {
  auto in = AsExactRowMajor(node, x);
  if (!in.ok()) return in.status();
  for (int64_t s : sizes) {
    if (s < 1) return Unsupported(node, "a slice with no elements");
  }
  if (sizes == in->onnx_dims &&
      std::all_of(step.begin(), step.end(), [](int64_t s) { return s == 1; }) &&
      output_index == 0) {
    return ReshapeRowMajor(node, *in, std::move(out_onnx_dims));
  }
  SliceAttrs attrs;
  attrs.starts = begin;
  attrs.steps = step;
  attrs.sizes = sizes;
  auto out = DefineActivation(node, output_index, std::move(out_onnx_dims), false);
  if (!out.ok()) return out.status();
  AppendOp(node,
           absl::StrCat(node.name().empty() ? node.output(0) : node.name(),
                        output_index == 0 ? "" : absl::StrCat(":", output_index)),
           RawOpKind::kCanonical, OpKind::kSlice, {in->tensor}, *out, attrs);
  return absl::OkStatus();
}

absl::Status Importer::GatherActivation(const NodeProto& node, const Value& x) {
  auto indices = ConstantInput(node, 1, true);
  if (!indices.ok()) return indices.status();
  auto axis_attr = AttrInt(node, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  const std::vector<int64_t>& in = x.onnx_dims;
  const int64_t axis = NormalizeAxis(*axis_attr, in.size());
  if (axis < 0 || axis >= static_cast<int64_t>(in.size())) {
    return NodeError(node, absl::StrCat("axis ", *axis_attr, " out of range for ", DimsString(in)));
  }
  const ConstValue& idx = **indices;
  if (!idx.IsInteger() || idx.Elements() != 1 || idx.dims.size() > 1) {
    return Unsupported(node, "Gather of a computed tensor takes one constant index");
  }
  const int64_t n = in[static_cast<size_t>(axis)];
  int64_t k = idx.ints[0] < 0 ? idx.ints[0] + n : idx.ints[0];
  if (k < 0 || k >= n) {
    return NodeError(node, absl::StrCat("index ", idx.ints[0], " out of range for ", n));
  }
  std::vector<int64_t> begin(in.size(), 0), step(in.size(), 1), sizes = in;
  begin[static_cast<size_t>(axis)] = k;
  sizes[static_cast<size_t>(axis)] = 1;
  std::vector<int64_t> out = in;
  if (idx.dims.empty()) {
    out.erase(out.begin() + axis);
  } else {
    out[static_cast<size_t>(axis)] = 1;
  }
  if (out.empty()) out = {1};
  return SliceActivation(node, 0, x, begin, step, sizes, std::move(out));
}

absl::Status Importer::ConvertSplit(const NodeProto& node) {
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  auto axis_attr = AttrInt(node, "axis", 0);
  if (!axis_attr.ok()) return axis_attr.status();
  const int64_t axis = NormalizeAxis(*axis_attr, in.size());
  if (axis < 0 || axis >= static_cast<int64_t>(in.size())) {
    return NodeError(node, absl::StrCat("axis ", *axis_attr, " out of range for ", DimsString(in)));
  }
  std::vector<int64_t> split;
  if (opset_ >= 13 && HasInput(node, 1)) {
    auto s = ConstantInput(node, 1, true);
    if (!s.ok()) return s.status();
    if (!(*s)->IsInteger()) return NodeError(node, "split sizes must be integers");
    split = (*s)->ints;
  } else if (opset_ < 13) {
    auto s = AttrInts(node, "split", {});
    if (!s.ok()) return s.status();
    split = *s;
  }
  const int64_t dim = in[static_cast<size_t>(axis)];
  const int outputs = node.output_size();
  if (split.empty()) {
    if (outputs < 1 || dim % outputs != 0) {
      return NodeError(node, absl::StrCat("cannot split ", dim, " into ", outputs, " equal parts"));
    }
    split.assign(static_cast<size_t>(outputs), dim / outputs);
  }
  if (static_cast<int>(split.size()) != outputs ||
      std::accumulate(split.begin(), split.end(), int64_t{0}) != dim) {
    return NodeError(
        node, absl::StrCat("split ", DimsString(split), " does not cover axis ", *axis_attr, " of ",
                           DimsString(in), " in ", outputs, " outputs"));
  }
  int64_t offset = 0;
  for (int i = 0; i < outputs; ++i) {
    std::vector<int64_t> begin(in.size(), 0), step(in.size(), 1), sizes = in;
    begin[static_cast<size_t>(axis)] = offset;
    sizes[static_cast<size_t>(axis)] = split[static_cast<size_t>(i)];
    offset += split[static_cast<size_t>(i)];
    if (node.output(i).empty()) continue;
    if (absl::Status s = SliceActivation(node, i, **x, begin, step, sizes, sizes); !s.ok()) {
      return s;
    }
  }
  return absl::OkStatus();
}

absl::Status Importer::ConcatGeneral(const NodeProto& node, const std::vector<const Value*>& inputs,
                                     int64_t axis) {
  const std::vector<int64_t>* first = nullptr;
  for (const Value* v : inputs) {
    if (!v->is_constant()) first = &v->onnx_dims;
  }
  const size_t rank = first->size();
  std::vector<int64_t> out = *first;
  out[static_cast<size_t>(axis)] = 0;
  std::vector<TensorId> ids;
  bool any_constant = false;
  for (const Value* v : inputs) {
    std::vector<int64_t> d;
    if (v->is_constant()) {
      const ConstValue& c = *v->constant;
      if (!c.IsFloat() || c.dims.size() != rank) {
        return NodeError(node, absl::StrCat("constant input '", c.name, "' ", DimsString(c.dims),
                                            " must be a float32 tensor of rank ", rank));
      }
      d = c.dims;
      ids.push_back(RowMajorConstant(c, rank));
      any_constant = true;
    } else {
      auto r = AsExactRowMajor(node, *v);
      if (!r.ok()) return r.status();
      d = r->onnx_dims;
      ids.push_back(r->tensor);
    }
    if (d.size() != rank)
      return NodeError(node, "inconsistent shapes: inputs have different ranks");
    out[static_cast<size_t>(axis)] += d[static_cast<size_t>(axis)];
    d[static_cast<size_t>(axis)] = (*first)[static_cast<size_t>(axis)];
    if (d != *first) {
      return NodeError(node,
                       absl::StrCat("inconsistent shapes: inputs differ outside axis ", axis));
    }
  }
  ConcatAttrs attrs;
  attrs.axis =
      (axis == static_cast<int64_t>(rank) - 1 && !any_constant) ? -1 : static_cast<int32_t>(axis);
  return AddOp(node, RawOpKind::kCanonical, OpKind::kConcat, std::move(ids), std::move(out), attrs,
               false)
      .status();
}

absl::Status Importer::BinaryOp(const NodeProto& node, OpKind kind, const Value& a,
                                const Value& b) {
  if (!a.is_constant() && !b.is_constant()) {
    std::vector<int64_t> out;
    if (!Broadcast(a.onnx_dims, b.onnx_dims, &out)) {
      return NodeError(node, absl::StrCat("inconsistent shapes: operands ", DimsString(a.onnx_dims),
                                          " and ", DimsString(b.onnx_dims), " do not broadcast"));
    }
    if (a.channels_last && b.channels_last) {
      return AddOp(node, RawOpKind::kCanonical, kind, {a.tensor, b.tensor}, out, {}, true).status();
    }
    auto ra = AsRowMajor(node, a);
    if (!ra.ok()) return ra.status();
    auto rb = AsRowMajor(node, b);
    if (!rb.ok()) return rb.status();
    return AddOp(node, RawOpKind::kCanonical, kind, {ra->tensor, rb->tensor}, out, {}, false)
        .status();
  }
  const Value& act = a.is_constant() ? b : a;
  const ConstValue& c = a.is_constant() ? *a.constant : *b.constant;
  if (!c.IsFloat()) {
    return NodeError(node, absl::StrCat("constant operand '", c.name, "' must be float32"));
  }
  std::vector<int64_t> out;
  if (!Broadcast(act.onnx_dims, c.dims, &out) || out != act.onnx_dims) {
    return NodeError(node, absl::StrCat("constant operand '", c.name, "' ", DimsString(c.dims),
                                        " does not broadcast onto ", DimsString(act.onnx_dims)));
  }
  Value x = act;
  TensorId constant;
  // [1,K] rows keep the classic channel-vector operand; [N,K] with N > 1 is row-major.
  if (act.channels_last || (act.onnx_dims.size() == 2 && act.onnx_dims[0] == 1)) {
    constant = ConstantOperand(c, act.onnx_dims);
  } else {
    constant = RowMajorConstant(c, act.onnx_dims.size());
  }
  std::vector<TensorId> inputs = a.is_constant() ? std::vector<TensorId>{constant, x.tensor}
                                                 : std::vector<TensorId>{x.tensor, constant};
  return AddOp(node, RawOpKind::kCanonical, kind, std::move(inputs), act.onnx_dims, {},
               x.channels_last)
      .status();
}

absl::Status Importer::MatMulOfActivations(const NodeProto& node, const Value& a, const Value& b) {
  const std::vector<int64_t>& da = a.is_constant() ? a.constant->dims : a.onnx_dims;
  const std::vector<int64_t>& db = b.is_constant() ? b.constant->dims : b.onnx_dims;
  if (da.size() < 2 || db.size() < 2) {
    return Unsupported(node, absl::StrCat("MatMul of ", DimsString(da), " and ", DimsString(db),
                                          "; both operands need rank >= 2"));
  }
  if (da.back() != db[db.size() - 2]) {
    return NodeError(node, absl::StrCat("inconsistent shapes: ", DimsString(da), " x ",
                                        DimsString(db), " do not multiply"));
  }
  std::vector<int64_t> batch;
  if (!Broadcast(std::vector<int64_t>(da.begin(), da.end() - 2),
                 std::vector<int64_t>(db.begin(), db.end() - 2), &batch)) {
    return NodeError(node, absl::StrCat("inconsistent shapes: batch dims of ", DimsString(da),
                                        " and ", DimsString(db), " do not broadcast"));
  }
  std::vector<TensorId> ids;
  for (const Value* v : {&a, &b}) {
    if (v->is_constant()) {
      if (!v->constant->IsFloat()) return NodeError(node, "constant operand must be float32");
      ids.push_back(RowMajorConstant(*v->constant, v->constant->dims.size()));
    } else {
      auto r = AsRowMajor(node, *v);
      if (!r.ok()) return r.status();
      ids.push_back(r->tensor);
    }
  }
  std::vector<int64_t> out = batch;
  out.push_back(da[da.size() - 2]);
  out.push_back(db.back());
  return AddOp(node, RawOpKind::kCanonical, OpKind::kMatMul, std::move(ids), std::move(out), {},
               false)
      .status();
}

absl::Status Importer::FullyConnectedRows(const NodeProto& node, const Value& x,
                                          const ConstValue& weight, bool trans_b, float alpha,
                                          const ConstValue* bias, float beta) {
  auto in = AsRowMajor(node, x);
  if (!in.ok()) return in.status();
  const std::vector<int64_t>& d = in->onnx_dims;
  if (weight.dims.size() != 2 || weight.dtype != TensorProto::FLOAT) {
    return NodeError(node, absl::StrCat("B '", weight.name, "' must be a float32 matrix, got ",
                                        DimsString(weight.dims)));
  }
  const int64_t k = trans_b ? weight.dims[1] : weight.dims[0];
  const int64_t n = trans_b ? weight.dims[0] : weight.dims[1];
  if (k != d.back()) {
    return NodeError(node, absl::StrCat("inconsistent shapes: A ", DimsString(d), " and B ",
                                        DimsString(weight.dims), (trans_b ? " (transB)" : ""),
                                        " do not multiply"));
  }
  FullyConnectedAttrs attrs;
  attrs.weight = AddConstant(
      absl::StrCat(weight.name, "|fc", trans_b, "|", alpha), weight.name, {n, k}, weight.has_data,
      [&] {
        std::vector<float> out(static_cast<size_t>(n * k));
        for (int64_t o = 0; o < n; ++o)
          for (int64_t i = 0; i < k; ++i)
            out[static_cast<size_t>(o * k + i)] =
                alpha * weight.floats[static_cast<size_t>(trans_b ? o * k + i : i * n + o)];
        return out;
      });
  if (bias != nullptr) {
    const int64_t count = bias->Elements();
    if (bias->dtype != TensorProto::FLOAT || (count != n && count != 1)) {
      return NodeError(node, absl::StrCat("bias '", bias->name, "' must be float32 [", n,
                                          "] or a scalar, got ", DimsString(bias->dims)));
    }
    attrs.bias = AddConstant(absl::StrCat(bias->name, "|bias", n, "|", beta), bias->name, {n},
                             bias->has_data, [&] {
                               std::vector<float> out(static_cast<size_t>(n));
                               for (int64_t o = 0; o < n; ++o)
                                 out[static_cast<size_t>(o)] =
                                     beta * bias->floats[static_cast<size_t>(count == 1 ? 0 : o)];
                               return out;
                             });
  }
  std::vector<int64_t> out = d;
  out.back() = n;
  return AddOp(node, RawOpKind::kCanonical, OpKind::kFullyConnected, {in->tensor}, std::move(out),
               attrs, false)
      .status();
}

absl::Status Importer::ConvertLayerNorm(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  auto in = AsRowMajor(node, **x);
  if (!in.ok()) return in.status();
  const std::vector<int64_t>& d = in->onnx_dims;
  auto axis = AttrInt(node, "axis", -1);
  auto epsilon = AttrFloat(node, "epsilon", 1e-5f);
  auto stash = AttrInt(node, "stash_type", 1);
  for (const absl::Status& s : {axis.status(), epsilon.status(), stash.status()}) {
    if (!s.ok()) return s;
  }
  if (NormalizeAxis(*axis, d.size()) != static_cast<int64_t>(d.size()) - 1) {
    return Unsupported(node, absl::StrCat("LayerNormalization over axis ", *axis, " of ",
                                          DimsString(d), "; only the last axis is supported"));
  }
  if (*epsilon < 0) return NodeError(node, "epsilon must not be negative");
  LayerNormAttrs attrs;
  attrs.epsilon = *epsilon;
  const int64_t n = d.back();
  for (int i = 1; i <= 2; ++i) {
    if (!HasInput(node, i)) continue;
    auto c = ConstantInput(node, i, false);
    if (!c.ok()) return c.status();
    if ((*c)->Elements() != n || (*c)->dtype != TensorProto::FLOAT) {
      return NodeError(
          node, absl::StrCat(i == 1 ? "scale '" : "bias '", (*c)->name, "' must be float32 [", n,
                             "], got ", DimsString((*c)->dims)));
    }
    (i == 1 ? attrs.scale : attrs.bias) = VectorConstant(**c, n);
  }
  if (attrs.scale == kInvalidId) return NodeError(node, "scale input is missing");
  return AddOp(node, RawOpKind::kCanonical, OpKind::kLayerNorm, {in->tensor}, d, attrs, false)
      .status();
}

absl::Status Importer::ConvertReduce(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  const std::string& type = node.op_type();
  // ReduceL2 is lowered to sqrt(sum(x * x)).
  const bool l2 = type == "ReduceL2";
  const ReduceKind kind = type == "ReduceMean"        ? ReduceKind::kMean
                          : type == "ReduceSum" || l2 ? ReduceKind::kSum
                                                      : ReduceKind::kMax;
  auto keepdims = AttrInt(node, "keepdims", 1);
  auto noop = AttrInt(node, "noop_with_empty_axes", 0);
  if (!keepdims.ok()) return keepdims.status();
  if (!noop.ok()) return noop.status();
  auto given_axes = Axes(node, type == "ReduceSum" ? opset_ >= 13 : opset_ >= 18);
  if (!given_axes.ok()) return given_axes.status();
  std::vector<int64_t> axes = *std::move(given_axes);
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (axes.empty()) {
    if (*noop != 0) {
      return AddOp(node, RawOpKind::kIdentity, OpKind::kReshape, {(*x)->tensor}, in, {},
                   (*x)->channels_last)
          .status();
    }
    axes.resize(in.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  std::vector<bool> reduced(in.size(), false);
  for (int64_t a : axes) {
    const int64_t axis = NormalizeAxis(a, in.size());
    if (axis < 0 || axis >= static_cast<int64_t>(in.size()) || reduced[static_cast<size_t>(axis)]) {
      return NodeError(node,
                       absl::StrCat("invalid axes ", DimsString(axes), " for ", DimsString(in)));
    }
    reduced[static_cast<size_t>(axis)] = true;
  }
  std::vector<int64_t> out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!reduced[i]) {
      out.push_back(in[i]);
    } else if (*keepdims != 0) {
      out.push_back(1);
    }
  }
  if (out.empty()) out = {1};
  // The mean over H and W of an image is a global average pool.
  if (kind == ReduceKind::kMean && (*x)->channels_last && !reduced[0] && !reduced[1] &&
      reduced[2] && reduced[3]) {
    return AddOp(node, RawOpKind::kCanonical, OpKind::kGlobalAvgPool, {(*x)->tensor}, out, {},
                 out.size() == 4)
        .status();
  }
  auto r = AsExactRowMajor(node, **x);
  if (!r.ok()) return r.status();
  ReduceAttrs attrs;
  attrs.reduce = kind;
  for (size_t i = 0; i < in.size(); ++i) {
    if (reduced[i]) attrs.axes.push_back(static_cast<int32_t>(i));
  }
  if (!l2) {
    return AddOp(node, RawOpKind::kCanonical, OpKind::kReduce, {r->tensor}, out, attrs, false)
        .status();
  }
  auto squares = AddStep(node, "squares", OpKind::kMul, {r->tensor, r->tensor}, in);
  if (!squares.ok()) return squares.status();
  auto sum = AddStep(node, "sum_of_squares", OpKind::kReduce, {squares->tensor}, out, attrs);
  if (!sum.ok()) return sum.status();
  auto root =
      AddOp(node, RawOpKind::kCanonical, OpKind::kActivation, {sum->tensor}, out, {}, false);
  if (!root.ok()) return root.status();
  graph_.ops.back().op.activation.kind = ActivationKind::kSqrt;
  return absl::OkStatus();
}

absl::Status Importer::ConvertUnary(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  static const std::unordered_map<std::string_view, ActivationKind> kKinds = {
      {"Tanh", ActivationKind::kTanh}, {"Erf", ActivationKind::kErf},
      {"Exp", ActivationKind::kExp},   {"Log", ActivationKind::kLog},
      {"Sqrt", ActivationKind::kSqrt}, {"Reciprocal", ActivationKind::kReciprocal},
      {"Neg", ActivationKind::kNeg},   {"Abs", ActivationKind::kAbs},
      {"Gelu", ActivationKind::kGelu}};
  auto it = kKinds.find(node.op_type());
  if (it == kKinds.end()) return Unsupported(node, "unknown unary operator");
  if (node.op_type() == "Gelu") {
    auto approx = AttrString(node, "approximate", "none");
    if (!approx.ok()) return approx.status();
    if (*approx != "none") return Unsupported(node, "Gelu with approximate='tanh'");
  }
  auto out = AddOp(node, RawOpKind::kCanonical, OpKind::kActivation, {(*x)->tensor},
                   (*x)->onnx_dims, {}, (*x)->channels_last);
  if (!out.ok()) return out.status();
  graph_.ops.back().op.activation.kind = it->second;
  return absl::OkStatus();
}

absl::Status Importer::ConvertPow(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  auto e = InputValue(node, 1);
  if (!e.ok()) return e.status();
  if ((*x)->is_constant() && (*e)->is_constant()) {
    return Unsupported(node, "Pow of two constants");
  }
  if ((*x)->is_constant() || !(*e)->is_constant() || (*e)->constant->Elements() != 1 ||
      !(*e)->constant->has_data) {
    return Unsupported(node, "Pow is supported with a constant scalar exponent");
  }
  auto out = AddOp(node, RawOpKind::kCanonical, OpKind::kActivation, {(*x)->tensor},
                   (*x)->onnx_dims, {}, (*x)->channels_last);
  if (!out.ok()) return out.status();
  Activation& act = graph_.ops.back().op.activation;
  act.kind = ActivationKind::kPow;
  act.alpha = static_cast<float>((*e)->constant->At(0));
  return absl::OkStatus();
}

absl::Status Importer::ConvertExpand(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  auto shape = ConstantInput(node, 1, true);
  if (!shape.ok()) return shape.status();
  if (!(*shape)->IsInteger()) return NodeError(node, "the shape input must be integers");
  const std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  std::vector<int64_t> out;
  if (!Broadcast(in, (*shape)->ints, &out)) {
    return NodeError(
        node, absl::StrCat("cannot expand ", DimsString(in), " to ", DimsString((*shape)->ints)));
  }
  if ((*x)->is_constant()) {
    const ConstValue& c = *(*x)->constant;
    if (!c.has_data) return NodeError(node, "Expand of a constant whose data is absent");
    if (absl::Status s = CheckDims(NodeLabel(node) + " output", out); !s.ok()) return s;
    ConstValue r;
    r.dtype = c.dtype;
    r.has_data = true;
    r.dims = out;
    const int64_t total = ElementsOf(out);
    std::vector<int64_t> padded(out.size() - c.dims.size(), 1);
    padded.insert(padded.end(), c.dims.begin(), c.dims.end());
    for (int64_t flat = 0; flat < total; ++flat) {
      int64_t rem = flat, src = 0, stride = 1;
      std::vector<int64_t> index(out.size());
      for (size_t a = out.size(); a-- > 0;) {
        index[a] = rem % out[a];
        rem /= out[a];
      }
      for (size_t a = out.size(); a-- > 0;) {
        src += (padded[a] == 1 ? 0 : index[a]) * stride;
        stride *= padded[a];
      }
      if (c.IsFloat()) {
        r.floats.push_back(c.floats[static_cast<size_t>(src)]);
      } else {
        r.ints.push_back(c.ints[static_cast<size_t>(src)]);
      }
    }
    return DefineConstant(node, 0, std::move(r));
  }
  if (ElementsOf(out) == ElementsOf(in)) return ReshapeRowMajor(node, **x, out);
  // A real broadcast: x + zeros of the output's shape, which the broadcasting add kernels
  // already run.
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", out); !s.ok()) return s;
  auto rx = AsRowMajor(node, **x);
  if (!rx.ok()) return rx.status();
  ConstValue zeros;
  zeros.name = node.output(0) + "/zeros";
  zeros.dtype = TensorProto::FLOAT;
  zeros.has_data = true;
  zeros.dims = out;
  zeros.floats.assign(static_cast<size_t>(ElementsOf(out)), 0.0f);
  const TensorId z = RowMajorConstant(zeros, out.size());
  return AddOp(node, RawOpKind::kCanonical, OpKind::kAdd, {rx->tensor, z}, out, {}, false).status();
}

}  // namespace psched::model::onnx_importer
