#include "executor/cpu/kernel_choice.h"

namespace psched::executor::cpu {

bool OneDnnAvailable() {
#ifdef PSCHED_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

bool StreamingGemmAvailable() {
#ifdef PSCHED_HAVE_STREAMING_GEMM
  static const bool avx512f = __builtin_cpu_supports("avx512f");
  return avx512f;
#else
  return false;
#endif
}

KernelLibrary ChooseConvLibrary(const model::Graph& graph, model::OpId id, WorkSlice slice,
                                int64_t output_pixel_stride) {
#ifdef PSCHED_HAVE_ONEDNN
  // Dense convs default to oneDNN: on one core its JIT convs are faster than XNNPACK's on most
  // dense convs of the benchmark models (psched_conv_kernels_bench compares the two; figures in
  // docs/runtime-performance.md). A multi-core device runs them as one-thread kernels on parts
  // of the op across its own threadpool (parallel_slices_kernel.h). cin slices go by the same
  // rule, so that a slice with few output pixels reaches the streaming GEMM, which reads the
  // filter once, rather than XNNPACK, which re-reads it per block of output pixels. Depthwise
  // convs (one input and one output channel per group) run on oneDNN's brgemm depthwise kernel
  // (kernel_choice.h); other grouped convs stay on XNNPACK.
  const auto& conv = std::get<model::ConvAttrs>(graph.op(id).attrs);
  const int64_t in_c = graph.tensor(graph.ActivationInputs(id)[0]).shape.c;
  if (conv.groups > 1 && conv.groups == in_c && graph.output_shape(id).c == in_c &&
      slice.axis != model::SplitAxis::kInputChannels) {
    return KernelLibrary::kOneDnn;
  }
  if (conv.groups == 1) {
    // Few output pixels: the filter stream from memory bounds the op, and the streaming GEMM
    // reads it once where oneDNN's blocking re-reads it (streaming_gemm_conv.cc).
    const model::Shape& out = graph.output_shape(id);
    const int64_t rows = slice.axis == model::SplitAxis::kRows ? slice.end - slice.begin : out.h;
    const int64_t couts =
        slice.axis == model::SplitAxis::kOutputChannels ? slice.end - slice.begin : out.c;
    const int64_t cins = slice.axis == model::SplitAxis::kInputChannels
                             ? slice.end - slice.begin
                             : graph.tensor(graph.ActivationInputs(id)[0]).shape.c;
    const int64_t filter_bytes = couts * conv.window.kernel_h * conv.window.kernel_w * cins *
                                 static_cast<int64_t>(sizeof(float));
    const int64_t pixels = rows * out.w;
    if (StreamingGemmAvailable() &&
        (pixels <= kStreamingGemmMaxPixels || (pixels <= kStreamingGemmLargeFilterMaxPixels &&
                                               filter_bytes >= kStreamingGemmLargeFilterBytes))) {
      return KernelLibrary::kStreamingGemm;
    }
    const int64_t stride = output_pixel_stride == 0 ? out.c : output_pixel_stride;
    if (stride != couts && cins <= kXnnpackStridedMaxInputChannels) return KernelLibrary::kXnnpack;
    return KernelLibrary::kOneDnn;
  }
#else
  (void)graph;
  (void)id;
  (void)slice;
  (void)output_pixel_stride;
#endif
  return KernelLibrary::kXnnpack;
}

}  // namespace psched::executor::cpu
