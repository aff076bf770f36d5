#include "executor/opencl/launch_geometry.h"

namespace psched::executor::opencl {
namespace {

size_t CeilDiv(int64_t a, int64_t b) { return static_cast<size_t>((a + b - 1) / b); }
size_t AtLeastOne(int64_t v) { return static_cast<size_t>(v < 1 ? 1 : v); }

}  // namespace

NdRange ConvNdRange(int64_t out_w, int64_t rows, int64_t groups, int64_t channels) {
  // (pixel tiles, rows, channel blocks of every group): see psched_conv2d.
  return NdRange{3,
                 {CeilDiv(out_w, kConvTileW), static_cast<size_t>(rows),
                  static_cast<size_t>(groups) * CeilDiv(channels, kConvTileC)}};
}

NdRange DepthwiseConvNdRange(int64_t out_w, int64_t rows, int64_t channels) {
  return NdRange{3, {CeilDiv(channels, 4), CeilDiv(out_w, kConvTileW), static_cast<size_t>(rows)}};
}

NdRange FullyConnectedNdRange(int64_t outputs) {
  return NdRange{1, {static_cast<size_t>(outputs), 1, 1}};
}

NdRange ElementwiseNdRange(int64_t channels, int64_t width, int64_t height) {
  return NdRange{3, {AtLeastOne(channels), AtLeastOne(width), AtLeastOne(height)}};
}

}  // namespace psched::executor::opencl
