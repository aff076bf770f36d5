// The analytic roofline a GBDT model file implies, for the families it has no model for.
//
// Every family model carries a linear baseline in FLOPs and bytes (features.h) fitted to the
// device's measurements. The dense conv family's is the best constrained of them (convs are
// most of every measured model's time), so its us per MFLOP and us per MB become the
// device's compute peak and bandwidth: a MatMul gets that peak (the same GEMM kernels), the
// other kinds a quarter of it (as the analytic profiles' priors, profiles.cc), and the conv
// baseline's constant is the per-op overhead. A coefficient the fit left at 0 takes the
// elementwise family's, else a conservative default. Pure; thread-safe.
#pragma once

#include <string>

#include "predictor/analytic_model.h"
#include "predictor/gbdt/model_file.h"

namespace psched::predictor::gbdt {

// Defaults where the file's baselines say nothing: GFLOP/s and GB/s.
inline constexpr double kDefaultRooflineGflops = 10.0;
inline constexpr double kDefaultRooflineGbps = 10.0;

// The roofline of `model`'s device under the platform device name `name`; no dispatch cost
// (GbdtLatencyModel adds the device's extra_us to every prediction alike).
AnalyticDeviceParams RooflineFromBaselines(const DeviceModel& model, std::string name);

}  // namespace psched::predictor::gbdt
