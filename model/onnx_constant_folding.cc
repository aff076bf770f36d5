#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {
namespace {

// Row-major strides of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// out[i] = c[source(i)] for a constant of `out_dims`; `source` maps an output multi-index
// to the flat input index.
ConstValue Gathered(const ConstValue& c, std::vector<int64_t> out_dims,
                    const std::function<int64_t(const std::vector<int64_t>&)>& source) {
  ConstValue out;
  out.dtype = c.dtype;
  out.has_data = true;
  out.dims = std::move(out_dims);
  const int64_t n = out.Elements();
  std::vector<int64_t> index(out.dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const auto from = static_cast<size_t>(source(index));
    if (c.IsFloat()) {
      out.floats.push_back(c.floats[from]);
    } else {
      out.ints.push_back(c.ints[from]);
    }
    for (size_t a = index.size(); a-- > 0;) {
      if (++index[a] < out.dims[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

}  // namespace

bool Broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
               std::vector<int64_t>* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = std::max(da, db);
  }
  return true;
}

absl::StatusOr<ConstValue> FoldBinary(const ConstValue& a, const ConstValue& b,
                                      const std::string& op) {
  if (!a.has_data || !b.has_data) {
    return absl::InvalidArgumentError("operands of a constant expression have no data");
  }
  if (a.IsFloat() != b.IsFloat()) return absl::InvalidArgumentError("operand types differ");
  if (a.Elements() != b.Elements() && a.Elements() != 1 && b.Elements() != 1) {
    return absl::UnimplementedError(absl::StrCat("broadcast of ", DimsString(a.dims), " and ",
                                                 DimsString(b.dims), " in a constant expression"));
  }
  ConstValue out;
  out.dtype = a.dtype;
  out.has_data = true;
  out.dims = a.Elements() >= b.Elements() ? a.dims : b.dims;
  const int64_t n = std::max(a.Elements(), b.Elements());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ia = a.Elements() == 1 ? 0 : i, ib = b.Elements() == 1 ? 0 : i;
    if (a.IsFloat()) {
      const float x = a.floats[static_cast<size_t>(ia)], y = b.floats[static_cast<size_t>(ib)];
      out.floats.push_back(op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y);
    } else {
      const int64_t x = a.ints[static_cast<size_t>(ia)], y = b.ints[static_cast<size_t>(ib)];
      if (op == "Div" && y == 0) return absl::InvalidArgumentError("integer division by zero");
      // Wrap-around instead of signed-overflow UB on hostile constants.
      const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
      out.ints.push_back(op == "Add"   ? static_cast<int64_t>(ux + uy)
                         : op == "Sub" ? static_cast<int64_t>(ux - uy)
                         : op == "Mul" ? static_cast<int64_t>(ux * uy)
                                       : (x == INT64_MIN && y == -1 ? x : x / y));
    }
  }
  return out;
}

absl::Status Importer::ConvertShape(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  const auto rank = static_cast<int64_t>(in.size());
  auto start = AttrInt(node, "start", 0);
  auto end = AttrInt(node, "end", rank);
  if (!start.ok()) return start.status();
  if (!end.ok()) return end.status();
  const int64_t s = std::clamp(*start < 0 ? *start + rank : *start, int64_t{0}, rank);
  const int64_t e = std::clamp(*end < 0 ? *end + rank : *end, int64_t{0}, rank);
  ConstValue out;
  out.dtype = TensorProto::INT64;
  out.has_data = true;
  for (int64_t i = s; i < e; ++i) out.ints.push_back(in[static_cast<size_t>(i)]);
  out.dims = {static_cast<int64_t>(out.ints.size())};
  return DefineConstant(node, 0, std::move(out));
}

absl::Status Importer::ConvertGather(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  if (auto v = InputValue(node, 0); v.ok() && !(*v)->is_constant()) {
    return GatherActivation(node, **v);
  }
  auto data = ConstantInput(node, 0, true);
  if (!data.ok()) return data.status();
  auto indices = ConstantInput(node, 1, true);
  if (!indices.ok()) return indices.status();
  auto axis = AttrInt(node, "axis", 0);
  if (!axis.ok()) return axis.status();
  const ConstValue& d = **data;
  const ConstValue& idx = **indices;
  const auto rank = static_cast<int64_t>(d.dims.size());
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  if (rank == 0 || a < 0 || a >= rank || !idx.IsInteger()) {
    return NodeError(node, absl::StrCat("Gather needs integer indices and an axis within ",
                                        DimsString(d.dims), ", got axis ", *axis));
  }
  const int64_t n = d.dims[static_cast<size_t>(a)];
  for (int64_t i : idx.ints) {
    if (i < -n || i >= n) {
      return NodeError(node, absl::StrCat("index ", i, " out of range for ", n, " elements"));
    }
  }
  // out = data[:axis] + indices + data[axis+1:]
  std::vector<int64_t> out_dims(d.dims.begin(), d.dims.begin() + a);
  out_dims.insert(out_dims.end(), idx.dims.begin(), idx.dims.end());
  out_dims.insert(out_dims.end(), d.dims.begin() + a + 1, d.dims.end());
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", out_dims);
      !s.ok() && !out_dims.empty()) {
    return s;
  }
  const std::vector<int64_t> strides = Strides(d.dims);
  const auto q = static_cast<int64_t>(idx.dims.size());
  return DefineConstant(node, 0, Gathered(d, out_dims, [&](const std::vector<int64_t>& index) {
                          int64_t flat = 0;
                          for (int64_t k = 0; k < a; ++k) flat += index[k] * strides[k];
                          int64_t pick = 0;
                          for (int64_t k = 0; k < q; ++k) pick = pick * idx.dims[k] + index[a + k];
                          int64_t i = idx.ints[static_cast<size_t>(pick)];
                          if (i < 0) i += n;
                          flat += i * strides[a];
                          for (int64_t k = a + 1; k < rank; ++k) flat += index[k + q - 1] * strides[k];
                          return flat;
                        }));
}

absl::Status Importer::ConvertConstant(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  if (node.attribute_size() != 1) {
    return NodeError(node, "a Constant needs exactly one value attribute");
  }
  const AttributeProto& attr = node.attribute(0);
  ConstValue v;
  v.has_data = true;
  if (attr.name() == "value" && attr.type() == AttributeProto::TENSOR) {
    auto t = ReadTensorProto(attr.t(), options_, NodeLabel(node));
    if (!t.ok()) return t.status();
    if (!t->has_data) return NodeError(node, "a Constant cannot hold external data");
    v = *std::move(t);
  } else if (attr.name() == "value_float" && attr.type() == AttributeProto::FLOAT) {
    v.dtype = TensorProto::FLOAT;
    v.floats = {attr.f()};
  } else if (attr.name() == "value_floats" && attr.type() == AttributeProto::FLOATS) {
    v.dtype = TensorProto::FLOAT;
    v.floats.assign(attr.floats().begin(), attr.floats().end());
    v.dims = {static_cast<int64_t>(v.floats.size())};
  } else if (attr.name() == "value_int" && attr.type() == AttributeProto::INT) {
    v.dtype = TensorProto::INT64;
    v.ints = {attr.i()};
  } else if (attr.name() == "value_ints" && attr.type() == AttributeProto::INTS) {
    v.dtype = TensorProto::INT64;
    v.ints.assign(attr.ints().begin(), attr.ints().end());
    v.dims = {static_cast<int64_t>(v.ints.size())};
  } else {
    return Unsupported(node, absl::StrCat("Constant attribute '", attr.name(), "'"));
  }
  return DefineConstant(node, 0, std::move(v));
}

absl::Status Importer::ConvertCast(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  auto to = AttrInt(node, "to", 0);
  if (!to.ok()) return to.status();
  if (!(*x)->is_constant()) {
    if (*to != TensorProto::FLOAT) return Unsupported(node, "Cast of a tensor to non-float");
    return AddOp(node, RawOpKind::kIdentity, OpKind::kActivation, {(*x)->tensor}, (*x)->onnx_dims)
        .status();
  }
  const ConstValue& c = *(*x)->constant;
  if (!c.has_data) return NodeError(node, "Cast of a constant whose data is absent");
  ConstValue out;
  out.dims = c.dims;
  out.has_data = true;
  if (*to == TensorProto::FLOAT || *to == TensorProto::DOUBLE) {
    out.dtype = TensorProto::FLOAT;
    for (int64_t i = 0; i < c.Elements(); ++i) out.floats.push_back(static_cast<float>(c.At(i)));
  } else if (*to == TensorProto::INT64 || *to == TensorProto::INT32) {
    out.dtype = static_cast<int32_t>(*to);
    for (int64_t i = 0; i < c.Elements(); ++i) {
      const double d = c.At(i);
      if (!(std::abs(d) < 9.2e18)) return NodeError(node, "value out of int64 range");
      out.ints.push_back(static_cast<int64_t>(d));
    }
  } else if (*to == TensorProto::BOOL) {
    out.dtype = TensorProto::BOOL;
    for (int64_t i = 0; i < c.Elements(); ++i) out.ints.push_back(c.At(i) != 0 ? 1 : 0);
  } else {
    return Unsupported(node, absl::StrCat("Cast to type ", DtypeName(static_cast<int32_t>(*to))));
  }
  return DefineConstant(node, 0, std::move(out));
}

absl::Status Importer::ConvertConstantOfShape(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto shape = ConstantInput(node, 0, true);
  if (!shape.ok()) return shape.status();
  if (!(*shape)->IsInteger() || (*shape)->dims.size() != 1) {
    return NodeError(node, "the shape input must be a 1-D integer tensor");
  }
  ConstValue out;
  out.dims = (*shape)->ints;
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", out.dims);
      !s.ok() && !out.dims.empty()) {
    return s;
  }
  out.has_data = true;
  out.dtype = TensorProto::FLOAT;
  double fill = 0.0;
  if (const AttributeProto* attr = FindAttr(node, "value"); attr != nullptr) {
    if (attr->type() != AttributeProto::TENSOR) return NodeError(node, "'value' must be a tensor");
    auto value = ReadTensorProto(attr->t(), options_, NodeLabel(node));
    if (!value.ok()) return value.status();
    if (!value->has_data || value->Elements() != 1) {
      return NodeError(node, "'value' must hold one element");
    }
    out.dtype = value->IsFloat() ? TensorProto::FLOAT : value->dtype;
    fill = value->At(0);
  }
  const auto n = static_cast<size_t>(out.Elements());
  if (out.IsFloat()) {
    out.floats.assign(n, static_cast<float>(fill));
  } else {
    out.ints.assign(n, static_cast<int64_t>(fill));
  }
  return DefineConstant(node, 0, std::move(out));
}

absl::Status Importer::ConvertSlice(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto data = InputValue(node, 0);
  if (!data.ok()) return data.status();
  const bool computed = !(*data)->is_constant();
  static const ConstValue kNoConstant;
  const ConstValue& c = computed ? kNoConstant : *(*data)->constant;
  if (!computed && !c.has_data) return NodeError(node, "Slice of a constant whose data is absent");
  const std::vector<int64_t>& in_dims = computed ? (*data)->onnx_dims : c.dims;
  const auto rank = static_cast<int64_t>(in_dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ < 10) {
    auto s = AttrInts(node, "starts", {});
    auto e = AttrInts(node, "ends", {});
    auto a = AttrInts(node, "axes", {});
    for (const absl::Status& st : {s.status(), e.status(), a.status()}) {
      if (!st.ok()) return st;
    }
    starts = *s;
    ends = *e;
    axes = *a;
  } else {
    std::vector<int64_t>* targets[4] = {&starts, &ends, &axes, &steps};
    for (int i = 1; i <= 4; ++i) {
      if (!HasInput(node, i)) continue;
      auto v = ConstantInput(node, i, true);
      if (!v.ok()) return v.status();
      if (!(*v)->IsInteger()) return NodeError(node, "slice parameters must be integers");
      *targets[i - 1] = (*v)->ints;
    }
  }
  if (axes.empty()) {
    for (int64_t a = 0; a < static_cast<int64_t>(starts.size()); ++a) axes.push_back(a);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return NodeError(node, "starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  std::vector<int64_t> out_dims = in_dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || steps[i] == 0) {
      return NodeError(node, absl::StrCat("invalid axis ", axes[i], " or step ", steps[i]));
    }
    const int64_t dim = in_dims[static_cast<size_t>(axis)];
    int64_t s = starts[i], e = ends[i];
    // Clamp before adding `dim` so that INT64 sentinels cannot overflow.
    s = std::clamp(s, -dim - 1, dim + 1);
    e = std::clamp(e, -dim - 1, dim + 1);
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (steps[i] > 0) {
      s = std::clamp(s, int64_t{0}, dim);
      e = std::clamp(e, int64_t{0}, dim);
      count = e > s ? (e - s + steps[i] - 1) / steps[i] : 0;
    } else {
      s = std::clamp(s, int64_t{0}, dim - 1);
      e = std::clamp(e, int64_t{-1}, dim - 1);
      count = s > e ? (s - e - steps[i] - 1) / -steps[i] : 0;
    }
    begin[static_cast<size_t>(axis)] = s;
    step[static_cast<size_t>(axis)] = steps[i];
    out_dims[static_cast<size_t>(axis)] = count;
  }
  if (computed) {
    return SliceActivation(node, 0, **data, begin, step, out_dims, out_dims);
  }
  const std::vector<int64_t> strides = Strides(c.dims);
  return DefineConstant(node, 0, Gathered(c, out_dims, [&](const std::vector<int64_t>& index) {
                          int64_t flat = 0;
                          for (size_t a = 0; a < index.size(); ++a) {
                            flat += (begin[a] + index[a] * step[a]) * strides[a];
                          }
                          return flat;
                        }));
}

absl::Status Importer::ConvertTranspose(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto data = InputValue(node, 0);
  if (!data.ok()) return data.status();
  const bool computed = !(*data)->is_constant();
  static const ConstValue kNoConstant;
  const ConstValue& c = computed ? kNoConstant : *(*data)->constant;
  if (!computed && !c.has_data) {
    return NodeError(node, "Transpose of a constant whose data is absent");
  }
  const auto rank = static_cast<int64_t>(computed ? (*data)->onnx_dims.size() : c.dims.size());
  std::vector<int64_t> reversed;
  for (int64_t a = rank - 1; a >= 0; --a) reversed.push_back(a);
  auto perm = AttrInts(node, "perm", reversed);
  if (!perm.ok()) return perm.status();
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  if (static_cast<int64_t>(perm->size()) != rank)
    return NodeError(node, "perm has the wrong length");
  for (int64_t p : *perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      return NodeError(node, absl::StrCat("invalid perm ", DimsString(*perm)));
    }
    seen[static_cast<size_t>(p)] = true;
  }
  if (computed) return TransposeActivation(node, **data, *perm);
  std::vector<int64_t> out_dims;
  for (int64_t p : *perm) out_dims.push_back(c.dims[static_cast<size_t>(p)]);
  const std::vector<int64_t> strides = Strides(c.dims);
  return DefineConstant(node, 0, Gathered(c, out_dims, [&](const std::vector<int64_t>& index) {
                          int64_t flat = 0;
                          for (size_t a = 0; a < index.size(); ++a) {
                            flat += index[a] * strides[static_cast<size_t>((*perm)[a])];
                          }
                          return flat;
                        }));
}

}  // namespace psched::model::onnx_importer
