// The NDRange every OpenCL kernel of this backend launches, in one place: KernelFactory
// (opencl_kernels.h) sizes its launches with these functions, and calibration's
// OpenClDispatch (calibration/training/opencl_dispatch.h) gives host GBDT models the same
// geometry as dispatch features, so they describe what this backend really enqueues.
//
// Local sizes are left to the OpenCL runtime (a null local size), so work-group sizes and
// counts are reported as 0 (unknown). Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>


namespace psched::executor::opencl {

// Must match PSCHED_CONV_TILE_W / PSCHED_CONV_TILE_C in kernels/conv2d.cl: a work item of
// psched_conv2d computes kConvTileW output pixels of kConvTileC output channels.
inline constexpr int64_t kConvTileW = 4;
inline constexpr int64_t kConvTileC = 8;

struct NdRange {
  size_t dims = 1;
  std::array<size_t, 3> global = {1, 1, 1};
};

// psched_conv2d over `rows` output rows of width `out_w`, `groups` groups of `channels`
// output channels each (a channel range when groups == 1).
NdRange ConvNdRange(int64_t out_w, int64_t rows, int64_t groups, int64_t channels);
// psched_depthwise_conv2d over `channels` output channels.
NdRange DepthwiseConvNdRange(int64_t out_w, int64_t rows, int64_t channels);
// psched_fully_connected over `outputs` output features.
NdRange FullyConnectedNdRange(int64_t outputs);
// The per-element kernels (pool, pad, resize, binary ops): channels x width x height.
NdRange ElementwiseNdRange(int64_t channels, int64_t width, int64_t height);

}  // namespace psched::executor::opencl
