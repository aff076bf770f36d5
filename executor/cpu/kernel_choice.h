// Which kernel library runs a conv on the CPU: the deterministic per-configuration rule that
// CreateCpuKernel applies when no library is forced. The rule is derived from the measured
// table in docs/runtime-performance.md ("Kernel choice: XNNPACK or oneDNN"), so it is the same
// at calibration time and at run time: calibration times the kernel the rule picks, and the
// predictor's per-op costs are those of the chosen library.
//
// Stateless; thread-safe.
#pragma once

#include "executor/common/work_slice.h"
#include "executor/cpu/cpu_kernel.h"
#include "model/graph.h"

namespace psched::executor::cpu {

// Whether this build has oneDNN kernels (x86 with libdnnl).
bool OneDnnAvailable();

// Whether this build and core run the streaming-GEMM conv (x86 with AVX-512F).
bool StreamingGemmAvailable();

// Dense convs whose slice has at most this many output pixels run on the streaming GEMM where
// it is available: their filter, used for so few pixels, is read from memory once per run.
inline constexpr int64_t kStreamingGemmMaxPixels = 28;

// kStreamingGemm, kOneDnn or kXnnpack for conv op `id` of `graph` computing `slice`, on a
// device of any number of threads (CreateCpuKernel runs the first two on several as parallel
// slices). Never kAuto. Always kXnnpack in builds without oneDNN (ARM).
KernelLibrary ChooseConvLibrary(const model::Graph& graph, model::OpId id, WorkSlice slice);

}  // namespace psched::executor::cpu
