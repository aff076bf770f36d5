#include "executor/cpu/kernel_choice.h"

#include <pthreadpool.h>

namespace psched::executor::cpu {

bool OneDnnAvailable() {
#ifdef PSCHED_HAVE_ONEDNN
  return true;
#else
  return false;
#endif
}

KernelLibrary ChooseConvLibrary(const model::Graph& graph, model::OpId id, WorkSlice slice,
                                pthreadpool_t threadpool) {
#ifdef PSCHED_HAVE_ONEDNN
  // Measured (docs/runtime-performance.md, psched_conv_kernels_bench): on one core oneDNN's
  // JIT convs beat XNNPACK's on every dense conv of the benchmark models, 1.04-2.75x, median
  // about 1.9x. Not measured, so left to XNNPACK: grouped and depthwise convs (none in those
  // models), cin slices (oneDNN has no accumulating kernel here) and multi-threaded devices
  // (oneDNN's OpenMP threads would compete with the device's pinned pthreadpool).
  const auto& conv = std::get<model::ConvAttrs>(graph.op(id).attrs);
  const bool one_thread = threadpool == nullptr || pthreadpool_get_threads_count(threadpool) <= 1;
  if (conv.groups == 1 && slice.axis != model::SplitAxis::kInputChannels && one_thread) {
    return KernelLibrary::kOneDnn;
  }
#else
  (void)graph;
  (void)id;
  (void)slice;
  (void)threadpool;
#endif
  return KernelLibrary::kXnnpack;
}

}  // namespace psched::executor::cpu
