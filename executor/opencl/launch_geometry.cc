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

predictor::gbdt::DispatchFeatures OpenClDispatch(const predictor::OpConfig& config) {
  using predictor::gbdt::KernelClass;
  const model::Shape& out = config.output;
  predictor::gbdt::DispatchFeatures d;
  NdRange range;
  switch (config.kind) {
    case model::OpKind::kConv2d:
      if (config.IsDepthwise()) {
        d.kernel = KernelClass::kDepthwise;
        range = DepthwiseConvNdRange(out.w, out.h, out.c);
      } else {
        d.kernel = config.groups > 1 ? KernelClass::kGrouped : KernelClass::kDirect;
        const int64_t groups = config.groups < 1 ? 1 : config.groups;
        range = ConvNdRange(out.w, out.h, groups, out.c / groups);
      }
      break;
    case model::OpKind::kFullyConnected:
      d.kernel = KernelClass::kFullyConnected;
      range = FullyConnectedNdRange(out.Elements());
      break;
    default:
      d.kernel = KernelClass::kElementwise;
      range = ElementwiseNdRange(out.c, out.w, out.h);
      break;
  }
  for (size_t i = 0; i < 3; ++i) d.global[i] = static_cast<int64_t>(range.global[i]);
  return d;
}

}  // namespace psched::executor::opencl
