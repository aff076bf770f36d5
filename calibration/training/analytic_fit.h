// Fitting the analytic roofline model (predictor/analytic_model.h) to measured latencies.
//
// FitAnalyticModel splits the samples of each (device, op kind) into a training part and a
// seeded held-out part (20% by default), fits every device's parameters on the training
// part and reports the prediction errors on the held-out part. Per device it fits the
// effective GFLOP/s of every op kind that has training samples with work (depthwise and
// pointwise convs separately), one memory bandwidth, one fixed overhead, one
// half_parallelism, the conv half_reduction (when non-depthwise convs were timed) and the
// in-place concat cost (when concats were); what has no samples keeps the prior's value.
//
// Method: Levenberg-Marquardt on log-space parameters minimising the squared log error
// sum_i (log predicted_i - log measured_i)^2, i.e. relative error, so a 20 us add and a
// 20 ms conv weigh the same. Log parameters keep every value positive, and a weak ridge
// term (1e-3 per parameter) toward the starting point keeps parameters the samples cannot
// see (the GFLOP/s of a kind whose samples are all memory-bound) where they started. The
// start is a data-driven guess (overhead from the fastest samples, GFLOP/s and bandwidth
// from high percentiles of the implied rates, concat_us the median concat), tried with
// several half_parallelism and half_reduction values; the best end point wins. The split
// stratifies by op kind (depthwise apart); the error rows are per throughput class
// ("conv2d_1x1" for pointwise convs, "depthwise", else the op kind) and "all".
//
// GPU samples measure a kernel launch to completion; the per-subtask synchronisation kernel
// (`dispatch_us`, paper sec. 2.1) is not part of them, so it is taken from the prior, added
// to the fitted model, and left out when comparing predictions with measurements.
//
// All functions are pure and thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "predictor/analytic_model.h"
#include "predictor/host_model/calibration_samples.h"

namespace psched::calibration {

struct FitOptions {
  // Seeds the held-out split; the same samples and seed give the same split and model.
  uint64_t seed = 1;
  // Share of each (device, kind) group held out for the error report, in [0, 0.9]. Groups of
  // one sample stay in training. 0 reports no held-out errors.
  double holdout_fraction = 0.2;
  // Starting point and fallback per device, matched by name (the `gpu` flag and dispatch_us
  // come from here). A device without a prior starts from predictor::AnalyticDeviceParams'
  // defaults.
  std::vector<predictor::AnalyticDeviceParams> priors;
  // Levenberg-Marquardt iterations per start.
  int max_iterations = 200;
};

// Absolute percentage errors |predicted - measured| / measured of one group, in percent.
struct ErrorStats {
  std::string device;
  std::string kind;  // an op kind name, "depthwise", "conv2d_1x1" (pointwise convs) or "all"
  int count = 0;
  double mape = 0;
  double median_ape = 0;
  double max_ape = 0;
};

struct FitReport {
  int train_samples = 0;
  int heldout_samples = 0;
  std::vector<ErrorStats> heldout;  // per device: one row per kind, then "all"
  std::vector<ErrorStats> train;
  std::vector<std::string> unfitted_devices;  // no samples: prior parameters kept
};

struct FitResult {
  std::vector<predictor::AnalyticDeviceParams> params;  // one per device, in the order given
  std::shared_ptr<const predictor::AnalyticModel> model;
  FitReport report;
  std::vector<predictor::host_model::CalibrationSample>
      heldout;  // the held-out samples, for further reports
};

// Fits one predictor::AnalyticModel for `device_names` (device i of the model predicts
// device_names[i]) named "<platform>+calibrated". InvalidArgument for no device names, duplicate
// names, a sample on a device not listed, a holdout fraction outside [0, 0.9] or max_iterations
// < 1.
absl::StatusOr<FitResult> FitAnalyticModel(std::string_view platform,
                                           std::span<const std::string> device_names,
                                           const predictor::host_model::CalibrationSamples& samples,
                                           const FitOptions& options = {});

// Errors of `model` on `samples`, grouped as in FitReport; samples on devices not in
// `device_names` are skipped. With `exclude_dispatch` the model's dispatch_us is subtracted
// from each prediction (GPU samples do not contain the sync kernel).
std::vector<ErrorStats> EvaluateErrors(
    const predictor::AnalyticModel& model, std::span<const std::string> device_names,
    std::span<const predictor::host_model::CalibrationSample> samples,
    bool exclude_dispatch = true);

// A fixed-width text table: device, kind, n, MAPE %, median APE %, max APE %.
std::string FormatErrorTable(std::span<const ErrorStats> rows);

nlohmann::json FitReportToJson(const FitReport& report);

}  // namespace psched::calibration
