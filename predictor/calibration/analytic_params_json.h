// The JSON form of analytic-model parameters: what calibration stores (the daemon keeps it
// in its SQLite cache) and loads back into an AnalyticModel.
//
//   {"platform": "host", "model_version": "analytic-v1/...", "devices": [{"name": "cpu.0",
//    "gpu": false, "gflops": {"conv2d": 30.5, ...}, "depthwise_gflops": x,
//    "bandwidth_gbps": x, "overhead_us": x, "dispatch_us": x, "half_parallelism": x}, ...]}
//
// `model_version` is informational (AnalyticModel recomputes it from the parameters). Pure
// functions, thread-safe.
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "predictor/analytic_model.h"

namespace psched::predictor::calibration {

struct AnalyticParams {
  std::string platform;
  std::vector<AnalyticDeviceParams> devices;

  // The model these parameters describe, named "<platform>+calibrated" as FitAnalyticModel
  // names it, so a stored model has the Version() of the fitted one.
  std::shared_ptr<const AnalyticModel> MakeModel() const;
};

nlohmann::json AnalyticParamsToJson(const AnalyticParams& params);
// InvalidArgument naming the device index and field: missing fields, unknown op kinds,
// non-finite or non-positive throughputs, bandwidth or half_parallelism, negative overheads.
absl::StatusOr<AnalyticParams> AnalyticParamsFromJson(const nlohmann::json& json);

// "<platform>+calibrated"
std::string CalibratedModelName(std::string_view platform);

}  // namespace psched::predictor::calibration
