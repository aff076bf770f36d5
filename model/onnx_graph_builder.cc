#include <algorithm>
#include <functional>
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {

std::vector<int64_t> PhysicalOf(const std::vector<int64_t>& onnx_dims, bool channels_last) {
  if (!channels_last || onnx_dims.size() < 3) return onnx_dims;
  std::vector<int64_t> d = onnx_dims;
  std::rotate(d.begin() + 1, d.begin() + 2, d.end());
  return d;
}

bool DefaultChannelsLast(const std::vector<int64_t>& onnx_dims) {
  return onnx_dims.size() == 4 && onnx_dims[0] == 1;
}

absl::StatusOr<TensorId> Importer::NewActivation(const std::string& name,
                                                 const std::vector<int64_t>& onnx_dims,
                                                 bool channels_last) {
  if (absl::Status s = CheckDims(absl::StrCat("tensor '", name, "'"), onnx_dims); !s.ok()) {
    return s;
  }
  if (onnx_dims.empty() || onnx_dims.size() > 6) {
    return absl::UnimplementedError(absl::StrCat("tensor '", name, "' has rank ", onnx_dims.size(),
                                                 " ", DimsString(onnx_dims),
                                                 "; psched computes tensors of rank 1 to 6"));
  }
  Tensor tensor;
  tensor.name = name;
  tensor.dims = PhysicalOf(onnx_dims, channels_last);
  tensor.channels_last = channels_last;
  tensor.shape = ViewOf(tensor.dims, channels_last);
  tensor.onnx_rank = static_cast<int32_t>(onnx_dims.size());
  graph_.tensors.push_back(std::move(tensor));
  return static_cast<TensorId>(graph_.tensors.size() - 1);
}

absl::StatusOr<TensorId> Importer::DefineActivation(const NodeProto& node, int output_index,
                                                    std::vector<int64_t> onnx_dims,
                                                    std::optional<bool> channels_last) {
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", onnx_dims); !s.ok()) return s;
  const bool cl = channels_last.value_or(DefaultChannelsLast(onnx_dims));
  if (cl && (onnx_dims.size() != 4 || onnx_dims[0] != 1)) {
    return Unsupported(node, absl::StrCat("output ", DimsString(onnx_dims),
                                          " is not a [1,C,H,W] image"));
  }
  auto id = NewActivation(node.output(output_index), onnx_dims, cl);
  if (!id.ok()) return Unsupported(node, id.status().message());
  Value v;
  v.tensor = *id;
  v.channels_last = cl;
  v.onnx_dims = std::move(onnx_dims);
  values_[node.output(output_index)] = std::move(v);
  return *id;
}

absl::Status Importer::DefineConstant(const NodeProto& node, int output_index, ConstValue value) {
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", value.dims);
      !s.ok() && value.Elements() != 0) {
    return s;
  }
  value.name = node.output(output_index);
  Value v;
  v.constant = std::make_shared<const ConstValue>(std::move(value));
  values_[node.output(output_index)] = std::move(v);
  return absl::OkStatus();
}

OpId Importer::AppendOp(const NodeProto& node, std::string name, RawOpKind raw_kind, OpKind kind,
                        std::vector<TensorId> inputs, TensorId output, OpAttrs attrs) {
  const auto op_id = static_cast<OpId>(graph_.ops.size());
  RawOp raw;
  raw.raw_kind = raw_kind;
  raw.op.name = std::move(name);
  raw.op.kind = kind;
  raw.op.inputs = std::move(inputs);
  raw.op.output = output;
  raw.op.attrs = std::move(attrs);
  raw.onnx_op_type = node.op_type();
  graph_.ops.push_back(std::move(raw));
  graph_.tensors[static_cast<size_t>(output)].producer = op_id;
  return op_id;
}

absl::StatusOr<TensorId> Importer::AddOp(const NodeProto& node, RawOpKind raw_kind, OpKind kind,
                                         std::vector<TensorId> inputs,
                                         std::vector<int64_t> out_dims, OpAttrs attrs,
                                         std::optional<bool> channels_last) {
  auto out = DefineActivation(node, 0, std::move(out_dims), channels_last);
  if (!out.ok()) return out.status();
  AppendOp(node, node.name().empty() ? node.output(0) : node.name(), raw_kind, kind,
           std::move(inputs), *out, std::move(attrs));
  return *out;
}

absl::StatusOr<Value> Importer::AddStep(const NodeProto& node, absl::string_view suffix,
                                       OpKind kind, std::vector<TensorId> inputs,
                                       std::vector<int64_t> onnx_dims, OpAttrs attrs) {
  const std::string name = absl::StrCat(node.output(0), "/", suffix);
  auto out = NewActivation(name, onnx_dims, false);
  if (!out.ok()) return Unsupported(node, out.status().message());
  AppendOp(node, name, RawOpKind::kCanonical, kind, std::move(inputs), *out, std::move(attrs));
  Value v;
  v.tensor = *out;
  v.onnx_dims = std::move(onnx_dims);
  return v;
}

ConstantId Importer::AddConstant(const std::string& key, std::string name,
                                 std::vector<int64_t> dims, bool has_data,
                                 const std::function<std::vector<float>()>& data) {
  auto it = constant_cache_.find(key);
  if (it != constant_cache_.end()) return it->second;
  Constant c;
  c.name = std::move(name);
  c.dims = std::move(dims);
  if (has_data) {
    c.data = data();
  } else {
    weights_missing_ = true;
  }
  const auto id = static_cast<ConstantId>(graph_.constants.size());
  graph_.constants.push_back(std::move(c));
  constant_cache_.emplace(key, id);
  return id;
}

// OIHW -> OHWI.
ConstantId Importer::FilterConstant(const ConstValue& w) {
  const int64_t o = w.dims[0], i = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  return AddConstant(absl::StrCat(w.name, "|ohwi"), w.name, {o, kh, kw, i}, w.has_data, [&] {
    std::vector<float> out(w.floats.size());
    for (int64_t a = 0; a < o; ++a)
      for (int64_t b = 0; b < i; ++b)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t x = 0; x < kw; ++x)
            out[static_cast<size_t>(((a * kh + y) * kw + x) * i + b)] =
                w.floats[static_cast<size_t>(((a * i + b) * kh + y) * kw + x)];
    return out;
  });
}

// A per-channel vector of `length`, from [length], [1,length] or a broadcast scalar.
ConstantId Importer::VectorConstant(const ConstValue& v, int64_t length) {
  return AddConstant(absl::StrCat(v.name, "|vec", length), v.name, {length}, v.has_data, [&] {
    if (v.Elements() == length) return v.floats;
    return std::vector<float>(static_cast<size_t>(length), v.floats.empty() ? 0.0f : v.floats[0]);
  });
}

// An element-wise constant operand broadcast against an activation of `act_dims`, in NHWC:
// dims {h, w, c} of the constant itself (each 1 or the activation's extent).
TensorId Importer::ConstantOperand(const ConstValue& c, const std::vector<int64_t>& act_dims) {
  std::vector<int64_t> padded(act_dims.size() - std::min(act_dims.size(), c.dims.size()), 1);
  padded.insert(padded.end(), c.dims.begin(), c.dims.end());
  Shape shape =
      act_dims.size() == 4 ? Shape{padded[2], padded[3], padded[1]} : Shape{1, 1, padded[1]};
  const ConstantId id =
      AddConstant(absl::StrCat(c.name, "|nhwc", DimsString(act_dims)), c.name,
                  {shape.h, shape.w, shape.c}, c.has_data, [&] {
                    std::vector<float> out(static_cast<size_t>(shape.Elements()));
                    for (int64_t y = 0; y < shape.h; ++y)
                      for (int64_t x = 0; x < shape.w; ++x)
                        for (int64_t ch = 0; ch < shape.c; ++ch)
                          out[static_cast<size_t>((y * shape.w + x) * shape.c + ch)] =
                              static_cast<float>(c.At((ch * shape.h + y) * shape.w + x));
                    return out;
                  });
  Tensor tensor;
  tensor.name = c.name;
  tensor.shape = shape;
  tensor.dims = act_dims.size() == 4 ? std::vector<int64_t>{1, shape.h, shape.w, shape.c}
                                     : std::vector<int64_t>{1, shape.c};
  tensor.onnx_rank = static_cast<int32_t>(act_dims.size());
  tensor.constant = id;
  graph_.tensors.push_back(std::move(tensor));
  return static_cast<TensorId>(graph_.tensors.size() - 1);
}

TensorId Importer::RowMajorConstant(const ConstValue& c, size_t rank) {
  std::vector<int64_t> dims(rank - std::min(rank, c.dims.size()), 1);
  dims.insert(dims.end(), c.dims.begin(), c.dims.end());
  const ConstantId id = AddConstant(absl::StrCat(c.name, "|rowmajor", DimsString(dims)), c.name,
                                    dims, c.has_data, [&] {
                                      std::vector<float> out(static_cast<size_t>(c.Elements()));
                                      for (int64_t i = 0; i < c.Elements(); ++i) {
                                        out[static_cast<size_t>(i)] = static_cast<float>(c.At(i));
                                      }
                                      return out;
                                    });
  Tensor tensor;
  tensor.name = c.name;
  tensor.dims = dims;
  tensor.channels_last = false;
  tensor.shape = ViewOf(dims, false);
  tensor.onnx_rank = static_cast<int32_t>(rank);
  tensor.constant = id;
  graph_.tensors.push_back(std::move(tensor));
  return static_cast<TensorId>(graph_.tensors.size() - 1);
}

}  // namespace psched::model::onnx_importer
