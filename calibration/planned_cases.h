// Planned cases: the op configurations the host's plans put on each device, timed where
// calibration has no sample of them yet.
//
// BuildCases (calibration/op_timing/calibration_cases.h) times every op whole and a quarter,
// half and three quarters of it; the planners then cut anywhere on their alignment grid, and
// the GBDT model predicts a cut it never saw from its neighbours in feature space. Where that
// goes wrong it goes wrong in the plans: hrnet's 3x3 conv 512->1024 on 7x7 pixels takes 41.7
// ms on PoCL whole and 8.0 ms for a quarter of its output channels, but the GPU's model
// predicted 3.2 ms for the 160 channels that hrnet's co-execution plans gave it, which took
// 6.0 ms - most of why those plans ran 1.15x their prediction. So calibration plans the
// priority models as the run-cost probes will (the same device subsets, probe_subsets.h, and
// methods), collects each subtask's configuration on its device, times the ones without a
// sample, trains again, and plans again with the new model, for a given number of rounds or
// until the plans need nothing new.
//
// A subtask is timed as the planner predicts it (scheduler::Problem): a slice of `n` units
// from unit 0, whatever its place in the op. Blocks the calling thread while timing; the
// devices must not run anything else meanwhile.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/op_timing/calibrate.h"
#include "calibration/op_timing/calibration_cases.h"
#include "calibration/run_costs/run_cost_calibration.h"
#include "calibration/training/host_training.h"
#include "model/graph.h"
#include "platform/platform.h"
#include "predictor/host_model/calibration_samples.h"
#include "predictor/latency_model.h"

namespace psched::calibration {

// Per device of `platform` (its order): the configurations that plans of `graphs` put on it -
// made with `model` for every HostProbeSubsets subset of the `usable` devices, alone and with
// each of `methods` - that `sampled` has no sample of on that device timed alone, each once.
// Planning errors name the graph and method.
absl::StatusOr<std::vector<std::vector<calibration::CalibrationCase>>> PlannedCases(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<bool>& usable, std::shared_ptr<const predictor::LatencyModel> model,
    const PlanFn& plan, std::span<const std::string> methods,
    const predictor::host_model::CalibrationSamples& sampled);

struct PlannedSamplingOptions {
  int rounds = 1;  // plan, time, train; stops early when the plans need nothing new
  std::vector<std::string> methods = RunCostOptions{}.methods;
  // How each device times its planned cases (budget_s per device and round); no co-run phase.
  calibration::CalibrationOptions timing;
  calibration::HostTrainingOptions training;
};

// What one round planned and timed, per device of the platform.
struct PlannedSamplingRound {
  std::vector<int> planned;  // configurations without a sample
  std::vector<int> timed;    // of them, timed within the budget
};

// Rounds of: PlannedCases with `training`'s model, each device's cases timed alone on it
// (calibration::Calibrate) and added to `samples`, then `training` trained again on all of
// `samples` (TrainHostModel, under `platform`'s name). Run costs are not carried over: fit them
// after. Returns the rounds run; the last has nothing planned when the plans converged.
absl::StatusOr<std::vector<PlannedSamplingRound>> SamplePlannedCases(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<bool>& usable, const PlanFn& plan, const PlannedSamplingOptions& options,
    predictor::host_model::CalibrationSamples& samples, calibration::HostTraining& training);

}  // namespace psched::calibration
