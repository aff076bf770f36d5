// A conv and the residual Add after it as one CPU kernel: the conv's kernel runs (cut into
// parts across the threadpool where it is, parallel_slices_kernel.h), and each part of its
// output gets the residual added on the thread that wrote it - inside oneDNN's kernel as a
// post-op, or right after it, with the add's activation. Which pairs qualify and why:
// executor/common/residual_add_fusion.h.
//
// Internal to the CPU executors (CpuGraphExecutor, the runtime's CpuDevice). Thread-safety as
// CpuKernel.
#pragma once

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "executor/cpu/cpu_kernel.h"
#include "model/graph.h"

namespace psched::executor::cpu {

// The pixel strides of a conv + add kernel's views.
struct ResidualAddLayout {
  KernelLayout conv;  // the conv's inputs and output
  int64_t residual_pixel_stride = 0;
  int64_t output_pixel_stride = 0;  // the add's
};

// The conv `conv` and the add `add` as one kernel. Setup's inputs are the conv's activation
// inputs followed by the conv's output and the residual; its output is the add's. Setup
// refuses views that fail ViewsAllowFusedAdd. Where the conv runs on oneDNN the residual is
// added inside its kernels as a post-op and the conv's output is never written (nothing else
// reads it); elsewhere each part's add is a pass right after the part. Fails with
// InvalidArgument unless FusableResidual(graph, conv, add).
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateResidualAddedConv(const model::Graph& graph,
                                                                   model::OpId conv,
                                                                   model::OpId add,
                                                                   const ResidualAddLayout& layout,
                                                                   pthreadpool_t threadpool);

// Stands in for an add that runs inside its conv's kernel: Setup checks nothing, Run does
// nothing.
std::unique_ptr<CpuKernel> CreateFusedAwayKernel();

}  // namespace psched::executor::cpu
