// The JSON form of analytic-model parameters: what calibration stores (the daemon keeps it
// in its SQLite cache) and loads back into an AnalyticModel.
//
//   {"platform": "host", "model_version": "analytic-v3/...", "devices": [{"name": "cpu.0",
//    "gpu": false, "gflops": {"conv2d": 30.5, ...}, "depthwise_gflops": x,
//    "pointwise_gflops": x, "half_reduction": x, "concat_us": x,
//    "bandwidth_gbps": x, "overhead_us": x, "dispatch_us": x, "half_parallelism": x}, ...]}
//
// `model_version` is informational (AnalyticModel recomputes it from the parameters).
// `pointwise_gflops`, `half_reduction` and `concat_us` are optional so that files written
// before they existed still load: they default to gflops.conv2d, 0 (no reduction term) and
// overhead_us. Pure functions, thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "predictor/analytic_model.h"

namespace psched::predictor::host_model {

struct AnalyticParams {
  std::string platform;
  std::vector<AnalyticDeviceParams> devices;

  // The model these parameters describe, named "<platform>+calibrated" as FitAnalyticModel
  // names it, so a stored model has the Version() of the fitted one.
  std::shared_ptr<const AnalyticModel> MakeModel() const;
};

nlohmann::json AnalyticParamsToJson(const AnalyticParams& params);
// InvalidArgument naming the device index and field: missing fields, unknown op kinds,
// non-finite or non-positive throughputs or bandwidth, negative overheads, half_parallelism
// or half_reduction.
absl::StatusOr<AnalyticParams> AnalyticParamsFromJson(const nlohmann::json& json);

// "<platform>+calibrated"
std::string CalibratedModelName(std::string_view platform);

}  // namespace psched::predictor::host_model
