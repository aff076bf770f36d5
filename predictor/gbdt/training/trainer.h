// Trains a device's GBDT model file from measurements (psched-train's engine), and measures
// its error the way it will be used: on models it has never seen.
//
// Two modes, by what was measured for the device:
// - per-op (OpTable has "<device>:us"): per family, a non-negative least-squares baseline
//   a * MFLOP + b * MB + c fitted to relative error, then XGBoost regression trees on
//   log(latency / baseline) (squared error, so relative errors count alike).
// - totals (TotalsTable has "<device>:us", the OpTable supplies each group's op list): per-op
//   latencies were never measured, so the baselines of all families are fitted jointly so that
//   each group's sum matches its total, then one booster per family is grown jointly with a
//   custom objective on (log sum - log total)^2 per group: XGBoost is given the gradient and a
//   diagonal bound of the hessian (2 w_i for an op carrying a fraction w_i of its group's
//   predicted time), so the trees learn which ops the baseline over- or under-charges.
//
// Families without rows get a fallback to the nearest modelled family (elementwise -> concat
// -> pool ...), written into the file. Cross-validation is grouped k-fold: the groups (the
// CNNs) are shuffled with the seed and dealt into k folds, so no model's ops are on both
// sides; every prediction goes through the model file format and GbdtLatencyModel, i.e. the
// path a shipped model takes. Everything is deterministic for a given seed (XGBoost runs
// single-threaded with the exact tree method).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "predictor/error_summary.h"
#include "predictor/gbdt/gbdt_latency_model.h"
#include "predictor/gbdt/model_file.h"
#include "predictor/gbdt/training/measurements.h"

namespace psched::predictor::gbdt::training {

struct BoosterParams {
  int rounds = 120;
  int max_depth = 6;
  double eta = 0.1;
  double subsample = 0.8;
  double colsample = 0.8;
  double min_child_weight = 2;
  double lambda = 1;
};

struct TrainingSpec {
  std::string device;  // the measured device id, e.g. "pixel4/gpu", "pixel4/1large"
  bool gpu = false;
  std::string dispatch;     // GPU: the dispatch scheme name
  DispatchSchemes schemes;  // schemes beyond the built-in ones
  // Per-op mode. Families with fewer than `small_family_rows` rows use at most depth 4 and
  // half the rounds, so a handful of rows cannot grow deep trees.
  BoosterParams per_op;
  int small_family_rows = 400;
  // Totals mode: shallow, strongly regularised trees (a group total constrains its ops only
  // jointly).
  BoosterParams totals = {100, 2, 0.1, 1.0, 1.0, 0.0, 30.0};
  int folds = 5;
  uint64_t seed = 1;
  std::string source;  // free text for the file's comments (where the data came from)
};

struct FamilyError {
  std::string family;  // or "all"
  int rows = 0;
  double mape = 0;  // percent
  double median_ape = 0;
  double p90_ape = 0;
};

struct GroupError {
  std::string group;
  double predicted_us = 0;
  double measured_us = 0;
  double ape() const;  // percent
};

struct TrainingReport {
  std::string device;
  bool totals_mode = false;
  int folds = 0;
  std::vector<FamilyError> families;  // held-out, per-op mode (last entry "all")
  std::vector<GroupError> groups;     // held-out whole-group sums, both modes
  int kernel_rows = 0;                // GPU rows with a recorded kernel name
  int kernel_rule_matches = 0;        // ... whose recorded kernel the dispatch rule predicts
  std::vector<std::string> kernel_mismatches;  // "file:line: recorded X, rule Y" (first few)

  // The group errors summarised (percent).
  ErrorSummary GroupSummary() const;
  // Markdown tables of the above.
  std::string Markdown() const;
};

// Deals the distinct `groups` into `folds` folds (shuffled with `seed`): group -> fold. The
// cross-validation of TrainPerOp / TrainFromTotals; other evaluations that must hold out the
// same groups (host calibration's analytic fit beside the GBDT) call it with the same seed.
std::map<std::string, int> AssignFolds(std::vector<std::string> groups, int folds, uint64_t seed);

// Cross-validates (filling `report` if non-null; folds < 2 skips it), then trains on every
// row and returns the model. InvalidArgument naming the table when the device was not
// measured, has no rows, or a GPU spec names an unknown dispatch scheme.
absl::StatusOr<DeviceModel> TrainPerOp(const OpTable& ops, const TrainingSpec& spec,
                                       TrainingReport* report);
absl::StatusOr<DeviceModel> TrainFromTotals(const OpTable& ops, const TotalsTable& totals,
                                            const TrainingSpec& spec, TrainingReport* report);

}  // namespace psched::predictor::gbdt::training
