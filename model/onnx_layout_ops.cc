#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_join.h"
#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {

absl::Status Importer::ConvertConcat(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  if (node.input_size() == 0) return NodeError(node, "has no inputs");
  auto axis_attr = AttrInt(node, "axis", 1);
  if (!axis_attr.ok()) return axis_attr.status();
  std::vector<const Value*> inputs;
  int constants = 0;
  for (int i = 0; i < node.input_size(); ++i) {
    auto v = InputValue(node, i);
    if (!v.ok()) return v.status();
    inputs.push_back(*v);
    constants += (*v)->is_constant() ? 1 : 0;
  }
  if (constants == node.input_size()) {
    // A shape computation: concatenate 1-D integer vectors.
    ConstValue out;
    out.dtype = inputs[0]->constant->dtype;
    out.has_data = true;
    for (const Value* v : inputs) {
      const ConstValue& c = *v->constant;
      if (c.dims.size() != 1 || !c.has_data || c.dtype != out.dtype || !c.IsInteger()) {
        return Unsupported(node, "constant Concat is supported only for 1-D integer vectors");
      }
      out.ints.insert(out.ints.end(), c.ints.begin(), c.ints.end());
    }
    out.dims = {static_cast<int64_t>(out.ints.size())};
    return DefineConstant(node, 0, std::move(out));
  }
  const Value* computed = nullptr;
  for (const Value* v : inputs) {
    if (!v->is_constant()) computed = v;
  }
  const std::vector<int64_t>& first = computed->onnx_dims;
  const auto rank = static_cast<int64_t>(first.size());
  const int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
  if (axis < 0 || axis >= rank) {
    return NodeError(node, absl::StrCat("axis ", *axis_attr, " out of range for ",
                                        DimsString(first)));
  }
  const bool images = constants == 0 && axis == 1 &&
                      std::all_of(inputs.begin(), inputs.end(),
                                  [](const Value* v) { return v->channels_last; });
  if (!images) return ConcatGeneral(node, inputs, axis);
  std::vector<int64_t> out = first;
  out[1] = 0;
  std::vector<TensorId> ids;
  for (const Value* v : inputs) {
    std::vector<int64_t> rest = v->onnx_dims;
    if (rest.size() != first.size()) {
      return NodeError(node, "inconsistent shapes: inputs have different ranks");
    }
    out[1] += rest[1];
    rest[1] = first[1];
    if (rest != first) {
      return NodeError(node,
                       absl::StrCat("inconsistent shapes: ", DimsString(v->onnx_dims), " and ",
                                    DimsString(first), " differ outside the channel axis"));
    }
    ids.push_back(v->tensor);
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kConcat, std::move(ids), out, {}, true)
      .status();
}

absl::Status Importer::ConvertPad(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto image = ImageInput(node, 0);
  if (!image.ok()) return image.status();
  const Value* const x_value = &*image;
  const Value* const* x = &x_value;
  auto mode = AttrString(node, "mode", "constant");
  if (!mode.ok()) return mode.status();
  if (*mode != "constant") {
    return Unsupported(node, absl::StrCat("pad mode '", *mode, "'; only 'constant' is supported"));
  }
  std::vector<int64_t> pads;
  float value = 0.0f;
  if (opset_ < 11) {
    auto p = AttrInts(node, "pads", {});
    auto v = AttrFloat(node, "value", 0.0f);
    if (!p.ok()) return p.status();
    if (!v.ok()) return v.status();
    pads = *p;
    value = *v;
  } else {
    if (HasInput(node, 3)) return Unsupported(node, "the 'axes' input is not supported");
    auto p = ConstantInput(node, 1, true);
    if (!p.ok()) return p.status();
    if (!(*p)->IsInteger()) return NodeError(node, "pads must be integers");
    pads = (*p)->ints;
    if (HasInput(node, 2)) {
      auto v = ConstantInput(node, 2, true);
      if (!v.ok()) return v.status();
      if ((*v)->Elements() != 1 || !(*v)->IsFloat()) {
        return NodeError(node, "constant_value must be a float scalar");
      }
      value = static_cast<float>((*v)->At(0));
    }
  }
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  const size_t rank = in.size();
  if (rank != 4 && rank != 2) {
    return Unsupported(node, absl::StrCat("Pad of ", DimsString(in), "; psched pads [1,C,H,W] "
                                          "and [1,K] tensors"));
  }
  if (pads.size() != 2 * rank) {
    return NodeError(node, absl::StrCat("expects ", 2 * rank, " pads for ", DimsString(in),
                                        ", got ", DimsString(pads)));
  }
  for (int64_t p : pads) {
    if (p < 0 || p > options_.max_dim) {
      return Unsupported(node, absl::StrCat("pads must be in [0, ", options_.max_dim, "], got ",
                                            DimsString(pads)));
    }
  }
  if (pads[0] != 0 || pads[rank] != 0) return Unsupported(node, "padding the batch axis");
  std::vector<int64_t> out = in;
  for (size_t i = 0; i < rank; ++i) out[i] += pads[i] + pads[i + rank];
  if (out == in) {
    return AddOp(node, RawOpKind::kIdentity, OpKind::kPad, {(*x)->tensor}, out, {},
                 (*x)->channels_last)
        .status();
  }
  PadAttrs attrs;
  attrs.channels_before = static_cast<int32_t>(pads[1]);
  attrs.channels_after = static_cast<int32_t>(pads[1 + rank]);
  if (rank == 4) {
    attrs.top = static_cast<int32_t>(pads[2]);
    attrs.left = static_cast<int32_t>(pads[3]);
    attrs.bottom = static_cast<int32_t>(pads[6]);
    attrs.right = static_cast<int32_t>(pads[7]);
  }
  attrs.value = value;
  return AddOp(node, RawOpKind::kCanonical, OpKind::kPad, {(*x)->tensor}, out, attrs,
               (*x)->channels_last)
      .status();
}

absl::Status Importer::ConvertResize(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto image = ImageInput(node, 0);
  if (!image.ok()) return image.status();
  const Value* const x_value = &*image;
  const Value* const* x = &x_value;
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (in.size() != 4) return Unsupported(node, "only [1,C,H,W] input can be resized");
  const bool upsample = node.op_type() == "Upsample";
  auto mode = AttrString(node, "mode", "nearest");
  if (!mode.ok()) return mode.status();
  ResizeAttrs attrs;
  if (*mode == "nearest") {
    attrs.mode = ResizeMode::kNearest;
  } else if (*mode == "linear" || *mode == "bilinear") {
    attrs.mode = ResizeMode::kLinear;
  } else {
    return Unsupported(node, absl::StrCat("resize mode '", *mode, "'"));
  }
  // Upsample and Resize-10 sample asymmetrically and round nearest down.
  attrs.transform = CoordinateTransform::kAsymmetric;
  attrs.rounding = NearestRounding::kFloor;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (upsample && opset_ < 9) {
    auto s = AttrFloats(node, "scales");
    if (!s.ok()) return s.status();
    scales.assign(s->begin(), s->end());
  } else {
    const int scales_index = (upsample || opset_ < 11) ? 1 : 2;
    if (!upsample && opset_ >= 11) {
      auto transform = AttrString(node, "coordinate_transformation_mode", "half_pixel");
      auto nearest = AttrString(node, "nearest_mode", "round_prefer_floor");
      auto exclude = AttrInt(node, "exclude_outside", 0);
      for (const absl::Status& s : {transform.status(), nearest.status(), exclude.status()}) {
        if (!s.ok()) return s;
      }
      static const std::unordered_map<std::string_view, CoordinateTransform> kTransforms = {
          {"half_pixel", CoordinateTransform::kHalfPixel},
          {"asymmetric", CoordinateTransform::kAsymmetric},
          {"align_corners", CoordinateTransform::kAlignCorners},
          {"pytorch_half_pixel", CoordinateTransform::kPytorchHalfPixel}};
      static const std::unordered_map<std::string_view, NearestRounding> kRoundings = {
          {"round_prefer_floor", NearestRounding::kRoundPreferFloor},
          {"round_prefer_ceil", NearestRounding::kRoundPreferCeil},
          {"floor", NearestRounding::kFloor},
          {"ceil", NearestRounding::kCeil}};
      auto t = kTransforms.find(*transform);
      auto r = kRoundings.find(*nearest);
      if (t == kTransforms.end()) {
        return Unsupported(node, absl::StrCat("coordinate_transformation_mode '", *transform, "'"));
      }
      if (r == kRoundings.end()) {
        return Unsupported(node, absl::StrCat("nearest_mode '", *nearest, "'"));
      }
      if (*exclude != 0) return Unsupported(node, "exclude_outside=1");
      attrs.transform = t->second;
      attrs.rounding = r->second;
      for (absl::string_view name : {"antialias", "axes", "keep_aspect_ratio_policy"}) {
        if (FindAttr(node, name) != nullptr) {
          return Unsupported(node, absl::StrCat("attribute '", name, "'"));
        }
      }
      if (HasInput(node, 3)) {
        auto s = ConstantInput(node, 3, true);
        if (!s.ok()) return s.status();
        if (!(*s)->IsInteger()) return NodeError(node, "sizes must be integers");
        sizes = (*s)->ints;
      }
    }
    if (HasInput(node, scales_index)) {
      auto s = ConstantInput(node, scales_index, true);
      if (!s.ok()) return s.status();
      if (!(*s)->IsFloat()) return NodeError(node, "scales must be floats");
      for (int64_t i = 0; i < (*s)->Elements(); ++i) scales.push_back((*s)->At(i));
    }
  }
  if (!scales.empty() && !sizes.empty()) return NodeError(node, "has both scales and sizes");
  std::vector<int64_t> out = in;
  if (!sizes.empty()) {
    if (sizes.size() != 4 || sizes[0] != in[0] || sizes[1] != in[1] || sizes[2] < 1 ||
        sizes[3] < 1) {
      return Unsupported(node, absl::StrCat("sizes ", DimsString(sizes), " for input ",
                                            DimsString(in), "; only H and W can change"));
    }
    out = sizes;
    attrs.scale_h = static_cast<float>(static_cast<double>(out[2]) / static_cast<double>(in[2]));
    attrs.scale_w = static_cast<float>(static_cast<double>(out[3]) / static_cast<double>(in[3]));
  } else {
    if (scales.size() != 4 || scales[0] != 1.0 || scales[1] != 1.0 || !(scales[2] > 0) ||
        !(scales[3] > 0) || scales[2] > static_cast<double>(options_.max_dim) ||
        scales[3] > static_cast<double>(options_.max_dim)) {
      return Unsupported(node, absl::StrCat("scales [", absl::StrJoin(scales, ","),
                                            "]; expects 4 positive scales, 1 for N and C"));
    }
    out[2] = static_cast<int64_t>(std::floor(static_cast<double>(in[2]) * scales[2]));
    out[3] = static_cast<int64_t>(std::floor(static_cast<double>(in[3]) * scales[3]));
    attrs.scale_h = static_cast<float>(scales[2]);
    attrs.scale_w = static_cast<float>(scales[3]);
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kResize, {(*x)->tensor}, out, attrs).status();
}

absl::Status Importer::ReshapeTo(const NodeProto& node, const Value& input,
                                 std::vector<int64_t> target) {
  if (input.is_constant()) {
    ConstValue c = *input.constant;
    int64_t elements = 1;
    for (int64_t d : target) elements *= d;
    if (elements != c.Elements()) {
      return NodeError(
          node, absl::StrCat("cannot reshape ", DimsString(c.dims), " to ", DimsString(target)));
    }
    c.dims = std::move(target);
    return DefineConstant(node, 0, std::move(c));
  }
  const std::vector<int64_t>& in = input.onnx_dims;
  auto product = [](const std::vector<int64_t>& d) {
    int64_t n = 1;
    for (int64_t v : d) n *= v;
    return n;
  };
  if (product(target) != product(in)) {
    return NodeError(node, absl::StrCat("inconsistent shapes: cannot reshape ", DimsString(in),
                                        " to ", DimsString(target)));
  }
  if (target == in) {
    return AddOp(node, RawOpKind::kIdentity, OpKind::kReshape, {input.tensor}, target, {},
                 input.channels_last)
        .status();
  }
  // NHWC and NCHW agree on the element order exactly when H = W = 1.
  const bool same_nhwc =
      (input.channels_last && in[2] * in[3] == 1 && target == std::vector<int64_t>{1, in[1]}) ||
      (in.size() == 2 && in[0] == 1 && target == std::vector<int64_t>{1, in[1], 1, 1});
  if (same_nhwc) {
    return AddOp(node, RawOpKind::kIdentity, OpKind::kFlatten, {input.tensor}, target).status();
  }
  if (input.channels_last && target == std::vector<int64_t>{1, in[1] * in[2] * in[3]}) {
    return AddOp(node, RawOpKind::kCanonical, OpKind::kFlatten, {input.tensor}, target, {}, false)
        .status();
  }
  return ReshapeRowMajor(node, input, std::move(target));
}

absl::Status Importer::ConvertReshape(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  auto shape = ConstantInput(node, 1, true);
  if (!shape.ok()) return shape.status();
  auto allow_zero = AttrInt(node, "allowzero", 0);
  if (!allow_zero.ok()) return allow_zero.status();
  if (!(*shape)->IsInteger() || (*shape)->dims.size() != 1) {
    return NodeError(node, "the shape input must be a 1-D integer tensor");
  }
  const std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  int64_t in_elements = 1;
  for (int64_t d : in) in_elements *= d;
  std::vector<int64_t> target = (*shape)->ints;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && *allow_zero == 0) {
      if (i >= in.size()) return NodeError(node, "shape copies a dimension the input lacks");
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) return NodeError(node, "shape has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (target[i] < 1 || target[i] > options_.max_tensor_elements) {
      return NodeError(node, absl::StrCat("invalid target shape ", DimsString((*shape)->ints)));
    }
    if (known > options_.max_tensor_elements / target[i]) {
      return NodeError(node,
                       absl::StrCat("target shape ", DimsString((*shape)->ints), " is too large"));
    }
    known *= target[i];
  }
  if (infer >= 0) {
    if (in_elements % known != 0) {
      return NodeError(node, absl::StrCat("cannot reshape ", DimsString(in), " to ",
                                          DimsString((*shape)->ints)));
    }
    target[static_cast<size_t>(infer)] = in_elements / known;
  }
  return ReshapeTo(node, **x, std::move(target));
}

absl::Status Importer::ConvertFlatten(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  auto axis_attr = AttrInt(node, "axis", 1);
  if (!axis_attr.ok()) return axis_attr.status();
  const auto rank = static_cast<int64_t>(in.size());
  const int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
  if (axis < 0 || axis > rank)
    return NodeError(node, absl::StrCat("axis ", *axis_attr, " out of range"));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[static_cast<size_t>(i)];
  return ReshapeTo(node, **x, {outer, inner});
}

absl::Status Importer::ConvertSqueeze(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  const bool unsqueeze = node.op_type() == "Unsqueeze";
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  auto given_axes = Axes(node, opset_ >= 13);
  if (!given_axes.ok()) return given_axes.status();
  const std::vector<int64_t> axes = *std::move(given_axes);
  std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  std::vector<int64_t> out;
  if (unsqueeze) {
    const auto rank = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> inserted(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
      const int64_t axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank || inserted[static_cast<size_t>(axis)]) {
        return NodeError(node, absl::StrCat("invalid axes ", DimsString(axes)));
      }
      inserted[static_cast<size_t>(axis)] = true;
    }
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i)
      out.push_back(inserted[static_cast<size_t>(i)] ? 1 : in[next++]);
  } else {
    const auto rank = static_cast<int64_t>(in.size());
    std::vector<bool> removed(static_cast<size_t>(rank), axes.empty());
    for (int64_t a : axes) {
      const int64_t axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank || in[static_cast<size_t>(axis)] != 1) {
        return NodeError(node,
                         absl::StrCat("invalid axes ", DimsString(axes), " for ", DimsString(in)));
      }
      removed[static_cast<size_t>(axis)] = true;
    }
    for (int64_t i = 0; i < rank; ++i) {
      if (!(removed[static_cast<size_t>(i)] && in[static_cast<size_t>(i)] == 1)) {
        out.push_back(in[static_cast<size_t>(i)]);
      }
    }
  }
  return ReshapeTo(node, **x, std::move(out));
}

absl::Status Importer::ConvertIdentity(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  if (node.op_type() == "Dropout" && HasInput(node, 2)) {
    auto training = ConstantInput(node, 2, true);
    if (!training.ok()) return training.status();
    // Training mode with ratio 0 (torch's dropout(p=0) exported in train mode) is identity.
    double ratio = 0.5;
    if (HasInput(node, 1)) {
      auto r = ConstantInput(node, 1, true);
      if (!r.ok()) return r.status();
      if ((*r)->Elements() != 1) return NodeError(node, "ratio must be a scalar");
      ratio = (*r)->At(0);
    }
    if ((*training)->Elements() != 1 || ((*training)->At(0) != 0 && ratio != 0)) {
      return Unsupported(node, "Dropout in training mode with a ratio above 0");
    }
  }
  if ((*x)->is_constant()) {
    Value alias = **x;
    values_[node.output(0)] = std::move(alias);
    return absl::OkStatus();
  }
  return AddOp(node, RawOpKind::kIdentity, OpKind::kActivation, {(*x)->tensor}, (*x)->onnx_dims,
               {}, (*x)->channels_last)
      .status();
}

}  // namespace psched::model::onnx_importer
