#include "executor/reference/reference_kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "executor/common/activation.h"
#include "executor/reference/reference_tensor_ops.h"
#include "model/op_validation.h"

namespace psched::executor::reference {
namespace {

using model::Graph;
using model::Op;
using model::OpId;
using model::OpKind;
using model::Shape;

void Conv2d(const Graph& graph, const Op& op, const Shape& in, const Shape& out, const float* x,
            float* y) {
  const auto& conv = std::get<model::ConvAttrs>(op.attrs);
  const model::Window2d& w = conv.window;
  const std::vector<float>& filter = graph.constants[static_cast<size_t>(conv.filter)].data;
  const float* bias = conv.bias == model::kInvalidId
                          ? nullptr
                          : graph.constants[static_cast<size_t>(conv.bias)].data.data();
  const int64_t cin_g = in.c / conv.groups;
  const int64_t cout_g = out.c / conv.groups;
  for (int64_t oh = 0; oh < out.h; ++oh) {
    for (int64_t ow = 0; ow < out.w; ++ow) {
      for (int64_t oc = 0; oc < out.c; ++oc) {
        const int64_t group = oc / cout_g;
        double acc = bias ? bias[oc] : 0.0;
        for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
          const int64_t ih = oh * w.stride_h - w.pad_top + kh * w.dilation_h;
          if (ih < 0 || ih >= in.h) continue;
          for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
            const int64_t iw = ow * w.stride_w - w.pad_left + kw * w.dilation_w;
            if (iw < 0 || iw >= in.w) continue;
            const float* px = x + (ih * in.w + iw) * in.c + group * cin_g;
            const float* pf = filter.data() + ((oc * w.kernel_h + kh) * w.kernel_w + kw) * cin_g;
            for (int64_t ic = 0; ic < cin_g; ++ic) acc += double{px[ic]} * pf[ic];
          }
        }
        y[(oh * out.w + ow) * out.c + oc] = static_cast<float>(acc);
      }
    }
  }
}

// Output pixel oh receives input row ih through tap kh when oh = ih * stride - pad_top +
// kh * dilation; rows past the cropped transposed output (output_padding) get only the bias.
void ConvTranspose2d(const Graph& graph, const Op& op, const Shape& in, const Shape& out,
                     const float* x, float* y) {
  const auto& conv = std::get<model::ConvAttrs>(op.attrs);
  const model::Window2d& w = conv.window;
  const std::vector<float>& filter = graph.constants[static_cast<size_t>(conv.filter)].data;
  const float* bias = conv.bias == model::kInvalidId
                          ? nullptr
                          : graph.constants[static_cast<size_t>(conv.bias)].data.data();
  const int64_t cin_g = in.c / conv.groups;
  const int64_t cout_g = out.c / conv.groups;
  for (int64_t oh = 0; oh < out.h; ++oh) {
    for (int64_t ow = 0; ow < out.w; ++ow) {
      for (int64_t oc = 0; oc < out.c; ++oc) {
        const int64_t group = oc / cout_g;
        double acc = bias ? bias[oc] : 0.0;
        for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
          const int64_t th = oh + w.pad_top - kh * w.dilation_h;
          if (th < 0 || th % w.stride_h != 0 || th / w.stride_h >= in.h) continue;
          const int64_t ih = th / w.stride_h;
          for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
            const int64_t tw = ow + w.pad_left - kw * w.dilation_w;
            if (tw < 0 || tw % w.stride_w != 0 || tw / w.stride_w >= in.w) continue;
            const int64_t iw = tw / w.stride_w;
            const float* px = x + (ih * in.w + iw) * in.c + group * cin_g;
            const float* pf = filter.data() + ((oc * w.kernel_h + kh) * w.kernel_w + kw) * cin_g;
            for (int64_t ic = 0; ic < cin_g; ++ic) acc += double{px[ic]} * pf[ic];
          }
        }
        y[(oh * out.w + ow) * out.c + oc] = static_cast<float>(acc);
      }
    }
  }
}

void FullyConnected(const Graph& graph, const Op& op, const Shape& in, const Shape& out,
                    const float* x, float* y) {
  const auto& fc = std::get<model::FullyConnectedAttrs>(op.attrs);
  const std::vector<float>& weight = graph.constants[static_cast<size_t>(fc.weight)].data;
  const float* bias = fc.bias == model::kInvalidId
                          ? nullptr
                          : graph.constants[static_cast<size_t>(fc.bias)].data.data();
  // One row per pixel of the view (a row-major [rows, K] input is rows x 1 pixels).
  for (int64_t r = 0; r < out.h * out.w; ++r) {
    for (int64_t o = 0; o < out.c; ++o) {
      double acc = bias ? bias[o] : 0.0;
      for (int64_t i = 0; i < in.c; ++i) acc += double{x[r * in.c + i]} * weight[o * in.c + i];
      y[r * out.c + o] = static_cast<float>(acc);
    }
  }
}

// Number of window taps along one axis whose input index lies in [lo, hi).
int64_t TapsWithin(int64_t start, int32_t kernel, int32_t dilation, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t i = start + k * dilation;
    if (i >= lo && i < hi) ++n;
  }
  return n;
}

void Pool(const Op& op, const Shape& in, const Shape& out, const float* x, float* y) {
  const auto& pool = std::get<model::PoolAttrs>(op.attrs);
  const model::Window2d& w = pool.window;
  const bool is_max = op.kind == OpKind::kMaxPool;
  for (int64_t oh = 0; oh < out.h; ++oh) {
    const int64_t h0 = oh * w.stride_h - w.pad_top;
    for (int64_t ow = 0; ow < out.w; ++ow) {
      const int64_t w0 = ow * w.stride_w - w.pad_left;
      for (int64_t c = 0; c < out.c; ++c) {
        double acc = is_max ? -std::numeric_limits<double>::infinity() : 0.0;
        for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
          const int64_t ih = h0 + kh * w.dilation_h;
          if (ih < 0 || ih >= in.h) continue;
          for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
            const int64_t iw = w0 + kw * w.dilation_w;
            if (iw < 0 || iw >= in.w) continue;
            const double v = x[(ih * in.w + iw) * in.c + c];
            acc = is_max ? std::max(acc, v) : acc + v;
          }
        }
        if (!is_max) {
          // count_include_pad counts taps on declared padding, never the ceil_mode extension.
          const int64_t count = pool.count_include_pad
                                    ? TapsWithin(h0, w.kernel_h, w.dilation_h, -w.pad_top,
                                                 in.h + pool.declared_pad_bottom) *
                                          TapsWithin(w0, w.kernel_w, w.dilation_w, -w.pad_left,
                                                     in.w + pool.declared_pad_right)
                                    : TapsWithin(h0, w.kernel_h, w.dilation_h, 0, in.h) *
                                          TapsWithin(w0, w.kernel_w, w.dilation_w, 0, in.w);
          acc = count > 0 ? acc / static_cast<double>(count) : 0.0;
        }
        y[(oh * out.w + ow) * out.c + c] = static_cast<float>(acc);
      }
    }
  }
}

void GlobalAvgPool(const Shape& in, const float* x, float* y) {
  const int64_t hw = in.h * in.w;
  for (int64_t c = 0; c < in.c; ++c) {
    double acc = 0.0;
    for (int64_t p = 0; p < hw; ++p) acc += x[p * in.c + c];
    y[c] = static_cast<float>(acc / static_cast<double>(hw));
  }
}

void Concat(const Graph& graph, const Op& op, std::span<const float* const> acts, const Shape& out,
            float* y) {
  int64_t offset = 0;
  for (size_t i = 0; i < acts.size(); ++i) {
    const Shape& s = graph.tensor(op.inputs[i]).shape;
    for (int64_t p = 0; p < out.h * out.w; ++p) {
      std::copy_n(acts[i] + p * s.c, s.c, y + p * out.c + offset);
    }
    offset += s.c;
  }
}

void Pad(const Op& op, const Shape& in, const Shape& out, const float* x, float* y) {
  const auto& pad = std::get<model::PadAttrs>(op.attrs);
  std::fill_n(y, out.Elements(), pad.value);
  for (int64_t h = 0; h < in.h; ++h) {
    for (int64_t w = 0; w < in.w; ++w) {
      std::copy_n(x + (h * in.w + w) * in.c, in.c,
                  y + ((h + pad.top) * out.w + w + pad.left) * out.c + pad.channels_before);
    }
  }
}

// ONNX Resize: the input coordinate an output coordinate maps to.
double SourceCoordinate(model::CoordinateTransform transform, int64_t x_out, double scale,
                        int64_t in, int64_t out) {
  const double x = static_cast<double>(x_out);
  switch (transform) {
    case model::CoordinateTransform::kHalfPixel:
      return (x + 0.5) / scale - 0.5;
    case model::CoordinateTransform::kPytorchHalfPixel:
      return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
    case model::CoordinateTransform::kAsymmetric:
      return x / scale;
    case model::CoordinateTransform::kAlignCorners:
      return out > 1 ? x * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  }
  return x / scale;
}

int64_t NearestIndex(model::NearestRounding rounding, double x, int64_t in) {
  const double fl = std::floor(x);
  const bool half = x - fl == 0.5;
  double r = 0.0;
  switch (rounding) {
    case model::NearestRounding::kRoundPreferFloor:
      r = half ? fl : std::round(x);
      break;
    case model::NearestRounding::kRoundPreferCeil:
      r = half ? fl + 1.0 : std::round(x);
      break;
    case model::NearestRounding::kFloor:
      r = fl;
      break;
    case model::NearestRounding::kCeil:
      r = std::ceil(x);
      break;
  }
  return std::clamp(static_cast<int64_t>(r), int64_t{0}, in - 1);
}

struct LinearTap {
  int64_t i0 = 0, i1 = 0;
  double frac = 0.0;  // weight of i1
};

LinearTap LinearIndex(double x, int64_t in) {
  x = std::clamp(x, 0.0, static_cast<double>(in - 1));
  LinearTap tap;
  tap.i0 = static_cast<int64_t>(std::floor(x));
  tap.i1 = std::min(tap.i0 + 1, in - 1);
  tap.frac = x - static_cast<double>(tap.i0);
  return tap;
}

void Resize(const Op& op, const Shape& in, const Shape& out, const float* x, float* y) {
  const auto& resize = std::get<model::ResizeAttrs>(op.attrs);
  const double scale_h = resize.scale_h > 0.0f ? resize.scale_h : static_cast<double>(out.h) / in.h;
  const double scale_w = resize.scale_w > 0.0f ? resize.scale_w : static_cast<double>(out.w) / in.w;
  for (int64_t oh = 0; oh < out.h; ++oh) {
    const double sh = SourceCoordinate(resize.transform, oh, scale_h, in.h, out.h);
    for (int64_t ow = 0; ow < out.w; ++ow) {
      const double sw = SourceCoordinate(resize.transform, ow, scale_w, in.w, out.w);
      float* dst = y + (oh * out.w + ow) * out.c;
      if (resize.mode == model::ResizeMode::kNearest) {
        const int64_t ih = NearestIndex(resize.rounding, sh, in.h);
        const int64_t iw = NearestIndex(resize.rounding, sw, in.w);
        std::copy_n(x + (ih * in.w + iw) * in.c, in.c, dst);
        continue;
      }
      const LinearTap th = LinearIndex(sh, in.h);
      const LinearTap tw = LinearIndex(sw, in.w);
      for (int64_t c = 0; c < out.c; ++c) {
        auto at = [&](int64_t h, int64_t w) { return double{x[(h * in.w + w) * in.c + c]}; };
        const double top = at(th.i0, tw.i0) * (1.0 - tw.frac) + at(th.i0, tw.i1) * tw.frac;
        const double bottom = at(th.i1, tw.i0) * (1.0 - tw.frac) + at(th.i1, tw.i1) * tw.frac;
        dst[c] = static_cast<float>(top * (1.0 - th.frac) + bottom * th.frac);
      }
    }
  }
}

void Flatten(const Shape& in, const float* x, float* y) {
  const int64_t hw = in.h * in.w;
  for (int64_t p = 0; p < hw; ++p) {
    for (int64_t c = 0; c < in.c; ++c) y[c * hw + p] = x[p * in.c + c];
  }
}

void Softmax(const Shape& in, const float* x, float* y) {
  for (int64_t p = 0; p < in.h * in.w; ++p) {
    const float* src = x + p * in.c;
    float* dst = y + p * in.c;
    const float max = *std::max_element(src, src + in.c);
    double sum = 0.0;
    for (int64_t c = 0; c < in.c; ++c) sum += std::exp(double{src[c]} - max);
    for (int64_t c = 0; c < in.c; ++c) {
      dst[c] = static_cast<float>(std::exp(double{src[c]} - max) / sum);
    }
  }
}

}  // namespace

absl::Status RunOp(const Graph& graph, OpId id, std::span<const float* const> inputs,
                   float* output) {
  if (auto s = model::ValidateOp(graph, id); !s.ok()) return s;
  const Op& op = graph.op(id);
  const std::vector<model::TensorId> acts = graph.ActivationInputs(id);
  if (inputs.size() != acts.size()) {
    return model::InvalidOpError(
        graph, id, absl::StrCat("got ", inputs.size(), " input buffers, expected ", acts.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (inputs[i] == nullptr)
      return model::InvalidOpError(graph, id, absl::StrCat("input ", i, " is null"));
  }
  if (output == nullptr) return model::InvalidOpError(graph, id, "output is null");
  const Shape& in = graph.tensor(acts[0]).shape;
  const Shape& out = graph.output_shape(id);
  const float* x = inputs[0];
  if (internal::IsTensorKind(op)) {
    internal::RunTensorOp(graph, id, inputs, output);
  } else {
  switch (op.kind) {
    case OpKind::kConv2d:
      Conv2d(graph, op, in, out, x, output);
      break;
    case OpKind::kConvTranspose2d:
      ConvTranspose2d(graph, op, in, out, x, output);
      break;
    case OpKind::kFullyConnected:
      FullyConnected(graph, op, in, out, x, output);
      break;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      Pool(op, in, out, x, output);
      break;
    case OpKind::kGlobalAvgPool:
      GlobalAvgPool(in, x, output);
      break;
    case OpKind::kConcat:
      Concat(graph, op, inputs, out, output);
      break;
    case OpKind::kPad:
      Pad(op, in, out, x, output);
      break;
    case OpKind::kResize:
      Resize(op, in, out, x, output);
      break;
    case OpKind::kFlatten:
      Flatten(in, x, output);
      break;
    case OpKind::kActivation:
      std::copy_n(x, in.Elements(), output);
      break;
    case OpKind::kSoftmax:
      Softmax(in, x, output);
      break;
    default:
      return model::InvalidOpError(graph, id, "no reference kernel");
  }
  }
  if (op.activation.kind != model::ActivationKind::kNone) {
    for (int64_t i = 0; i < out.Elements(); ++i) {
      output[i] = ApplyActivation(op.activation, output[i]);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<float>>> RunGraph(
    const Graph& graph, const std::vector<std::vector<float>>& inputs_nhwc) {
  if (inputs_nhwc.size() != graph.inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("graph '", graph.name, "' takes ",
                                                   graph.inputs.size(), " inputs, got ",
                                                   inputs_nhwc.size()));
  }
  std::vector<std::vector<float>> values(graph.tensors.size());
  for (size_t i = 0; i < inputs_nhwc.size(); ++i) {
    const model::GraphIO& io = graph.inputs[i];
    if (io.tensor < 0 || static_cast<size_t>(io.tensor) >= graph.tensors.size()) {
      return absl::InvalidArgumentError(absl::StrCat("graph input '", io.name, "' names tensor id ",
                                                     io.tensor, ", out of range"));
    }
    const int64_t expected = graph.tensor(io.tensor).shape.Elements();
    if (static_cast<int64_t>(inputs_nhwc[i].size()) != expected) {
      return absl::InvalidArgumentError(absl::StrCat("graph input '", io.name, "' holds ",
                                                     inputs_nhwc[i].size(), " floats, expected ",
                                                     expected));
    }
    values[static_cast<size_t>(io.tensor)] = inputs_nhwc[i];
  }
  for (OpId id = 0; id < static_cast<OpId>(graph.ops.size()); ++id) {
    if (auto s = model::ValidateOp(graph, id); !s.ok()) return s;
    std::vector<const float*> ptrs;
    for (model::TensorId t : graph.ActivationInputs(id)) {
      const std::vector<float>& v = values[static_cast<size_t>(t)];
      if (static_cast<int64_t>(v.size()) != graph.tensor(t).shape.Elements()) {
        return model::InvalidOpError(graph, id,
                                     absl::StrCat("input tensor '", graph.tensor(t).name,
                                                  "' is not computed before the op (ops out of "
                                                  "topological order or a missing graph input)"));
      }
      ptrs.push_back(v.data());
    }
    std::vector<float>& out = values[static_cast<size_t>(graph.op(id).output)];
    out.assign(static_cast<size_t>(graph.output_shape(id).Elements()), 0.0f);
    if (auto s = RunOp(graph, id, ptrs, out.data()); !s.ok()) return s;
  }
  std::vector<std::vector<float>> outputs;
  for (const model::GraphIO& io : graph.outputs) {
    if (io.tensor < 0 || static_cast<size_t>(io.tensor) >= graph.tensors.size() ||
        values[static_cast<size_t>(io.tensor)].empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", io.name, "' is never computed"));
    }
    outputs.push_back(values[static_cast<size_t>(io.tensor)]);
  }
  return outputs;
}

}  // namespace psched::executor::reference
