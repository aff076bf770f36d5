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

// Dense convs run on the streaming GEMM where it is available when their slice has at most
// kStreamingGemmMaxPixels output pixels, or at most kStreamingGemmLargeFilterMaxPixels and at
// least kStreamingGemmLargeFilterBytes of filter: a filter used for so few pixels is read
// from memory, once per run by the streaming GEMM. Measured in psched_coexec_bench's per-op
// tables (docs/runtime-performance.md, "Convs with few output pixels"): at 25 pixels every
// inceptionv3 conv gains 20-30%; at 49 pixels the convs with 1-19 MB of filter gain 10-20%
// and those with less lose up to 2x (a small filter stays in cache, where oneDNN's blocking
// computes faster).
inline constexpr int64_t kStreamingGemmMaxPixels = 28;
inline constexpr int64_t kStreamingGemmLargeFilterMaxPixels = 64;
inline constexpr int64_t kStreamingGemmLargeFilterBytes = int64_t{1} << 20;

// kStreamingGemm, kOneDnn or kXnnpack for conv op `id` of `graph` computing `slice`, on a
// device of any number of threads (CreateCpuKernel runs the first two on several as parallel
// slices). Never kAuto. Always kXnnpack in builds without oneDNN (ARM).
KernelLibrary ChooseConvLibrary(const model::Graph& graph, model::OpId id, WorkSlice slice);

}  // namespace psched::executor::cpu
