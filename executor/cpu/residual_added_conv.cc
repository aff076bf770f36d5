#include "executor/cpu/residual_added_conv.h"

#include <pthreadpool.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/common/activation.h"
#include "executor/common/residual_add_fusion.h"
#include "executor/cpu/kernel_base.h"
#include "executor/cpu/kernel_choice.h"
#include "executor/cpu/parallel_slices_kernel.h"
#include "model/split.h"

namespace psched::executor::cpu {
namespace {

// out = activation(a + b) over output rows [h0, h1) and channels [c0, c1). Element by
// element, so `out` may be `a` or `b` itself. Relu and clip clamp in the same pass. On x86 a
// clone per vector width, picked at load time: the build targets baseline x86-64 (SSE2),
// and the add competes with XNNPACK's, which dispatches to AVX-512 itself.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void AddRegion(const TensorView& a, const TensorView& b, const TensorView& out, int64_t h0,
               int64_t h1, int64_t c0, int64_t c1, const model::Activation& activation) {
  const float lo = internal::FusedMin(activation), hi = internal::FusedMax(activation);
  for (int64_t h = h0; h < h1; ++h) {
    for (int64_t w = 0; w < out.shape.w; ++w) {
      const float* x = a.pixel(h, w) + c0;
      const float* y = b.pixel(h, w) + c0;
      float* z = out.pixel(h, w) + c0;
      for (int64_t c = 0; c < c1 - c0; ++c) z[c] = std::min(std::max(x[c] + y[c], lo), hi);
    }
  }
  if (internal::NeedsActivationPass(activation)) {
    ApplyActivationInPlace(
        activation,
        TensorView{out.pixel(h0, 0) + c0, {h1 - h0, out.shape.w, c1 - c0}, out.pixel_stride});
  }
}

// Setup's views for a conv + add kernel: the conv's `conv_inputs` inputs, its output and the
// residual; `output` is the add's.
absl::Status CheckViews(const std::string& library, size_t conv_inputs,
                        std::span<const TensorView> inputs, const TensorView& output) {
  if (inputs.size() != conv_inputs + 2) {
    return absl::InvalidArgumentError(absl::StrCat(library, ": Setup got ", inputs.size(),
                                                   " inputs, expected ", conv_inputs + 2));
  }
  const TensorView& conv_out = inputs[conv_inputs];
  const TensorView& residual = inputs[conv_inputs + 1];
  if (residual.shape != conv_out.shape || output.shape != conv_out.shape) {
    return absl::InvalidArgumentError(
        absl::StrCat(library, ": the residual and the output must have the conv's shape"));
  }
  if (!ViewsAllowFusedAdd(inputs.first(conv_inputs), conv_out, residual, output)) {
    return absl::InvalidArgumentError(absl::StrCat(
        library, ": the add's output overlaps a tensor the conv's parts may still read"));
  }
  return absl::OkStatus();
}

// The add as a pass over each part the conv wrote.
class ResidualAddedConv final : public CpuKernel {
 public:
  ResidualAddedConv(std::unique_ptr<CpuKernel> conv, size_t conv_inputs,
                    model::Activation activation, int64_t channels_per_unit, std::string library)
      : conv_(std::move(conv)),
        conv_inputs_(conv_inputs),
        activation_(activation),
        channels_per_unit_(channels_per_unit),
        library_(std::move(library)) {}

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (absl::Status s = CheckViews(library_, conv_inputs_, inputs, output); !s.ok()) return s;
    const TensorView& conv_out = inputs[conv_inputs_];
    if (absl::Status s = conv_->Setup(inputs.first(conv_inputs_), conv_out); !s.ok()) return s;
    conv_out_ = conv_out;
    residual_ = inputs[conv_inputs_ + 1];
    output_ = output;
    return absl::OkStatus();
  }

  absl::Status Run() override {
    return conv_->RunThen([this](const WorkSlice& part) {
      int64_t h0 = 0, h1 = output_.shape.h, c0 = 0, c1 = output_.shape.c;
      if (part.axis == model::SplitAxis::kRows) {
        h0 = part.begin;
        h1 = part.end;
      } else if (part.axis == model::SplitAxis::kOutputChannels) {
        c0 = part.begin * channels_per_unit_;
        c1 = part.end * channels_per_unit_;
      }
      AddRegion(conv_out_, residual_, output_, h0, h1, c0, c1, activation_);
    });
  }

  std::string_view library() const override { return library_; }

 private:
  std::unique_ptr<CpuKernel> conv_;
  size_t conv_inputs_;
  model::Activation activation_;  // the add's
  int64_t channels_per_unit_;     // output channels per unit of the conv's cout axis
  std::string library_;
  TensorView conv_out_, residual_, output_;
};

// The add inside the conv's kernels (oneDNN's binary post-op): the conv's output is never
// written, the add's is written once.
class PostOpResidualConv final : public CpuKernel {
 public:
  PostOpResidualConv(std::unique_ptr<CpuKernel> conv, size_t conv_inputs, std::string library)
      : conv_(std::move(conv)), conv_inputs_(conv_inputs), library_(std::move(library)) {}

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (absl::Status s = CheckViews(library_, conv_inputs_, inputs, output); !s.ok()) return s;
    std::vector<TensorView> views(inputs.begin(), inputs.begin() + conv_inputs_);
    views.push_back(inputs[conv_inputs_ + 1]);
    return conv_->Setup(views, output);
  }
  absl::Status Run() override { return conv_->Run(); }
  std::string_view library() const override { return library_; }

 private:
  std::unique_ptr<CpuKernel> conv_;
  size_t conv_inputs_;
  std::string library_;
};

class FusedAwayKernel final : public CpuKernel {
 public:
  absl::Status Setup(std::span<const TensorView>, const TensorView&) override {
    return absl::OkStatus();
  }
  absl::Status Run() override { return absl::OkStatus(); }
  std::string_view library() const override { return "fused into the conv before"; }
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateResidualAddedConv(const model::Graph& graph,
                                                                   model::OpId conv,
                                                                   model::OpId add,
                                                                   const ResidualAddLayout& layout,
                                                                   pthreadpool_t threadpool) {
  if (!FusableResidual(graph, conv, add)) {
    return absl::InvalidArgumentError(
        absl::StrCat("op ", add, " '", graph.op(add).name, "' is not a residual add of op ", conv));
  }
  const size_t conv_inputs = graph.ActivationInputs(conv).size();
#ifdef PSCHED_HAVE_ONEDNN
  // The post-op saves a pass that reads the conv's output and the residual and writes the
  // sum, but slows oneDNN's inner loop a little. Measured on hrnet (psched_coexec_bench
  // --per-op-dir, one core): a gain where each output element takes few multiply-adds
  // (32>128 1x1 @56x56: 748 -> 528 us; 3x3 16>16 and 32>32: 4-6%), a loss where it takes
  // thousands (1024>2048 1x1 @7x7 +7%, 3x3 stride-2 512>1024 +5%).
  constexpr int64_t kMaxPostOpMacsPerOutput = 512;
  const auto& attrs = std::get<model::ConvAttrs>(graph.op(conv).attrs);
  const int64_t macs_per_output = graph.tensor(graph.ActivationInputs(conv)[0]).shape.c /
                                  attrs.groups * attrs.window.kernel_h * attrs.window.kernel_w;
  if (macs_per_output <= kMaxPostOpMacsPerOutput &&
      ChooseConvLibrary(graph, conv, WorkSlice::Whole(), layout.output_pixel_stride) ==
          KernelLibrary::kOneDnn) {
    KernelLayout add_layout = layout.conv;
    add_layout.output_pixel_stride = layout.output_pixel_stride;
    auto one_thread = [&](WorkSlice part) {
      return internal::CreateOneDnnResidualConvKernel(graph, conv, add, part, add_layout,
                                                      layout.residual_pixel_stride);
    };
    auto kernel = threadpool != nullptr && pthreadpool_get_threads_count(threadpool) > 1
                      ? internal::CreateParallelSlicesKernel(graph, conv, WorkSlice::Whole(),
                                                             threadpool, one_thread)
                      : one_thread(WorkSlice::Whole());
    if (kernel.ok()) {
      std::string library = std::string((*kernel)->library()) + " + add post-op";
      return std::unique_ptr<CpuKernel>(std::make_unique<PostOpResidualConv>(
          *std::move(kernel), conv_inputs, std::move(library)));
    }
    // Where the post-op cannot apply, the conv's kernel and an add pass below.
    if (kernel.status().code() != absl::StatusCode::kUnimplemented) return kernel.status();
  }
#endif
  auto kernel = CreateCpuKernel(graph, conv, WorkSlice::Whole(), layout.conv, threadpool);
  if (!kernel.ok()) return kernel.status();
  const int64_t units = model::WorkSize(graph, conv, model::SplitAxis::kOutputChannels);
  std::string library = std::string((*kernel)->library()) + " + add";
  return std::unique_ptr<CpuKernel>(
      std::make_unique<ResidualAddedConv>(*std::move(kernel), conv_inputs, graph.op(add).activation,
                                          graph.output_shape(conv).c / units, std::move(library)));
}

std::unique_ptr<CpuKernel> CreateFusedAwayKernel() { return std::make_unique<FusedAwayKernel>(); }

}  // namespace psched::executor::cpu
