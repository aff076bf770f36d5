#include "calibration/training/opencl_dispatch.h"

#include "executor/opencl/launch_geometry.h"

namespace psched::calibration {

predictor::gbdt::DispatchFeatures OpenClDispatch(const predictor::OpConfig& config) {
  using predictor::gbdt::KernelClass;
  const model::Shape& out = config.output;
  predictor::gbdt::DispatchFeatures d;
  executor::opencl::NdRange range;
  switch (config.kind) {
    case model::OpKind::kConv2d:
      if (config.IsDepthwise()) {
        d.kernel = KernelClass::kDepthwise;
        range = executor::opencl::DepthwiseConvNdRange(out.w, out.h, out.c);
      } else {
        d.kernel = config.groups > 1 ? KernelClass::kGrouped : KernelClass::kDirect;
        const int64_t groups = config.groups < 1 ? 1 : config.groups;
        range = executor::opencl::ConvNdRange(out.w, out.h, groups, out.c / groups);
      }
      break;
    case model::OpKind::kFullyConnected:
      d.kernel = KernelClass::kFullyConnected;
      range = executor::opencl::FullyConnectedNdRange(out.Elements());
      break;
    default:
      d.kernel = KernelClass::kElementwise;
      range = executor::opencl::ElementwiseNdRange(out.c, out.w, out.h);
      break;
  }
  for (size_t i = 0; i < 3; ++i) d.global[i] = static_cast<int64_t>(range.global[i]);
  return d;
}

}  // namespace psched::calibration
