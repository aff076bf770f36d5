#include <algorithm>
#include <cmath>
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {

absl::Status Importer::ResolveWindow(const NodeProto& node, const std::vector<int64_t>& in_dims,
                                     int64_t kernel_h, int64_t kernel_w, bool allow_ceil,
                                     Window2d* window, std::vector<int64_t>* out_hw,
                                     int32_t* declared_pad_bottom, int32_t* declared_pad_right) {
  auto strides = AttrInts(node, "strides", {1, 1});
  auto dilations = AttrInts(node, "dilations", {1, 1});
  auto pads = AttrInts(node, "pads", {0, 0, 0, 0});
  auto auto_pad = AttrString(node, "auto_pad", "NOTSET");
  auto ceil_mode = AttrInt(node, "ceil_mode", 0);
  for (const absl::Status& s : {strides.status(), dilations.status(), pads.status(),
                                auto_pad.status(), ceil_mode.status()}) {
    if (!s.ok()) return s;
  }
  if (strides->size() != 2 || dilations->size() != 2 || pads->size() != 4) {
    return NodeError(
        node, absl::StrCat("expects 2 strides, 2 dilations and 4 pads, got ", DimsString(*strides),
                           ", ", DimsString(*dilations), ", ", DimsString(*pads)));
  }
  const int64_t limit = options_.max_dim;
  for (int64_t v :
       {kernel_h, kernel_w, (*strides)[0], (*strides)[1], (*dilations)[0], (*dilations)[1]}) {
    if (v < 1 || v > limit) {
      return NodeError(
          node, absl::StrCat("kernel, stride and dilation must be in [1, ", limit, "], got ", v));
    }
  }
  for (int64_t p : *pads) {
    if (p < 0 || p > limit) {
      return NodeError(node,
                       absl::StrCat("pads must be in [0, ", limit, "], got ", DimsString(*pads)));
    }
  }
  if (*ceil_mode != 0 && (!allow_ceil || *ceil_mode != 1)) {
    return NodeError(node, absl::StrCat("ceil_mode ", *ceil_mode, " is not supported here"));
  }
  const int64_t in[2] = {in_dims[2], in_dims[3]};
  const int64_t kernel[2] = {kernel_h, kernel_w};
  int64_t begin[2] = {(*pads)[0], (*pads)[1]};
  int64_t end[2] = {(*pads)[2], (*pads)[3]};
  int64_t extra[2] = {0, 0};
  out_hw->assign(2, 0);
  for (int a = 0; a < 2; ++a) {
    const int64_t stride = (*strides)[static_cast<size_t>(a)];
    const int64_t effective = (kernel[a] - 1) * (*dilations)[static_cast<size_t>(a)] + 1;
    if (*auto_pad == "SAME_UPPER" || *auto_pad == "SAME_LOWER") {
      const int64_t out = (in[a] + stride - 1) / stride;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + effective - in[a]);
      begin[a] = *auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[a] = total - begin[a];
    } else if (*auto_pad == "VALID") {
      begin[a] = end[a] = 0;
    } else if (*auto_pad != "NOTSET" && !auto_pad->empty()) {
      return NodeError(node, absl::StrCat("unknown auto_pad '", *auto_pad, "'"));
    }
    const int64_t span = in[a] + begin[a] + end[a] - effective;
    if (span < 0) {
      return NodeError(
          node, absl::StrCat("window of extent ", effective, " is larger than the padded input ",
                             DimsString(in_dims)));
    }
    int64_t out = span / stride + 1;
    if (*ceil_mode == 1) {
      out = (span + stride - 1) / stride + 1;
      extra[a] = std::max<int64_t>(0, (out - 1) * stride + effective - (in[a] + begin[a] + end[a]));
    }
    (*out_hw)[static_cast<size_t>(a)] = out;
  }
  window->kernel_h = static_cast<int32_t>(kernel_h);
  window->kernel_w = static_cast<int32_t>(kernel_w);
  window->stride_h = static_cast<int32_t>((*strides)[0]);
  window->stride_w = static_cast<int32_t>((*strides)[1]);
  window->dilation_h = static_cast<int32_t>((*dilations)[0]);
  window->dilation_w = static_cast<int32_t>((*dilations)[1]);
  window->pad_top = static_cast<int32_t>(begin[0]);
  window->pad_left = static_cast<int32_t>(begin[1]);
  window->pad_bottom = static_cast<int32_t>(end[0] + extra[0]);
  window->pad_right = static_cast<int32_t>(end[1] + extra[1]);
  if (declared_pad_bottom != nullptr) *declared_pad_bottom = static_cast<int32_t>(end[0]);
  if (declared_pad_right != nullptr) *declared_pad_right = static_cast<int32_t>(end[1]);
  return absl::OkStatus();
}

absl::Status Importer::ConvertConv(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  if (auto v = ActivationInput(node, 0); v.ok() && (*v)->onnx_dims.size() == 3) {
    return ConvertConv1d(node, **v);
  }
  auto image = ImageInput(node, 0);
  if (!image.ok()) return image.status();
  const Value* const x_value = &*image;
  const Value* const* x = &x_value;
  auto w = ConstantInput(node, 1, false);
  if (!w.ok()) return w.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  const ConstValue& weight = **w;
  if (in.size() != 4) {
    return Unsupported(
        node,
        absl::StrCat("only 1-D and 2-D convolution ([1,C,L], [1,C,H,W]) is supported, input is ",
                     DimsString(in)));
  }
  if (weight.dims.size() != 4 || !(weight.dtype == TensorProto::FLOAT)) {
    return NodeError(node,
                     absl::StrCat("weight '", weight.name,
                                  "' must be a float32 [M,C/group,kH,kW] tensor, got dims ",
                                  DimsString(weight.dims), " of type ", DtypeName(weight.dtype)));
  }
  auto group = AttrInt(node, "group", 1);
  if (!group.ok()) return group.status();
  const int64_t cout = weight.dims[0];
  if (*group < 1 || in[1] % *group != 0 || weight.dims[1] * *group != in[1] || cout % *group != 0 ||
      cout < 1) {
    return NodeError(node,
                     absl::StrCat("input channels ", in[1], ", weight ", DimsString(weight.dims),
                                  " and group ", *group, " do not agree"));
  }
  auto kernel = AttrInts(node, "kernel_shape", {weight.dims[2], weight.dims[3]});
  if (!kernel.ok()) return kernel.status();
  if (*kernel != std::vector<int64_t>{weight.dims[2], weight.dims[3]}) {
    return NodeError(node, absl::StrCat("kernel_shape ", DimsString(*kernel),
                                        " disagrees with weight ", DimsString(weight.dims)));
  }
  ConvAttrs attrs;
  std::vector<int64_t> out_hw;
  if (absl::Status s = ResolveWindow(node, in, weight.dims[2], weight.dims[3], false, &attrs.window,
                                     &out_hw, nullptr, nullptr);
      !s.ok()) {
    return s;
  }
  attrs.groups = static_cast<int32_t>(*group);
  attrs.filter = FilterConstant(weight);
  if (HasInput(node, 2)) {
    auto b = ConstantInput(node, 2, false);
    if (!b.ok()) return b.status();
    if ((*b)->dims != std::vector<int64_t>{cout} || (*b)->dtype != TensorProto::FLOAT) {
      return NodeError(node, absl::StrCat("bias '", (*b)->name, "' must be float32 [", cout,
                                          "], got ", DimsString((*b)->dims)));
    }
    attrs.bias = VectorConstant(**b, cout);
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kConv2d, {(*x)->tensor},
               {1, cout, out_hw[0], out_hw[1]}, attrs)
      .status();
}

absl::Status Importer::ConvertPool(const NodeProto& node) {
  const bool is_max = node.op_type() == "MaxPool";
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto image = ImageInput(node, 0);
  if (!image.ok()) return image.status();
  const Value* const x_value = &*image;
  const Value* const* x = &x_value;
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (in.size() != 4) return Unsupported(node, "only 2-D pooling on [1,C,H,W] is supported");
  auto kernel = AttrInts(node, "kernel_shape", {});
  if (!kernel.ok()) return kernel.status();
  if (kernel->size() != 2) {
    return NodeError(node,
                     absl::StrCat("kernel_shape must have 2 values, got ", DimsString(*kernel)));
  }
  if (!is_max) {
    auto dilations = AttrInts(node, "dilations", {1, 1});
    if (!dilations.ok()) return dilations.status();
    if (*dilations != std::vector<int64_t>{1, 1}) {
      return Unsupported(node, "dilated average pooling is not supported");
    }
  }
  if (is_max) {
    auto storage = AttrInt(node, "storage_order", 0);
    if (!storage.ok()) return storage.status();
  }
  PoolAttrs attrs;
  std::vector<int64_t> out_hw;
  if (absl::Status s =
          ResolveWindow(node, in, (*kernel)[0], (*kernel)[1], true, &attrs.window, &out_hw,
                        &attrs.declared_pad_bottom, &attrs.declared_pad_right);
      !s.ok()) {
    return s;
  }
  if (!is_max) {
    auto include = AttrInt(node, "count_include_pad", 0);
    if (!include.ok()) return include.status();
    attrs.count_include_pad = *include != 0;
  }
  return AddOp(node, RawOpKind::kCanonical, is_max ? OpKind::kMaxPool : OpKind::kAvgPool,
               {(*x)->tensor}, {1, in[1], out_hw[0], out_hw[1]}, attrs)
      .status();
}

absl::Status Importer::ConvertGlobalAvgPool(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  if (auto v = ActivationInput(node, 0); v.ok() && (*v)->onnx_dims.size() == 3) {
    return ConvertConv1d(node, **v);
  }
  auto image = ImageInput(node, 0);
  if (!image.ok()) return image.status();
  const Value* const x_value = &*image;
  const Value* const* x = &x_value;
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (in.size() != 4) return Unsupported(node, "only [1,C,H,W] input is supported");
  return AddOp(node, RawOpKind::kCanonical, OpKind::kGlobalAvgPool, {(*x)->tensor},
               {1, in[1], 1, 1})
      .status();
}

absl::Status Importer::ConvertGemm(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  auto b = ConstantInput(node, 1, false);
  if (!b.ok()) return b.status();
  auto trans_a = AttrInt(node, "transA", 0);
  auto trans_b = AttrInt(node, "transB", 0);
  auto alpha = AttrFloat(node, "alpha", 1.0f);
  auto beta = AttrFloat(node, "beta", 1.0f);
  for (const absl::Status& s :
       {trans_a.status(), trans_b.status(), alpha.status(), beta.status()}) {
    if (!s.ok()) return s;
  }
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (in.size() != 2 || *trans_a != 0) {
    return Unsupported(
        node, absl::StrCat("expects A of shape [M,K] without transA, got ", DimsString(in)));
  }
  if (in[0] != 1 || !(*x)->channels_last) {
    ConstPtr bias;
    if (HasInput(node, 2)) {
      auto c = ConstantInput(node, 2, false);
      if (!c.ok()) return c.status();
      bias = *c;
    }
    return FullyConnectedRows(node, **x, **b, *trans_b != 0, *alpha, bias.get(), *beta);
  }
  const ConstValue& weight = **b;
  if (weight.dims.size() != 2 || weight.dtype != TensorProto::FLOAT) {
    return NodeError(node, absl::StrCat("B '", weight.name, "' must be a float32 matrix, got ",
                                        DimsString(weight.dims)));
  }
  const int64_t k = *trans_b ? weight.dims[1] : weight.dims[0];
  const int64_t n = *trans_b ? weight.dims[0] : weight.dims[1];
  if (k != in[1]) {
    return NodeError(node, absl::StrCat("A ", DimsString(in), " and B ", DimsString(weight.dims),
                                        (*trans_b ? " (transB)" : ""), " do not multiply"));
  }
  FullyConnectedAttrs attrs;
  const float a = *alpha;
  attrs.weight = AddConstant(
      absl::StrCat(weight.name, "|fc", *trans_b, "|", a), weight.name, {n, k}, weight.has_data,
      [&] {
        std::vector<float> out(static_cast<size_t>(n * k));
        for (int64_t o = 0; o < n; ++o)
          for (int64_t i = 0; i < k; ++i)
            out[static_cast<size_t>(o * k + i)] =
                a * weight.floats[static_cast<size_t>(*trans_b ? o * k + i : i * n + o)];
        return out;
      });
  if (HasInput(node, 2)) {
    auto c = ConstantInput(node, 2, false);
    if (!c.ok()) return c.status();
    const ConstValue& bias = **c;
    const int64_t count = bias.Elements();
    if (bias.dtype != TensorProto::FLOAT || (count != n && count != 1) || bias.dims.size() > 2) {
      return NodeError(node, absl::StrCat("C '", bias.name, "' must be float32 [", n,
                                          "] or a scalar, got ", DimsString(bias.dims)));
    }
    const float bt = *beta;
    attrs.bias = AddConstant(
        absl::StrCat(bias.name, "|bias", n, "|", bt), bias.name, {n}, bias.has_data, [&] {
          std::vector<float> out(static_cast<size_t>(n));
          for (int64_t o = 0; o < n; ++o)
            out[static_cast<size_t>(o)] = bt * bias.floats[static_cast<size_t>(count == 1 ? 0 : o)];
          return out;
        });
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kFullyConnected, {(*x)->tensor}, {1, n}, attrs)
      .status();
}

absl::Status Importer::ConvertMatMul(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto va = InputValue(node, 0);
  if (!va.ok()) return va.status();
  auto vb = InputValue(node, 1);
  if (!vb.ok()) return vb.status();
  if ((*va)->is_constant() && (*vb)->is_constant()) {
    return Unsupported(node, "MatMul of two constants");
  }
  if ((*va)->is_constant() || !(*vb)->is_constant() || (*vb)->constant->dims.size() != 2) {
    return MatMulOfActivations(node, **va, **vb);
  }
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  auto b = ConstantInput(node, 1, false);
  if (!b.ok()) return b.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  const ConstValue& weight = **b;
  if (in.size() != 2 || in[0] != 1) {
    return FullyConnectedRows(node, **x, weight, false, 1.0f, nullptr, 1.0f);
  }
  if (weight.dims.size() != 2 || weight.dtype != TensorProto::FLOAT || weight.dims[0] != in[1]) {
    return NodeError(node, absl::StrCat("B '", weight.name, "' must be a float32 [", in[1],
                                        ",N] matrix, got ", DimsString(weight.dims)));
  }
  const int64_t k = weight.dims[0], n = weight.dims[1];
  FullyConnectedAttrs attrs;
  attrs.weight =
      AddConstant(absl::StrCat(weight.name, "|fc0|1"), weight.name, {n, k}, weight.has_data, [&] {
        std::vector<float> out(static_cast<size_t>(n * k));
        for (int64_t o = 0; o < n; ++o)
          for (int64_t i = 0; i < k; ++i)
            out[static_cast<size_t>(o * k + i)] = weight.floats[static_cast<size_t>(i * n + o)];
        return out;
      });
  return AddOp(node, RawOpKind::kCanonical, OpKind::kFullyConnected, {(*x)->tensor}, {1, n}, attrs)
      .status();
}

absl::Status Importer::ConvertBatchNorm(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  if (auto v = ActivationInput(node, 0); v.ok() && (*v)->onnx_dims.size() == 3) {
    return ConvertConv1d(node, **v);
  }
  auto image = ImageInput(node, 0);
  if (!image.ok()) return image.status();
  const Value* const x_value = &*image;
  const Value* const* x = &x_value;
  if ((*x)->onnx_dims.size() != 4 && (*x)->onnx_dims.size() != 2) {
    return Unsupported(node, absl::StrCat("BatchNormalization of ", DimsString((*x)->onnx_dims),
                                          "; expects [1,C,H,W] or [N,C]"));
  }
  auto training = AttrInt(node, "training_mode", 0);
  auto spatial = AttrInt(node, "spatial", 1);
  auto epsilon = AttrFloat(node, "epsilon", 1e-5f);
  for (const absl::Status& s : {training.status(), spatial.status(), epsilon.status()}) {
    if (!s.ok()) return s;
  }
  if (*training != 0 || *spatial != 1) {
    return Unsupported(node, "only inference-mode, spatial BatchNormalization is supported");
  }
  if (*epsilon < 0) return NodeError(node, "epsilon must not be negative");
  const int64_t channels = (*x)->onnx_dims[1];
  ConstantId ids[4];
  for (int i = 0; i < 4; ++i) {
    auto c = ConstantInput(node, i + 1, false);
    if (!c.ok()) return c.status();
    if ((*c)->dims != std::vector<int64_t>{channels} || (*c)->dtype != TensorProto::FLOAT) {
      return NodeError(node, absl::StrCat("parameter '", (*c)->name, "' must be float32 [",
                                          channels, "], got ", DimsString((*c)->dims)));
    }
    ids[i] = VectorConstant(**c, channels);
  }
  auto out = AddOp(node, RawOpKind::kBatchNorm, OpKind::kActivation, {(*x)->tensor},
                   (*x)->onnx_dims, {}, (*x)->channels_last);
  if (!out.ok()) return out.status();
  graph_.ops.back().batch_norm = BatchNormParams{ids[0], ids[1], ids[2], ids[3], *epsilon};
  return absl::OkStatus();
}

absl::Status Importer::ConvertActivation(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  Activation act;
  const std::string& type = node.op_type();
  if (type == "Relu") {
    act.kind = ActivationKind::kRelu;
  } else if (type == "Sigmoid") {
    act.kind = ActivationKind::kSigmoid;
  } else if (type == "HardSwish") {
    act.kind = ActivationKind::kHardSwish;
  } else if (type == "HardSigmoid") {
    act.kind = ActivationKind::kHardSigmoid;
    auto alpha = AttrFloat(node, "alpha", 0.2f);
    auto beta = AttrFloat(node, "beta", 0.5f);
    if (!alpha.ok()) return alpha.status();
    if (!beta.ok()) return beta.status();
    act.alpha = *alpha;
    act.beta = *beta;
  } else {  // Clip
    act.kind = ActivationKind::kClip;
    if (opset_ < 11) {
      auto lo = AttrFloat(node, "min", act.min);
      auto hi = AttrFloat(node, "max", act.max);
      if (!lo.ok()) return lo.status();
      if (!hi.ok()) return hi.status();
      act.min = *lo;
      act.max = *hi;
    } else {
      for (int i = 1; i <= 2; ++i) {
        if (!HasInput(node, i)) continue;
        auto bound = ConstantInput(node, i, true);
        if (!bound.ok()) return bound.status();
        if ((*bound)->Elements() != 1 || !(*bound)->IsFloat()) {
          return NodeError(node,
                           absl::StrCat("bound '", (*bound)->name, "' must be a float scalar"));
        }
        (i == 1 ? act.min : act.max) = static_cast<float>((*bound)->At(0));
      }
    }
    if (std::isnan(act.min) || std::isnan(act.max) || act.min > act.max) {
      return NodeError(node, absl::StrCat("invalid bounds min=", act.min, " max=", act.max));
    }
  }
  auto out = AddOp(node, RawOpKind::kCanonical, OpKind::kActivation, {(*x)->tensor},
                   (*x)->onnx_dims, {}, (*x)->channels_last);
  if (!out.ok()) return out.status();
  graph_.ops.back().op.activation = act;
  return absl::OkStatus();
}

absl::Status Importer::ConvertSoftmax(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  const auto rank = static_cast<int64_t>(in.size());
  auto axis = AttrInt(node, "axis", opset_ >= 13 ? -1 : 1);
  if (!axis.ok()) return axis.status();
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  // Softmax runs over the last physical axis: the channels of a channels-last image, the last
  // axis of a row-major tensor. Before opset 13 it flattened all axes from `axis`.
  if ((*x)->channels_last && a == 1 && (opset_ >= 13 || in[2] * in[3] == 1)) {
    return AddOp(node, RawOpKind::kCanonical, OpKind::kSoftmax, {(*x)->tensor}, in, {}, true)
        .status();
  }
  const bool last = a == rank - 1 || (opset_ < 13 && a == 1 && rank == 2);
  if (!last) {
    return Unsupported(node, absl::StrCat("softmax over axis ", *axis, " of ", DimsString(in),
                                          "; psched computes it over the last axis"));
  }
  auto r = AsRowMajor(node, **x);
  if (!r.ok()) return r.status();
  return AddOp(node, RawOpKind::kCanonical, OpKind::kSoftmax, {r->tensor}, in, {}, false).status();
}

absl::Status Importer::ConvertElementwise(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto a = InputValue(node, 0);
  if (!a.ok()) return a.status();
  auto b = InputValue(node, 1);
  if (!b.ok()) return b.status();
  const Value& va = **a;
  const Value& vb = **b;
  if (va.is_constant() && vb.is_constant()) {
    auto folded = FoldBinary(*va.constant, *vb.constant, node.op_type());
    if (!folded.ok()) return NodeError(node, folded.status().message());
    return DefineConstant(node, 0, *std::move(folded));
  }
  const OpKind kind = node.op_type() == "Add"   ? OpKind::kAdd
                      : node.op_type() == "Mul" ? OpKind::kMul
                      : node.op_type() == "Sub" ? OpKind::kSub
                                                : OpKind::kDiv;
  return BinaryOp(node, kind, va, vb);
}

absl::Status Importer::ConvertDiv(const NodeProto& node) {
  auto a = InputValue(node, 0);
  if (!a.ok()) return a.status();
  auto b = InputValue(node, 1);
  if (!b.ok()) return b.status();
  if (!(*a)->is_constant() || !(*b)->is_constant()) return ConvertElementwise(node);
  auto folded = FoldBinary(*(*a)->constant, *(*b)->constant, "Div");
  if (!folded.ok()) return NodeError(node, folded.status().message());
  return DefineConstant(node, 0, *std::move(folded));
}

}  // namespace psched::model::onnx_importer
