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

// Dense convs of at most this many input channels that write a strided output - a cout slice
// of their output, or an output the arena placed in a concat's channel slice - run on XNNPACK,
// which writes any pixel stride in place: oneDNN's JIT convs stage the output through a dense
// buffer (onednn_kernels.cc), and at so few channels that copy costs more than its kernels
// gain. psched_conv_kernels_bench, XNNPACK against oneDNN, us: squeezenet's 3x3 16>64 @55x55
// into a concat twice its width (--concat-x 2) 269 against 312 (253 dense on oneDNN), its 1x1
// 16>64 59 against 75, peleenet's 3x3 16>16 @56x56 76 against 99; as cout halves (--axis cout)
// 3x3 16>64 @55x55 145 against 227, the 3-channel stems 174-254 against 227-384, and the 16>16
// convs within 6% either way. At 32 channels and more oneDNN stays ahead, staged or not (3x3
// 32>64 @109x109 into a concat 2144 against 2096, 1x1 64>16 @56x56 46 against 42).
inline constexpr int64_t kXnnpackStridedMaxInputChannels = 16;

// Depthwise convs (groups = input channels = output channels) run on oneDNN, whole or a slice
// of rows or groups: its brgemm depthwise kernel with the activation as a post-op against
// XNNPACK's with an activation pass after, psched_conv_kernels_bench on efficientnet_b0's and
// mobilenet_v3_small's 21 depthwise configurations (3x3 and 5x5, stride 1 and 2, 7x7 to
// 112x112, with SiLU or HardSwish): 3209 against 3791 us in all, 1.2-2.1x faster on 16 of
// them, within 6% either way on the memory-bound rest (56x56 and larger outputs).

// kStreamingGemm, kOneDnn or kXnnpack for conv op `id` of `graph` computing `slice` into an
// output `output_pixel_stride` floats per pixel (0: the output's channels), on a device of any
// number of threads (CreateCpuKernel runs the first two on several as parallel slices). Never
// kAuto. Always kXnnpack in builds without oneDNN (ARM).
KernelLibrary ChooseConvLibrary(const model::Graph& graph, model::OpId id, WorkSlice slice,
                                int64_t output_pixel_stride = 0);

}  // namespace psched::executor::cpu
