#include <algorithm>
#include <functional>
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {

absl::StatusOr<TensorId> Importer::DefineActivation(const NodeProto& node, int output_index,
                                                    std::vector<int64_t> onnx_dims) {
  auto shape = ActivationShape(node, onnx_dims);
  if (!shape.ok()) return shape.status();
  Tensor tensor;
  tensor.name = node.output(output_index);
  tensor.shape = *shape;
  tensor.onnx_rank = static_cast<int32_t>(onnx_dims.size());
  const auto id = static_cast<TensorId>(graph_.tensors.size());
  graph_.tensors.push_back(std::move(tensor));
  Value v;
  v.tensor = id;
  v.onnx_dims = std::move(onnx_dims);
  values_[node.output(output_index)] = std::move(v);
  return id;
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

absl::StatusOr<TensorId> Importer::AddOp(const NodeProto& node, RawOpKind raw_kind, OpKind kind,
                                         std::vector<TensorId> inputs,
                                         std::vector<int64_t> out_dims, OpAttrs attrs) {
  auto out = DefineActivation(node, 0, std::move(out_dims));
  if (!out.ok()) return out.status();
  const auto op_id = static_cast<OpId>(graph_.ops.size());
  RawOp raw;
  raw.raw_kind = raw_kind;
  raw.op.name = node.name().empty() ? node.output(0) : node.name();
  raw.op.kind = kind;
  raw.op.inputs = std::move(inputs);
  raw.op.output = *out;
  raw.op.attrs = std::move(attrs);
  raw.onnx_op_type = node.op_type();
  graph_.ops.push_back(std::move(raw));
  graph_.tensors[static_cast<size_t>(*out)].producer = op_id;
  return *out;
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
  tensor.onnx_rank = static_cast<int32_t>(act_dims.size());
  tensor.constant = id;
  graph_.tensors.push_back(std::move(tensor));
  return static_cast<TensorId>(graph_.tensors.size() - 1);
}

}  // namespace psched::model::onnx_importer
