#include "executor/cpu/cpu_kernel.h"

#include <pthreadpool.h>
#include <xnnpack.h>

#include <cmath>
#include <limits>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "executor/cpu/kernel_base.h"
#include "executor/cpu/kernel_choice.h"
#include "executor/cpu/parallel_slices_kernel.h"
#include "model/concat_in_place.h"
#include "model/op_validation.h"

namespace psched::executor::cpu {
namespace internal {

KernelBase::KernelBase(const model::Graph& graph, model::OpId id, WorkSlice slice,
                       const KernelLayout& layout)
    : activation_(graph.op(id).activation), slice_(slice) {
  const model::Op& op = graph.op(id);
  name_ =
      absl::StrCat("op ", id, " '", op.name, "' (", std::string(model::OpKindName(op.kind)), ")");
  const std::vector<model::TensorId> acts = graph.ActivationInputs(id);
  for (size_t i = 0; i < acts.size(); ++i) {
    const model::Shape& s = graph.tensor(acts[i]).shape;
    input_shapes_.push_back(s);
    input_strides_.push_back(layout.input_pixel_strides.empty() ? s.c
                                                                : layout.input_pixel_strides[i]);
  }
  output_shape_ = graph.output_shape(id);
  output_stride_ = layout.output_pixel_stride == 0 ? output_shape_.c : layout.output_pixel_stride;
}

absl::Status KernelBase::Error(const std::string& what) const {
  return absl::InvalidArgumentError(absl::StrCat(name_, ": ", what));
}

absl::Status KernelBase::BindViews(std::span<const TensorView> inputs, const TensorView& output) {
  if (inputs.size() != input_shapes_.size()) {
    return Error(
        absl::StrCat("Setup got ", inputs.size(), " inputs, expected ", input_shapes_.size()));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorView& v = inputs[i];
    if (v.data == nullptr || v.shape != input_shapes_[i] || v.pixel_stride != input_strides_[i]) {
      return Error(absl::StrCat("input ", i, " view [", v.shape.h, "x", v.shape.w, "x", v.shape.c,
                                "] stride ", v.pixel_stride, v.data == nullptr ? " (null)" : "",
                                " does not match [", input_shapes_[i].h, "x", input_shapes_[i].w,
                                "x", input_shapes_[i].c, "] stride ", input_strides_[i]));
    }
  }
  if (output.data == nullptr || output.shape != output_shape_ ||
      output.pixel_stride != output_stride_) {
    return Error(absl::StrCat(
        "output view [", output.shape.h, "x", output.shape.w, "x", output.shape.c, "] stride ",
        output.pixel_stride, output.data == nullptr ? " (null)" : "", " does not match [",
        output_shape_.h, "x", output_shape_.w, "x", output_shape_.c, "] stride ", output_stride_));
  }
  inputs_.assign(inputs.begin(), inputs.end());
  output_ = output;
  return absl::OkStatus();
}

float FusedMin(const model::Activation& a) {
  switch (a.kind) {
    case model::ActivationKind::kRelu:
      return 0.0f;
    case model::ActivationKind::kClip:
      return a.min;
    default:
      return -std::numeric_limits<float>::infinity();
  }
}

float FusedMax(const model::Activation& a) {
  return a.kind == model::ActivationKind::kClip ? a.max : std::numeric_limits<float>::infinity();
}

bool NeedsActivationPass(const model::Activation& a) {
  return a.kind != model::ActivationKind::kNone && a.kind != model::ActivationKind::kRelu &&
         a.kind != model::ActivationKind::kClip;
}

absl::Status XnnStatusToError(const std::string& where, const char* call, int status) {
  if (status == xnn_status_success) return absl::OkStatus();
  const char* names[] = {"success",       "uninitialized",         "invalid_parameter",
                         "invalid_state", "unsupported_parameter", "unsupported_hardware",
                         "out_of_memory"};
  const char* name = status >= 0 && status <= 6 ? names[status] : "unknown";
  const std::string message = absl::StrCat(where, ": ", call, " failed: xnn_status_", name);
  if (status == xnn_status_out_of_memory) return absl::ResourceExhaustedError(message);
  if (status == xnn_status_unsupported_hardware || status == xnn_status_uninitialized) {
    return absl::FailedPreconditionError(message);
  }
  return absl::InvalidArgumentError(message);
}

absl::Status EnsureXnnpackInitialized() {
  static std::once_flag once;
  static int status = xnn_status_success;
  std::call_once(once, [] { status = xnn_initialize(nullptr); });
  return XnnStatusToError("XNNPACK", "xnn_initialize", status);
}

}  // namespace internal

absl::Status CpuKernel::RunThen(absl::FunctionRef<void(const WorkSlice& written)> written) {
  absl::Status status = Run();
  if (status.ok()) written(WorkSlice::Whole());
  return status;
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateCpuKernel(const model::Graph& graph,
                                                           model::OpId id, WorkSlice slice,
                                                           const KernelLayout& layout,
                                                           pthreadpool_t threadpool,
                                                           KernelLibrary library) {
  if (auto s = model::ValidateOp(graph, id); !s.ok()) return s;
  if (auto s = internal::EnsureXnnpackInitialized(); !s.ok()) return s;
  const model::Op& op = graph.op(id);
  const std::string where =
      absl::StrCat("op ", id, " '", op.name, "' (", std::string(model::OpKindName(op.kind)), ")");
  const size_t acts = graph.ActivationInputs(id).size();
  if (!layout.input_pixel_strides.empty() && layout.input_pixel_strides.size() != acts) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": layout has ",
                                                   layout.input_pixel_strides.size(),
                                                   " input strides for ", acts, " inputs"));
  }
  for (size_t i = 0; i < layout.input_pixel_strides.size(); ++i) {
    const int64_t c = graph.tensor(graph.ActivationInputs(id)[i]).shape.c;
    const int64_t stride = layout.input_pixel_strides[i];
    if (stride < c || (stride != c && !model::SupportsStridedInput(op.kind))) {
      return absl::InvalidArgumentError(absl::StrCat(where, ": input ", i, " pixel stride ", stride,
                                                     " is unusable for ", c, " channels"));
    }
  }
  const int64_t out_c = graph.output_shape(id).c;
  const int64_t out_stride = layout.output_pixel_stride;
  if (out_stride != 0 &&
      (out_stride < out_c || (out_stride != out_c && !model::SupportsStridedOutput(op.kind)))) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": output pixel stride ", out_stride,
                                                   " is unusable for ", out_c, " channels"));
  }
  if (slice.axis != model::SplitAxis::kNone) {
    const int64_t work = model::WorkSize(graph, id, slice.axis);
    if (work == 0) {
      return absl::UnimplementedError(absl::StrCat(where, " cannot be split along ",
                                                   std::string(model::SplitAxisName(slice.axis))));
    }
    if (slice.begin < 0 || slice.end > work || slice.begin >= slice.end) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, ": slice [", slice.begin, ", ", slice.end, ") of ",
          std::string(model::SplitAxisName(slice.axis)), " is empty or outside [0, ", work, ")"));
    }
  } else if (slice.begin != 0 || slice.end != 1) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": an unsplit slice must be [0, 1)"));
  }
  if (internal::IsTensorKernelKind(op)) {
    return internal::CreateTensorKernel(graph, id, slice, layout);
  }
  switch (op.kind) {
    case model::OpKind::kConv2d: {
      const bool library_forced = library != KernelLibrary::kAuto;
      const bool multi_thread =
          threadpool != nullptr && pthreadpool_get_threads_count(threadpool) > 1;
      if (!library_forced) {
        // A cin slice cannot be cut into parts that write disjoint outputs
        // (parallel_slices_kernel.h): on a multi-core device XNNPACK spreads it over the cores.
        library = slice.axis == model::SplitAxis::kInputChannels && multi_thread
                      ? KernelLibrary::kXnnpack
                      : ChooseConvLibrary(graph, id, slice, out_stride);
      }
      // The one-thread kernel of a part, for the libraries that have no threadpool of their
      // own; XNNPACK (null) runs on the device's threadpool directly.
      internal::PartFactory one_thread;
      if (library == KernelLibrary::kStreamingGemm) {
        if (!StreamingGemmAvailable()) {
          return absl::UnimplementedError(
              absl::StrCat(where, ": the streaming GEMM needs an x86 core with AVX-512F"));
        }
#ifdef PSCHED_HAVE_STREAMING_GEMM
        one_thread = [&](WorkSlice part) {
          return internal::CreateStreamingGemmConvKernel(graph, id, part, layout);
        };
#endif
      } else if (library == KernelLibrary::kOneDnn) {
#ifdef PSCHED_HAVE_ONEDNN
        one_thread = [&](WorkSlice part) {
          return internal::CreateOneDnnConvKernel(graph, id, part, layout);
        };
#else
        if (library_forced) {
          return absl::UnimplementedError(absl::StrCat(where, ": built without oneDNN"));
        }
#endif
      }
      if (one_thread) {
        // A multi-core device runs one-thread kernels on parts of the slice at once.
        auto kernel = multi_thread ? internal::CreateParallelSlicesKernel(graph, id, slice,
                                                                          threadpool, one_thread)
                                   : one_thread(slice);
        // Where the rule's library has no kernel for the configuration, XNNPACK runs it.
        if (kernel.ok() || kernel.status().code() != absl::StatusCode::kUnimplemented ||
            library_forced) {
          return kernel;
        }
      }
      return internal::CreateConvKernel(graph, id, slice, layout, threadpool);
    }
    case model::OpKind::kConvTranspose2d:
      return internal::CreateConvTransposeKernel(graph, id, layout, threadpool);
    case model::OpKind::kFullyConnected:
      return internal::CreateFullyConnectedKernel(graph, id, slice, layout, threadpool);
    case model::OpKind::kMaxPool:
    case model::OpKind::kAvgPool:
      return internal::CreatePoolKernel(graph, id, layout, threadpool);
    case model::OpKind::kGlobalAvgPool:
      return internal::CreateGlobalAvgPoolKernel(graph, id, layout, threadpool);
    case model::OpKind::kAdd:
    case model::OpKind::kMul:
    case model::OpKind::kSub:
    case model::OpKind::kDiv:
      return internal::CreateBinaryKernel(graph, id, slice, layout, threadpool);
    default:
      return internal::CreateHandKernel(graph, id, layout, threadpool, slice);
  }
}

}  // namespace psched::executor::cpu
