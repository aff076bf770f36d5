// Trains the host's calibrated latency model (predictor/host_model/host_latency_model.h) from
// calibration samples, and stores and loads it.
//
// Per device, from the samples timed alone: a GBDT model file trained by the psched-train
// trainer (predictor/gbdt/training, per-op mode; GPU files name the OpenCL backend's dispatch
// scheme, calibration/training/opencl_dispatch.h) and the analytic roofline fit
// (calibration/training/analytic_fit.h). Both are evaluated on the same held-out folds:
// grouped k-fold by *model* (a sample's group is the model its op came from, the part of its
// source before '/'; BuildCases keeps one case per distinct op configuration, so neither a model
// nor a configuration is on both sides), with the trainer's own fold assignment. A family with at
// least `min_family_samples` samples on a device whose held-out MAPE under GBDT is not above the
// analytic fit's is predicted by the GBDT model, others by the analytic fit. The co-run samples
// (CalibrationSample::co_running) give each device's contention factor: the median of co-run /
// alone over the cases timed both ways.
//
// The stored form is JSON (what CalibrationOutput::params carries and the daemon keeps):
//   {"format": "psched-host-calibration-v1", "platform": "host", "model_version": "...",
//    "analytic": {AnalyticParamsToJson},
//    "devices": [{"name": "cpu", "gpu": false, "contention": 1.3,
//                 "families": {"conv": "gbdt", "pool": "analytic", ...},
//                 "gbdt": {"file": "<model file text>", "sha256": "<hex>"},
//                 "in_run": 1.08, "co_run": 1.05, "sync_us": {"gpu": 0, ...},
//                 "hand_off": {"gpu": {"window_us": 100, "spinning_us": 2, "parked_us": 60}}},
//                ...],
//    "run_overhead_us": 150}
// The file's SHA-256 is checked on loading and is part of the model's Version(), so a new model
// means new plan-cache keys. Analytic-only parameter JSON (AnalyticParamsToJson, written before
// GBDT training existed) still loads; so do devices without "in_run", "co_run", "sync_us" and
// "hand_off" and files without "run_overhead_us" (run costs, ApplyRunCosts: 1, 1, none, SyncUs
// and 0). Pure functions apart from XGBoost; thread-safe.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "calibration/run_costs/run_costs.h"
#include "nlohmann/json.hpp"
#include "predictor/analytic_model.h"
#include "predictor/error_summary.h"
#include "predictor/host_model/calibration_samples.h"
#include "predictor/host_model/host_latency_model.h"

namespace psched::calibration {

inline constexpr char kHostCalibrationFormat[] = "psched-host-calibration-v1";

struct HostTrainingOptions {
  // The devices in platform order (name, kind, dispatch_us) and the analytic fit's start.
  std::vector<predictor::AnalyticDeviceParams> priors;
  uint64_t seed = 1;  // folds, XGBoost's subsampling, the analytic fit
  int folds = 5;      // grouped k-fold over models, >= 2
  // Samples a family needs on a device for the GBDT model to predict it (and its held-out MAPE
  // must not exceed the analytic fit's).
  int min_family_samples = 30;
  // Co-run pairs a device needs for its contention factor to be used (else 1).
  int min_co_run_pairs = 3;
  bool apply_contention = true;
  // Keep each device's samples as anchors (predictor/host_model/measured_anchors.h): the ops
  // calibration timed, and their cuts, are then predicted from the times measured.
  bool anchors = true;
};

// Held-out errors of one (device, family), GBDT and analytic fit on the same folds.
struct FamilyComparison {
  std::string device;
  std::string family;  // gbdt::FamilyName, "all convolutions" or "all"
  int samples = 0;     // held-out predictions behind each summary
  predictor::ErrorSummary gbdt;
  predictor::ErrorSummary analytic;
  std::string used;  // "gbdt" or "analytic" (empty for the summary rows)
};

// co-run / alone of the cases a device timed both ways.
struct ContentionStats {
  std::string device;
  int pairs = 0;
  double median = 1, min = 1, max = 1;
  double factor = 1;  // what the model applies
};

struct HostTraining {
  std::shared_ptr<const predictor::host_model::HostLatencyModel> model;
  nlohmann::json params;  // the stored form
  std::vector<FamilyComparison> families;
  std::vector<ContentionStats> contention;
  // Devices with fewer samples than min_family_samples: no GBDT model, why.
  std::vector<std::string> analytic_only;
  int solo_samples = 0;
  int co_run_samples = 0;
  std::optional<RunCosts> run_costs;  // set by ApplyRunCosts
};

// InvalidArgument naming the sample for a sample on a device not among the priors, no priors,
// duplicate device names, or folds < 2; the trainer's and the fit's errors otherwise.
absl::StatusOr<HostTraining> TrainHostModel(
    absl::string_view platform, const predictor::host_model::CalibrationSamples& samples,
    const HostTrainingOptions& options);

// Puts run costs measured with `training.model` (calibration/run_costs/) into it: each
// device's in-run factor and its sync costs to the other devices; the model, its stored form and
// version are rebuilt. InvalidArgument naming the device when the costs name one the training
// does not have.
absl::Status ApplyRunCosts(const RunCosts& costs, HostTraining& training);

struct LoadedHostModel {
  std::shared_ptr<const predictor::LatencyModel> model;
  std::vector<std::string> device_names;
};
// Rebuilds the model from its stored form. InvalidArgument / DataLoss naming the device and,
// for a model file, the file and line ("calibration:cpu.gbdt:12: ..."): malformed JSON fields,
// a file whose SHA-256 differs from the stored one (damaged), a file that does not parse, was
// trained for another device or device kind, an unknown family name.
absl::StatusOr<LoadedHostModel> HostModelFromJson(const nlohmann::json& params);

// The comparison and contention tables as text.
std::string FormatHostTraining(const HostTraining& training);
nlohmann::json HostTrainingReportToJson(const HostTraining& training);

}  // namespace psched::calibration
