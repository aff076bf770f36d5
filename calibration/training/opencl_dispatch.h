// The dispatch scheme of psched's OpenCL backend for host GPU GBDT models: the GPU dispatch
// features (predictor/gbdt/dispatch.h) of an op configuration, from the NDRange the backend
// launches for it (executor/opencl/launch_geometry.h). It lives here, above both, so neither
// the predictor nor the executor depends on the other. Pure functions; thread-safe.
#pragma once

#include "predictor/gbdt/dispatch.h"
#include "predictor/op_config.h"

namespace psched::calibration {

// The scheme name host GPU model files carry.
inline constexpr char kOpenClDispatchScheme[] = "psched-opencl";

// The main launch of `config` as KernelFactory builds it (conv, depthwise conv, fully
// connected; the per-element geometry otherwise). An input-channel slice launches the full
// output's geometry over its channel range, plus a zero fill and an activation epilogue
// that the `accumulate` feature accounts for. Work-group sizes and counts are 0: the OpenCL
// runtime chooses them.
predictor::gbdt::DispatchFeatures OpenClDispatch(const predictor::OpConfig& config);

}  // namespace psched::calibration
