#include "executor/cpu/residual_added_conv.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/common/activation.h"
#include "executor/common/residual_add_fusion.h"
#include "executor/cpu/kernel_base.h"
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
    if (inputs.size() != conv_inputs_ + 2) {
      return absl::InvalidArgumentError(absl::StrCat(library_, ": Setup got ", inputs.size(),
                                                     " inputs, expected ", conv_inputs_ + 2));
    }
    const TensorView& conv_out = inputs[conv_inputs_];
    const TensorView& residual = inputs[conv_inputs_ + 1];
    if (residual.shape != conv_out.shape || output.shape != conv_out.shape) {
      return absl::InvalidArgumentError(
          absl::StrCat(library_, ": the residual and the output must have the conv's shape"));
    }
    if (!ViewsAllowFusedAdd(inputs.first(conv_inputs_), conv_out, residual, output)) {
      return absl::InvalidArgumentError(absl::StrCat(
          library_, ": the add's output overlaps a tensor the conv's parts may still read"));
    }
    if (absl::Status s = conv_->Setup(inputs.first(conv_inputs_), conv_out); !s.ok()) return s;
    conv_out_ = conv_out;
    residual_ = residual;
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
                                                                   const KernelLayout& conv_layout,
                                                                   pthreadpool_t threadpool) {
  if (!FusableResidual(graph, conv, add)) {
    return absl::InvalidArgumentError(
        absl::StrCat("op ", add, " '", graph.op(add).name, "' is not a residual add of op ", conv));
  }
  auto kernel = CreateCpuKernel(graph, conv, WorkSlice::Whole(), conv_layout, threadpool);
  if (!kernel.ok()) return kernel.status();
  const int64_t units = model::WorkSize(graph, conv, model::SplitAxis::kOutputChannels);
  std::string library = std::string((*kernel)->library()) + " + add";
  return std::unique_ptr<CpuKernel>(std::make_unique<ResidualAddedConv>(
      *std::move(kernel), graph.ActivationInputs(conv).size(), graph.op(add).activation,
      graph.output_shape(conv).c / units, std::move(library)));
}

std::unique_ptr<CpuKernel> CreateFusedAwayKernel() { return std::make_unique<FusedAwayKernel>(); }

}  // namespace psched::executor::cpu
