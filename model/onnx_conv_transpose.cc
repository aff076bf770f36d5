// ONNX ConvTranspose -> kConvTranspose2d: the output extent and the pads resolved from pads,
// auto_pad or output_shape, and the [C, M/group, kH, kW] weight moved to the OHWI layout
// kConv2d uses (model/graph.h, ConvAttrs).
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {
namespace {

int64_t FloorDiv2(int64_t v) { return v >= 0 ? v / 2 : -((-v + 1) / 2); }

}  // namespace

// [C, M/group, kH, kW] (C = group * C/group) -> [M][kH][kW][C/group], output channel
// g * M/group + m.
ConstantId Importer::TransposedFilterConstant(const ConstValue& w, int64_t groups) {
  const int64_t cin = w.dims[0], m = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  const int64_t ci = cin / groups;
  return AddConstant(absl::StrCat(w.name, "|convt_ohwi", groups), w.name, {groups * m, kh, kw, ci},
                     w.has_data, [&] {
                       std::vector<float> out(w.floats.size());
                       for (int64_t g = 0; g < groups; ++g)
                         for (int64_t c = 0; c < ci; ++c)
                           for (int64_t o = 0; o < m; ++o)
                             for (int64_t y = 0; y < kh; ++y)
                               for (int64_t x = 0; x < kw; ++x)
                                 out[static_cast<size_t>(
                                     (((g * m + o) * kh + y) * kw + x) * ci + c)] =
                                     w.floats[static_cast<size_t>(
                                         (((g * ci + c) * m + o) * kh + y) * kw + x)];
                       return out;
                     });
}

absl::Status Importer::ConvertConvTranspose(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x_raw = ActivationInput(node, 0);
  if (!x_raw.ok()) return x_raw.status();
  const std::vector<int64_t> in = (*x_raw)->onnx_dims;
  if (in.size() != 4) {
    return Unsupported(node, absl::StrCat("only 2-D ConvTranspose on [1,C,H,W] is supported, "
                                          "input is ",
                                          DimsString(in)));
  }
  if (in[0] != 1) {
    return Unsupported(node, absl::StrCat("input ", DimsString(in), " has batch ", in[0],
                                          "; psched runs batch 1"));
  }
  auto w = ConstantInput(node, 1, false);
  if (!w.ok()) return w.status();
  const ConstValue& weight = **w;
  if (weight.dims.size() != 4 || weight.dtype != TensorProto::FLOAT) {
    return NodeError(node, absl::StrCat("weight '", weight.name,
                                        "' must be a float32 [C,M/group,kH,kW] tensor, got dims ",
                                        DimsString(weight.dims), " of type ",
                                        DtypeName(weight.dtype)));
  }
  auto group = AttrInt(node, "group", 1);
  auto kernel = AttrInts(node, "kernel_shape", {weight.dims[2], weight.dims[3]});
  auto strides = AttrInts(node, "strides", {1, 1});
  auto dilations = AttrInts(node, "dilations", {1, 1});
  auto pads = AttrInts(node, "pads", {0, 0, 0, 0});
  auto output_padding = AttrInts(node, "output_padding", {0, 0});
  auto output_shape = AttrInts(node, "output_shape", {});
  auto auto_pad = AttrString(node, "auto_pad", "NOTSET");
  for (const absl::Status& s :
       {group.status(), kernel.status(), strides.status(), dilations.status(), pads.status(),
        output_padding.status(), output_shape.status(), auto_pad.status()}) {
    if (!s.ok()) return s;
  }
  const int64_t limit = options_.max_dim;
  if (*group < 1 || *group > limit || in[1] != weight.dims[0] || in[1] % *group != 0 ||
      weight.dims[1] < 1) {
    return NodeError(node, absl::StrCat("input channels ", in[1], ", weight ",
                                        DimsString(weight.dims), " and group ", *group,
                                        " do not agree (weight is [C,M/group,kH,kW])"));
  }
  if (*kernel != std::vector<int64_t>{weight.dims[2], weight.dims[3]}) {
    return NodeError(node, absl::StrCat("kernel_shape ", DimsString(*kernel),
                                        " disagrees with weight ", DimsString(weight.dims)));
  }
  if (strides->size() != 2 || dilations->size() != 2 || pads->size() != 4 ||
      output_padding->size() != 2) {
    return NodeError(node, absl::StrCat("expects 2 strides, 2 dilations, 4 pads and 2 "
                                        "output_padding values, got ",
                                        DimsString(*strides), ", ", DimsString(*dilations), ", ",
                                        DimsString(*pads), ", ", DimsString(*output_padding)));
  }
  // output_shape names the spatial extent; exporters also write the whole [N,C,H,W].
  std::vector<int64_t> target = *output_shape;
  if (target.size() == 4) target.erase(target.begin(), target.begin() + 2);
  if (!target.empty() && target.size() != 2) {
    return NodeError(node, absl::StrCat("output_shape must have 2 (or 4) values, got ",
                                        DimsString(*output_shape)));
  }
  for (int64_t v : {weight.dims[2], weight.dims[3], (*strides)[0], (*strides)[1], (*dilations)[0],
                    (*dilations)[1]}) {
    if (v < 1 || v > limit) {
      return NodeError(
          node, absl::StrCat("kernel, stride and dilation must be in [1, ", limit, "], got ", v));
    }
  }
  for (const std::vector<int64_t>* values : {&*pads, &*output_padding, &target}) {
    for (int64_t v : *values) {
      if (v < 0 || v > limit) {
        return NodeError(node, absl::StrCat("pads, output_padding and output_shape must be in "
                                            "[0, ",
                                            limit, "], got ", DimsString(*values)));
      }
    }
  }
  const std::string& mode = *auto_pad;
  const bool same = mode == "SAME_UPPER" || mode == "SAME_LOWER";
  if (!same && mode != "VALID" && mode != "NOTSET" && !mode.empty()) {
    return NodeError(node, absl::StrCat("unknown auto_pad '", mode, "'"));
  }
  ConvAttrs attrs;
  int64_t begin[2], end[2], extra[2], out[2];
  for (int a = 0; a < 2; ++a) {
    const auto i = static_cast<size_t>(a);
    const int64_t effective = (weight.dims[2 + i] - 1) * (*dilations)[i] + 1;
    const int64_t full = (*strides)[i] * (in[2 + i] - 1) + effective + (*output_padding)[i];
    extra[a] = (*output_padding)[i];
    if (!target.empty() || same) {
      // The spec's rule: SAME_UPPER puts the odd pixel at the end, the others at the start.
      const int64_t want = target.empty() ? in[2 + i] * (*strides)[i] : target[i];
      const int64_t total = full - want;
      begin[a] = mode == "SAME_UPPER" ? FloorDiv2(total) : total - FloorDiv2(total);
      end[a] = total - begin[a];
      if (begin[a] < 0) {
        return Unsupported(node, absl::StrCat("output extent ", want, " exceeds the transposed "
                                              "output ",
                                              full, " by more than its bottom/right padding"));
      }
      // An output larger than the transposed one grows at the bottom/right, as output_padding.
      if (end[a] < 0) {
        extra[a] -= end[a];
        end[a] = 0;
      }
    } else if (mode == "VALID") {
      begin[a] = end[a] = 0;
    } else {
      begin[a] = (*pads)[i];
      end[a] = (*pads)[i + 2];
    }
    out[a] = full - begin[a] - end[a] + (extra[a] - (*output_padding)[i]);
    if (out[a] < 1) {
      return NodeError(node, absl::StrCat("pads ", begin[a], " and ", end[a], " crop the whole ",
                                          full, "-pixel transposed output of input ",
                                          DimsString(in)));
    }
    if (begin[a] > limit || end[a] > limit || extra[a] > limit) {
      return NodeError(node, absl::StrCat("resolved pads ", begin[a], ", ", end[a],
                                          " and output_padding ", extra[a],
                                          " must be in [0, ", limit, "]"));
    }
  }
  Window2d& win = attrs.window;
  win.kernel_h = static_cast<int32_t>(weight.dims[2]);
  win.kernel_w = static_cast<int32_t>(weight.dims[3]);
  win.stride_h = static_cast<int32_t>((*strides)[0]);
  win.stride_w = static_cast<int32_t>((*strides)[1]);
  win.dilation_h = static_cast<int32_t>((*dilations)[0]);
  win.dilation_w = static_cast<int32_t>((*dilations)[1]);
  win.pad_top = static_cast<int32_t>(begin[0]);
  win.pad_left = static_cast<int32_t>(begin[1]);
  win.pad_bottom = static_cast<int32_t>(end[0]);
  win.pad_right = static_cast<int32_t>(end[1]);
  attrs.output_padding_h = static_cast<int32_t>(extra[0]);
  attrs.output_padding_w = static_cast<int32_t>(extra[1]);
  attrs.groups = static_cast<int32_t>(*group);
  const int64_t cout = weight.dims[1] * *group;
  auto image = ImageInput(node, 0);
  if (!image.ok()) return image.status();
  attrs.filter = TransposedFilterConstant(weight, *group);
  if (HasInput(node, 2)) {
    auto b = ConstantInput(node, 2, false);
    if (!b.ok()) return b.status();
    if ((*b)->dims != std::vector<int64_t>{cout} || (*b)->dtype != TensorProto::FLOAT) {
      return NodeError(node, absl::StrCat("bias '", (*b)->name, "' must be float32 [", cout,
                                          "], got ", DimsString((*b)->dims)));
    }
    attrs.bias = VectorConstant(**b, cout);
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kConvTranspose2d, {image->tensor},
               {1, cout, out[0], out[1]}, attrs)
      .status();
}

}  // namespace psched::model::onnx_importer
