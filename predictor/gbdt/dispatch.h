// GPU dispatch features (paper appendix table): which kernel a GPU backend runs for an op
// configuration and the NDRange it launches - global size, work-group size and work-group
// count per dimension. They expose backend decisions that the op's shape hides: a kernel
// switch (direct vs Winograd) or a work-group quantisation step makes GPU latency jump
// where FLOPs change smoothly (paper sec. 5.4).
//
// A dispatch scheme is a pure function OpConfig -> DispatchFeatures, named in every GPU model
// file so a model is only ever evaluated with the scheme it was trained with. psched ships
// the TFLite GPU delegate's schemes (phone data, below); the host's OpenCL backend provides
// its own (calibration/training/opencl_dispatch.h) and passes it to GbdtLatencyModel::Create, so
// the predictor never depends on the executor. Everything here is pure and thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <optional>

#include "absl/strings/string_view.h"
#include "predictor/op_config.h"

namespace psched::predictor::gbdt {

// The kernel implementation a backend picks; numbered for use as a tree feature.
enum class KernelClass : uint8_t {
  kDirect = 0,          // a direct (generic) convolution
  kWinograd = 1,        // Winograd F(4x4, 3x3): input transform, batched GEMM, output transform
  kFullyConnected = 2,  // a matrix-vector kernel (also a 1x1 conv over a 1x1 input)
  kGrouped = 3,         // a grouped convolution, 1 < groups < channels
  kDepthwise = 4,       // one input channel per group
  kPooling = 5,
  kMean = 6,  // a reduction over the whole spatial extent
  kConcat = 7,
  kElementwise = 8,
};
inline constexpr int kNumKernelClasses = 9;

struct DispatchFeatures {
  KernelClass kernel = KernelClass::kDirect;
  std::array<int64_t, 3> global = {1, 1, 1};  // work items per dimension
  // Work-group size per dimension; 0 when the runtime chooses it (an OpenCL enqueue with a
  // null local size), in which case the work-group counts are unknown and reported as 0.
  std::array<int64_t, 3> local = {0, 0, 0};
};

// An average pool over its whole input to a 1x1 output: TFLite runs it as a mean, and the
// GBDT models predict it with the global-pool family.
bool IsWholeInputAverage(const OpConfig& config);

// Work-groups per dimension (ceil(global / local); 0 where local is 0).
std::array<int64_t, 3> WorkGroupCounts(const DispatchFeatures& d);

using DispatchFn = DispatchFeatures (*)(const OpConfig& config);

// The TFLite GPU delegate (OpenCL) as measured in mobile-ml-benchmark. Kernel choice follows
// the rules the data shows (psched-train checks them against every recorded kernel name):
// a 1x1 conv over a 1x1 input runs the fully-connected kernel; a conv with one input
// channel per group the depthwise kernel; other grouped convs the grouped kernel. The
// Winograd variant also picks Winograd for a dense 3x3 stride-1 conv with at least 64 input
// and 64 output channels and at least 32 4x4 output tiles (the Mali, PowerVR and Apple GPUs
// of the data; the Adreno GPUs never used it; the data puts the tile threshold in 17..49).
// The data records kernel names, not NDRanges: the global size is the delegate's grid
// (output pixels x 4-channel slices; Winograd tiles x slices; output slices for fully
// connected) and the work-group size a fixed nominal one.
DispatchFeatures TfliteGpuDispatch(const OpConfig& config);
DispatchFeatures TfliteGpuWinogradDispatch(const OpConfig& config);

// The TFLite geometry of `config` run with `kernel`: training uses the kernel the data
// recorded rather than the rule above, and psched-train reports where the two differ.
DispatchFeatures TfliteGpuDispatchWithKernel(const OpConfig& config, KernelClass kernel);
bool IsTfliteScheme(absl::string_view name);

// The scheme names model files use: "tflite-gpu", "tflite-gpu-winograd"; nullopt otherwise.
std::optional<DispatchFn> BuiltinDispatchScheme(absl::string_view name);

// The kernel class of a kernel name recorded by the TFLite GPU delegate, e.g.
// "convolution_winograd_4x4_6x6_1_linked_:_relu_2" -> kWinograd; nullopt when unknown.
std::optional<KernelClass> KernelClassFromTfliteName(absl::string_view name);

}  // namespace psched::predictor::gbdt
