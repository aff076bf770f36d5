// ParallelSlicesKernel: one op slice computed by several one-thread kernels at once, each on a
// part of the slice's rows or output channels, run across a device's threadpool.
//
// This is how a multi-core CPU device gets oneDNN's convs (2-3x XNNPACK's per core, measured in
// docs/runtime-performance.md) without oneDNN's own OpenMP threads, which would fight the
// device's pinned pthreadpool for its cores: the op is cut the way co-execution cuts it across
// devices, into slices of the same op writing disjoint parts of one output, and the slices run
// as the items of one pthreadpool call.
//
// Internal to executor/cpu. Thread-safety as CpuKernel.
#pragma once

#include <functional>
#include <memory>

#include "absl/status/statusor.h"
#include "executor/cpu/cpu_kernel.h"

namespace psched::executor::cpu::internal {

// Builds one part's kernel (on one thread).
using PartFactory = std::function<absl::StatusOr<std::unique_ptr<CpuKernel>>(WorkSlice part)>;

// The parts `slice` of op `id` is cut into for `threads` threads: its own axis when it has one;
// a whole op by output channels when its filter is larger than its input (each part then reads
// half the filter; a cut by rows would make every part read all of it) or it has too few rows
// (fewer than two per thread), else by rows. A slice too small to cut, or with less than
// `min_flops_per_part` of work per part, gives fewer parts (down to one): a parallel call and
// a oneDNN execute cost a few us, the time of ~1 MFLOP here. A cin slice is one part: its
// parts would add into the same output at once.
// REQUIRES: op `id` is a conv and `slice` is valid for it.
inline constexpr double kMinFlopsPerPart = 1e6;
std::vector<WorkSlice> PartsForThreads(const model::Graph& graph, model::OpId id, WorkSlice slice,
                                       int threads, double min_flops_per_part = kMinFlopsPerPart);

// A kernel running `make_part(p)` for every p of PartsForThreads(graph, id, slice, threads of
// `threadpool`) as the items of one parallel call. Fails with the first part's error.
// REQUIRES: `threadpool` has more than one thread.
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateParallelSlicesKernel(const model::Graph& graph,
                                                                      model::OpId id,
                                                                      WorkSlice slice,
                                                                      pthreadpool_t threadpool,
                                                                      const PartFactory& make_part);

}  // namespace psched::executor::cpu::internal
