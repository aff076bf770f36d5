// CPU kernels for kConvTranspose2d: XNNPACK's deconvolution (every build has XNNPACK, x86 and
// arm64 alike), and a hand-written kernel for the configurations XNNPACK (2022-02) refuses -
// output_padding not below the stride. Both read and write strided views and run whole ops.
#include <pthreadpool.h>
#include <xnnpack.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/common/activation.h"
#include "executor/cpu/cpu_threadpool.h"
#include "executor/cpu/kernel_base.h"

namespace psched::executor::cpu::internal {
namespace {

struct XnnDeleter {
  void operator()(xnn_operator_t op) const { xnn_delete_operator(op); }
};

const float* ConstantData(const model::Graph& graph, model::ConstantId id) {
  return id == model::kInvalidId ? nullptr
                                 : graph.constants[static_cast<size_t>(id)].data.data();
}

class XnnConvTransposeKernel final : public KernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<CpuKernel>> Create(const model::Graph& graph,
                                                           model::OpId id,
                                                           const KernelLayout& layout,
                                                           pthreadpool_t threadpool) {
    std::unique_ptr<XnnConvTransposeKernel> k(
        new XnnConvTransposeKernel(graph, id, layout, threadpool));
    if (auto s = k->Init(graph, id); !s.ok()) return s;
    return std::unique_ptr<CpuKernel>(std::move(k));
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (auto s = BindViews(inputs, output); !s.ok()) return s;
    return XnnStatusToError(
        name_, "xnn_setup_deconvolution2d_nhwc_f32",
        xnn_setup_deconvolution2d_nhwc_f32(
            op_.get(), 1, static_cast<size_t>(input_shapes_[0].h),
            static_cast<size_t>(input_shapes_[0].w), adjustment_h_, adjustment_w_,
            inputs_[0].data, output_.data, threadpool_));
  }

  absl::Status Run() override {
    if (auto s =
            XnnStatusToError(name_, "xnn_run_operator", xnn_run_operator(op_.get(), threadpool_));
        !s.ok()) {
      return s;
    }
    if (NeedsActivationPass(activation_)) ApplyActivationInPlace(activation_, output_);
    return absl::OkStatus();
  }

  xnn_operator_t xnnpack_operator() const override {
    return NeedsActivationPass(activation_) ? nullptr : op_.get();
  }

 private:
  XnnConvTransposeKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
                         pthreadpool_t threadpool)
      : KernelBase(graph, id, WorkSlice::Whole(), layout), threadpool_(threadpool) {}

  absl::Status Init(const model::Graph& graph, model::OpId id) {
    const auto& conv = std::get<model::ConvAttrs>(graph.op(id).attrs);
    const model::Window2d& w = conv.window;
    adjustment_h_ = static_cast<uint32_t>(conv.output_padding_h);
    adjustment_w_ = static_cast<uint32_t>(conv.output_padding_w);
    xnn_operator_t op = nullptr;
    // XNNPACK's "output padding" is the crop (ONNX pads); ONNX output_padding is its adjustment.
    const xnn_status status = xnn_create_deconvolution2d_nhwc_f32(
        static_cast<uint32_t>(w.pad_top), static_cast<uint32_t>(w.pad_right),
        static_cast<uint32_t>(w.pad_bottom), static_cast<uint32_t>(w.pad_left),
        static_cast<uint32_t>(w.kernel_h), static_cast<uint32_t>(w.kernel_w),
        static_cast<uint32_t>(w.stride_h), static_cast<uint32_t>(w.stride_w),
        static_cast<uint32_t>(w.dilation_h), static_cast<uint32_t>(w.dilation_w),
        static_cast<uint32_t>(conv.groups), static_cast<size_t>(input_shapes_[0].c / conv.groups),
        static_cast<size_t>(output_shape_.c / conv.groups),
        static_cast<size_t>(input_strides_[0]), static_cast<size_t>(output_stride_),
        ConstantData(graph, conv.filter), ConstantData(graph, conv.bias), FusedMin(activation_),
        FusedMax(activation_), 0, &op);
    op_.reset(op);
    return XnnStatusToError(name_, "xnn_create_deconvolution2d_nhwc_f32", status);
  }

  pthreadpool_t threadpool_;
  std::unique_ptr<xnn_operator, XnnDeleter> op_;
  uint32_t adjustment_h_ = 0, adjustment_w_ = 0;
};

// Gathers each output pixel from the input pixels whose scattered taps land on it, so rows
// are independent and bands of them run on different threads. Weights are repacked as
// [kh][kw][group][cin/group][cout/group]: a tap adds input value times a contiguous row of
// output-channel weights, which the compiler vectorizes.
class HandConvTransposeKernel final : public KernelBase {
 public:
  HandConvTransposeKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
                          pthreadpool_t threadpool)
      : KernelBase(graph, id, WorkSlice::Whole(), layout), threadpool_(threadpool) {
    conv_ = std::get<model::ConvAttrs>(graph.op(id).attrs);
    const model::Window2d& w = conv_.window;
    cin_g_ = input_shapes_[0].c / conv_.groups;
    cout_g_ = output_shape_.c / conv_.groups;
    const float* filter = ConstantData(graph, conv_.filter);
    packed_.resize(static_cast<size_t>(w.kernel_h * w.kernel_w * input_shapes_[0].c * cout_g_));
    for (int64_t g = 0; g < conv_.groups; ++g)
      for (int64_t m = 0; m < cout_g_; ++m)
        for (int64_t kh = 0; kh < w.kernel_h; ++kh)
          for (int64_t kw = 0; kw < w.kernel_w; ++kw)
            for (int64_t c = 0; c < cin_g_; ++c)
              packed_[static_cast<size_t>(
                  (((kh * w.kernel_w + kw) * conv_.groups + g) * cin_g_ + c) * cout_g_ + m)] =
                  filter[(((g * cout_g_ + m) * w.kernel_h + kh) * w.kernel_w + kw) * cin_g_ + c];
    const float* bias = ConstantData(graph, conv_.bias);
    bias_.assign(static_cast<size_t>(output_shape_.c), 0.0f);
    if (bias != nullptr) std::copy_n(bias, output_shape_.c, bias_.begin());
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    return BindViews(inputs, output);
  }

  absl::Status Run() override {
    const int64_t rows = output_shape_.h;
    const int64_t threads =
        threadpool_ == nullptr ? 1 : static_cast<int64_t>(pthreadpool_get_threads_count(threadpool_));
    const int64_t bands = std::max<int64_t>(1, std::min(threads, rows));
    ParallelFor(threadpool_, static_cast<size_t>(bands), [&](size_t b) {
      const auto band = static_cast<int64_t>(b);
      ComputeRows(rows * band / bands, rows * (band + 1) / bands);
    });
    return absl::OkStatus();
  }

  std::string_view library() const override { return "psched"; }

 private:
  void ComputeRows(int64_t h0, int64_t h1) {
    if (h0 >= h1) return;
    const model::Window2d& w = conv_.window;
    const model::Shape& in = input_shapes_[0];
    const int64_t channel_block = conv_.groups * cin_g_ * cout_g_;
    for (int64_t oh = h0; oh < h1; ++oh) {
      for (int64_t ow = 0; ow < output_shape_.w; ++ow) {
        float* acc = output_.pixel(oh, ow);
        std::copy(bias_.begin(), bias_.end(), acc);
        for (int64_t kh = 0; kh < w.kernel_h; ++kh) {
          const int64_t th = oh + w.pad_top - kh * w.dilation_h;
          if (th < 0 || th % w.stride_h != 0 || th / w.stride_h >= in.h) continue;
          for (int64_t kw = 0; kw < w.kernel_w; ++kw) {
            const int64_t tw = ow + w.pad_left - kw * w.dilation_w;
            if (tw < 0 || tw % w.stride_w != 0 || tw / w.stride_w >= in.w) continue;
            const float* x = inputs_[0].pixel(th / w.stride_h, tw / w.stride_w);
            const float* tap = packed_.data() + (kh * w.kernel_w + kw) * channel_block;
            for (int64_t g = 0; g < conv_.groups; ++g) {
              float* out = acc + g * cout_g_;
              for (int64_t c = 0; c < cin_g_; ++c) {
                const float v = x[g * cin_g_ + c];
                const float* row = tap + (g * cin_g_ + c) * cout_g_;
                for (int64_t m = 0; m < cout_g_; ++m) out[m] += v * row[m];
              }
            }
          }
        }
      }
    }
    ApplyActivationInPlace(activation_, TensorView{output_.pixel(h0, 0),
                                                   {h1 - h0, output_shape_.w, output_shape_.c},
                                                   output_.pixel_stride});
  }

  pthreadpool_t threadpool_;
  model::ConvAttrs conv_;
  int64_t cin_g_ = 0, cout_g_ = 0;
  std::vector<float> packed_;
  std::vector<float> bias_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateHandConvTransposeKernel(
    const model::Graph& graph, model::OpId id, const KernelLayout& layout,
    pthreadpool_t threadpool) {
  return std::unique_ptr<CpuKernel>(new HandConvTransposeKernel(graph, id, layout, threadpool));
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateConvTransposeKernel(const model::Graph& graph,
                                                                     model::OpId id,
                                                                     const KernelLayout& layout,
                                                                     pthreadpool_t threadpool) {
  const auto& conv = std::get<model::ConvAttrs>(graph.op(id).attrs);
  // XNNPACK requires the adjustment to be below the stride.
  if (conv.output_padding_h < conv.window.stride_h &&
      conv.output_padding_w < conv.window.stride_w) {
    auto kernel = XnnConvTransposeKernel::Create(graph, id, layout, threadpool);
    if (kernel.ok()) return kernel;
  }
  return CreateHandConvTransposeKernel(graph, id, layout, threadpool);
}

}  // namespace psched::executor::cpu::internal
