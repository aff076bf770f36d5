// Hand-written CPU kernels for the ops XNNPACK (Debian's 2022-02 build) lacks or cannot
// express exactly: concat, pad, resize, flatten, standalone activations, softmax, and
// pooling variants it rejects (dilated padded windows, count_include_pad). All read and
// write strided views.
#include <pthreadpool.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "executor/common/activation.h"
#include "executor/cpu/cpu_threadpool.h"
#include "executor/cpu/kernel_base.h"

namespace psched::executor::cpu::internal {
namespace {

// Every hand kernel computes output rows; Run hands a multi-thread device's threads a band of
// rows each when the output is large enough for that to pay. A row slice (kRows) computes its
// rows [begin, end) of the output only.
class HandKernel : public KernelBase {
 public:
  HandKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
             pthreadpool_t threadpool, WorkSlice slice = WorkSlice::Whole())
      : KernelBase(graph, id, slice, layout), threadpool_(threadpool) {}

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    return BindViews(inputs, output);
  }
  absl::Status Run() override {
    const bool sliced = slice_.axis == model::SplitAxis::kRows;
    const int64_t first = sliced ? slice_.begin : 0;
    const int64_t rows = (sliced ? slice_.end : output_shape_.h) - first;
    const int64_t bands = RowBands(rows);
    if (bands <= 1) {
      ComputeRowsAndActivate(first, first + rows);
      return absl::OkStatus();
    }
    ParallelFor(threadpool_, static_cast<size_t>(bands), [&](size_t b) {
      const auto band = static_cast<int64_t>(b);
      ComputeRowsAndActivate(first + rows * band / bands, first + rows * (band + 1) / bands);
    });
    return absl::OkStatus();
  }
  std::string_view library() const override { return "psched"; }

 protected:
  // Writes output rows [h0, h1) (all of a 1-row output for kernels that are not row-wise).
  virtual void ComputeRows(int64_t h0, int64_t h1) = 0;

 private:
  // A band below this many output floats costs more than it saves: besides the hand-over, a
  // band reads what the other core's cache holds. Measured on hrnet's 16x56x56 nearest
  // resizes (50K floats): 12 us on one thread, 20-30 us in two bands.
  static constexpr int64_t kMinFloatsPerBand = 64 * 1024;

  int64_t RowBands(int64_t rows) const {
    if (threadpool_ == nullptr) return 1;
    const auto threads = static_cast<int64_t>(pthreadpool_get_threads_count(threadpool_));
    const int64_t floats = rows * output_shape_.w * output_shape_.c;
    return std::max<int64_t>(1, std::min<int64_t>({threads, rows, floats / kMinFloatsPerBand}));
  }

  void ComputeRowsAndActivate(int64_t h0, int64_t h1) {
    if (h0 >= h1) return;
    ComputeRows(h0, h1);
    ApplyActivationInPlace(activation_, TensorView{output_.pixel(h0, 0),
                                                   {h1 - h0, output_shape_.w, output_shape_.c},
                                                   output_.pixel_stride});
  }

  pthreadpool_t threadpool_;
};

// Inputs the arena planner placed inside the output already are skipped.
class ConcatKernel final : public HandKernel {
 public:
  using HandKernel::HandKernel;

 private:
  void ComputeRows(int64_t h0, int64_t h1) override {
    int64_t offset = 0;
    for (const TensorView& in : inputs_) {
      float* dst = output_.data + offset;
      offset += in.shape.c;
      if (in.data == dst && in.pixel_stride == output_.pixel_stride) continue;
      for (int64_t h = h0; h < h1; ++h) {
        for (int64_t w = 0; w < in.shape.w; ++w) {
          std::copy_n(in.pixel(h, w), in.shape.c, output_.pixel(h, w) + (dst - output_.data));
        }
      }
    }
  }
};

class PadKernel final : public HandKernel {
 public:
  PadKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
            pthreadpool_t threadpool)
      : HandKernel(graph, id, layout, threadpool),
        pad_(std::get<model::PadAttrs>(graph.op(id).attrs)) {}

 private:
  void ComputeRows(int64_t h0, int64_t h1) override {
    const TensorView& in = inputs_[0];
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = 0; w < output_shape_.w; ++w) {
        float* dst = output_.pixel(h, w);
        const int64_t ih = h - pad_.top, iw = w - pad_.left;
        if (ih < 0 || ih >= in.shape.h || iw < 0 || iw >= in.shape.w) {
          std::fill_n(dst, output_shape_.c, pad_.value);
          continue;
        }
        std::fill_n(dst, pad_.channels_before, pad_.value);
        std::copy_n(in.pixel(ih, iw), in.shape.c, dst + pad_.channels_before);
        std::fill_n(dst + pad_.channels_before + in.shape.c, pad_.channels_after, pad_.value);
      }
    }
  }

  model::PadAttrs pad_;
};

// One output coordinate's source taps along an axis: lo * (1 - frac) + hi * frac.
struct ResizeTap {
  int64_t lo = 0, hi = 0;
  float frac = 0.0f;
};

double SourceCoordinate(model::CoordinateTransform t, int64_t x, double scale, int64_t in,
                        int64_t out) {
  const double xd = static_cast<double>(x);
  switch (t) {
    case model::CoordinateTransform::kHalfPixel:
      return (xd + 0.5) / scale - 0.5;
    case model::CoordinateTransform::kPytorchHalfPixel:
      return out > 1 ? (xd + 0.5) / scale - 0.5 : 0.0;
    case model::CoordinateTransform::kAsymmetric:
      return xd / scale;
    case model::CoordinateTransform::kAlignCorners:
      return out > 1 ? xd * static_cast<double>(in - 1) / static_cast<double>(out - 1) : 0.0;
  }
  return xd / scale;
}

std::vector<ResizeTap> ResizeTaps(const model::ResizeAttrs& attrs, float attr_scale, int64_t in,
                                  int64_t out) {
  const double scale =
      attr_scale > 0.0f ? attr_scale : static_cast<double>(out) / static_cast<double>(in);
  std::vector<ResizeTap> taps(static_cast<size_t>(out));
  for (int64_t x = 0; x < out; ++x) {
    const double src = SourceCoordinate(attrs.transform, x, scale, in, out);
    ResizeTap& tap = taps[static_cast<size_t>(x)];
    if (attrs.mode == model::ResizeMode::kNearest) {
      const double fl = std::floor(src);
      double r = fl;
      switch (attrs.rounding) {
        case model::NearestRounding::kRoundPreferFloor:
          r = src - fl > 0.5 ? fl + 1.0 : fl;
          break;
        case model::NearestRounding::kRoundPreferCeil:
          r = src - fl >= 0.5 ? fl + 1.0 : fl;
          break;
        case model::NearestRounding::kFloor:
          break;
        case model::NearestRounding::kCeil:
          r = std::ceil(src);
          break;
      }
      tap.lo = tap.hi = std::clamp(static_cast<int64_t>(r), int64_t{0}, in - 1);
      continue;
    }
    const double clamped = std::clamp(src, 0.0, static_cast<double>(in - 1));
    tap.lo = static_cast<int64_t>(std::floor(clamped));
    tap.hi = std::min(tap.lo + 1, in - 1);
    tap.frac = static_cast<float>(clamped - static_cast<double>(tap.lo));
  }
  return taps;
}

class ResizeKernel final : public HandKernel {
 public:
  ResizeKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
               pthreadpool_t threadpool)
      : HandKernel(graph, id, layout, threadpool) {
    const auto& attrs = std::get<model::ResizeAttrs>(graph.op(id).attrs);
    rows_ = ResizeTaps(attrs, attrs.scale_h, input_shapes_[0].h, output_shape_.h);
    cols_ = ResizeTaps(attrs, attrs.scale_w, input_shapes_[0].w, output_shape_.w);
    nearest_ = attrs.mode == model::ResizeMode::kNearest;
  }

 private:
  void ComputeRows(int64_t h0, int64_t h1) override {
    const TensorView& in = inputs_[0];
    const int64_t channels = output_shape_.c;
    if (nearest_) {
      // One source pixel per output pixel: a copy, several times the bilinear blend's speed.
      for (int64_t h = h0; h < h1; ++h) {
        const int64_t ih = rows_[static_cast<size_t>(h)].lo;
        for (int64_t w = 0; w < output_shape_.w; ++w) {
          std::copy_n(in.pixel(ih, cols_[static_cast<size_t>(w)].lo), channels,
                      output_.pixel(h, w));
        }
      }
      return;
    }
    for (int64_t h = h0; h < h1; ++h) {
      const ResizeTap& r = rows_[static_cast<size_t>(h)];
      for (int64_t w = 0; w < output_shape_.w; ++w) {
        const ResizeTap& c = cols_[static_cast<size_t>(w)];
        const float* p00 = in.pixel(r.lo, c.lo);
        const float* p01 = in.pixel(r.lo, c.hi);
        const float* p10 = in.pixel(r.hi, c.lo);
        const float* p11 = in.pixel(r.hi, c.hi);
        float* dst = output_.pixel(h, w);
        for (int64_t k = 0; k < channels; ++k) {
          const float top = p00[k] + (p01[k] - p00[k]) * c.frac;
          const float bottom = p10[k] + (p11[k] - p10[k]) * c.frac;
          dst[k] = top + (bottom - top) * r.frac;
        }
      }
    }
  }

  std::vector<ResizeTap> rows_, cols_;
  bool nearest_ = false;
};

// NHWC -> NCHW-ordered vector, as ONNX Flatten sees the NCHW tensor.
class FlattenKernel final : public HandKernel {
 public:
  using HandKernel::HandKernel;

 private:
  // The output is one row: the whole NCHW-ordered vector.
  void ComputeRows(int64_t, int64_t) override {
    const TensorView& in = inputs_[0];
    const int64_t hw = in.shape.h * in.shape.w;
    for (int64_t p = 0; p < hw; ++p) {
      const float* src = in.data + p * in.pixel_stride;
      for (int64_t c = 0; c < in.shape.c; ++c) output_.data[c * hw + p] = src[c];
    }
  }
};

// A standalone activation: copy, then Run's activation pass.
class CopyKernel final : public HandKernel {
 public:
  using HandKernel::HandKernel;

 private:
  void ComputeRows(int64_t h0, int64_t h1) override {
    const TensorView& in = inputs_[0];
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = 0; w < in.shape.w; ++w) {
        std::copy_n(in.pixel(h, w), in.shape.c, output_.pixel(h, w));
      }
    }
  }
};

class SoftmaxKernel final : public HandKernel {
 public:
  using HandKernel::HandKernel;

 private:
  void ComputeRows(int64_t h0, int64_t h1) override {
    const TensorView& in = inputs_[0];
    const int64_t channels = in.shape.c;
    for (int64_t h = h0; h < h1; ++h) {
      for (int64_t w = 0; w < in.shape.w; ++w) {
        const float* src = in.pixel(h, w);
        float* dst = output_.pixel(h, w);
        const float max = *std::max_element(src, src + channels);
        float sum = 0.0f;
        for (int64_t c = 0; c < channels; ++c) {
          dst[c] = std::exp(src[c] - max);
          sum += dst[c];
        }
        const float inv = 1.0f / sum;
        for (int64_t c = 0; c < channels; ++c) dst[c] *= inv;
      }
    }
  }
};

int64_t TapsWithin(int64_t start, int32_t kernel, int32_t dilation, int64_t lo, int64_t hi) {
  int64_t n = 0;
  for (int64_t k = 0; k < kernel; ++k) {
    const int64_t i = start + k * dilation;
    n += i >= lo && i < hi;
  }
  return n;
}

class PoolKernel final : public HandKernel {
 public:
  PoolKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
             pthreadpool_t threadpool)
      : HandKernel(graph, id, layout, threadpool),
        pool_(std::get<model::PoolAttrs>(graph.op(id).attrs)),
        is_max_(graph.op(id).kind == model::OpKind::kMaxPool) {}

 private:
  void ComputeRows(int64_t oh0, int64_t oh1) override {
    const TensorView& in = inputs_[0];
    const model::Window2d& win = pool_.window;
    const int64_t channels = output_shape_.c;
    std::vector<float> acc(static_cast<size_t>(channels));
    for (int64_t oh = oh0; oh < oh1; ++oh) {
      const int64_t h0 = oh * win.stride_h - win.pad_top;
      for (int64_t ow = 0; ow < output_shape_.w; ++ow) {
        const int64_t w0 = ow * win.stride_w - win.pad_left;
        std::fill(acc.begin(), acc.end(), is_max_ ? -std::numeric_limits<float>::infinity() : 0.0f);
        for (int64_t kh = 0; kh < win.kernel_h; ++kh) {
          const int64_t ih = h0 + kh * win.dilation_h;
          if (ih < 0 || ih >= in.shape.h) continue;
          for (int64_t kw = 0; kw < win.kernel_w; ++kw) {
            const int64_t iw = w0 + kw * win.dilation_w;
            if (iw < 0 || iw >= in.shape.w) continue;
            const float* src = in.pixel(ih, iw);
            for (int64_t c = 0; c < channels; ++c) {
              acc[static_cast<size_t>(c)] = is_max_ ? std::max(acc[static_cast<size_t>(c)], src[c])
                                                    : acc[static_cast<size_t>(c)] + src[c];
            }
          }
        }
        float* dst = output_.pixel(oh, ow);
        if (is_max_) {
          std::copy(acc.begin(), acc.end(), dst);
          continue;
        }
        // count_include_pad counts declared padding but never the ceil_mode extension.
        const int64_t count = pool_.count_include_pad
                                  ? TapsWithin(h0, win.kernel_h, win.dilation_h, -win.pad_top,
                                               in.shape.h + pool_.declared_pad_bottom) *
                                        TapsWithin(w0, win.kernel_w, win.dilation_w, -win.pad_left,
                                                   in.shape.w + pool_.declared_pad_right)
                                  : TapsWithin(h0, win.kernel_h, win.dilation_h, 0, in.shape.h) *
                                        TapsWithin(w0, win.kernel_w, win.dilation_w, 0, in.shape.w);
        const float inv = count > 0 ? 1.0f / static_cast<float>(count) : 0.0f;
        for (int64_t c = 0; c < channels; ++c) dst[c] = acc[static_cast<size_t>(c)] * inv;
      }
    }
  }

  model::PoolAttrs pool_;
  bool is_max_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateHandKernel(const model::Graph& graph,
                                                            model::OpId id,
                                                            const KernelLayout& layout,
                                                            pthreadpool_t threadpool,
                                                            WorkSlice slice) {
  const model::OpKind kind = graph.op(id).kind;
  if (slice.axis != model::SplitAxis::kNone) {
    if (slice.axis != model::SplitAxis::kRows ||
        (kind != model::OpKind::kActivation && kind != model::OpKind::kSoftmax)) {
      return absl::UnimplementedError(absl::StrCat(
          "op ", id, " '", graph.op(id).name, "': no sliced CPU kernel for ",
          std::string(model::OpKindName(kind)), " along ",
          std::string(model::SplitAxisName(slice.axis))));
    }
  }
  switch (kind) {
    case model::OpKind::kConcat:
      return std::make_unique<ConcatKernel>(graph, id, layout, threadpool);
    case model::OpKind::kPad:
      return std::make_unique<PadKernel>(graph, id, layout, threadpool);
    case model::OpKind::kResize:
      return std::make_unique<ResizeKernel>(graph, id, layout, threadpool);
    case model::OpKind::kFlatten:
      return std::make_unique<FlattenKernel>(graph, id, layout, threadpool);
    case model::OpKind::kActivation:
      return std::make_unique<CopyKernel>(graph, id, layout, threadpool, slice);
    case model::OpKind::kSoftmax:
      return std::make_unique<SoftmaxKernel>(graph, id, layout, threadpool, slice);
    case model::OpKind::kMaxPool:
    case model::OpKind::kAvgPool:
      return std::make_unique<PoolKernel>(graph, id, layout, threadpool);
    default:
      return absl::UnimplementedError(
          absl::StrCat("op ", id, " '", graph.op(id).name, "': no hand-written CPU kernel for ",
                       std::string(model::OpKindName(graph.op(id).kind))));
  }
}

}  // namespace psched::executor::cpu::internal
