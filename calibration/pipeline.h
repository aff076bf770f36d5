// The calibration pipeline: the one sequence of steps that pschedd's Calibrate
// (daemon/coexec_backend.cc) and psched-calibrate (tools/psched_calibrate/) both run.
//
//   1. Op timing (op_timing/): BuildCases over the models, the priority models' ops first,
//      then every device of the platform timed for `budget_s` alone and, for the last
//      `co_run_share` of it, under co-run load (Calibrate). With `in_graph`, every op of the
//      priority models is also timed inside whole-model runs on each CPU device that
//      calibrated (TimeOpsInGraph). A refit starts from stored samples and skips this step.
//   2. Training (training/host_training.h): per device and op family a GBDT model or the
//      analytic fit, whichever predicts the held-out models better.
//   3. Planned cases (planned_cases.h), `plan_rounds` times: plan the priority models with the
//      trained model, time the configurations those plans use that no sample has, train again.
//   4. Run costs (run_costs/): real plans of the priority models made with the trained model
//      run on the CPU devices that calibrated (and the GPU beside the first), and their in-run
//      factors, sync and hand-off costs fitted and put into the model (ApplyRunCosts). A refit
//      may apply the run costs stored with its samples instead.
//
// The priority models are data, not code: the graph names in `priority_models`, or every model
// given when it is empty. The result holds the samples, the trained model (HostTraining: the
// model, its stored form `params`, the error report) and what each step did; the caller stores
// or prints it (pschedd keeps `params` in its calibrations table, psched-calibrate writes them
// to --out).
//
// RunPipeline blocks the calling thread for the whole run and calls `progress` on it; the
// platform's devices must not run anything else meanwhile.
#pragma once

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/op_timing/calibrate.h"
#include "calibration/planned_cases.h"
#include "calibration/run_costs/run_cost_calibration.h"
#include "calibration/run_costs/run_costs.h"
#include "calibration/training/host_training.h"
#include "model/graph.h"
#include "platform/platform.h"
#include "predictor/analytic_model.h"
#include "predictor/host_model/calibration_samples.h"

namespace psched::calibration {

enum class PipelineStep { kOpTiming, kInGraph, kPlannedCases, kRunCosts };

// What the pipeline is doing: each step's start and end, and the op timing's own progress in
// between (per device, per sample).
struct PipelineProgress {
  PipelineStep step = PipelineStep::kOpTiming;
  bool finished = false;  // false: the step starts; true: it ended
  double elapsed_s = 0;   // the step's, when finished
  int models = 0;         // the models the step uses
  int cases = 0;          // kOpTiming's start: the configurations and slices it may time
  // kOpTiming between its start and end; null otherwise.
  const CalibrationProgress* timing = nullptr;
};

// The defaults are psched-calibrate's (its flag of the same name); pschedd sets budget_s and
// run_min_s and keeps the rest.
struct PipelineOptions {
  // Op timing (op_timing/calibrate.h, CalibrationOptions): seconds per device - longer gives more
  // samples and a better fit; timed and untimed runs per case; the fastest run instead of the
  // median (a machine shared with other busy processes); cases the prior predicts slower than
  // max_case_ms are skipped (0: no limit); the share of the budget timed under co-run load.
  double budget_s = 3.0;
  int runs = 5;
  int warmup_runs = 1;
  bool fastest_run = false;
  double max_case_ms = 30.0;
  double co_run_share = 0.15;
  // Case order, inputs and synthetic weights, the held-out folds, the probes' weights.
  uint64_t seed = 1;
  // Graph names (model::Graph::name) of the models the host will schedule: their ops are timed
  // first with every slice size, and only they are timed in-graph, planned and probed. Empty:
  // every model given to RunPipeline. A name no model has is ignored.
  std::vector<std::string> priority_models;
  // Also time every op of the priority models inside whole-model runs (after the budget).
  bool in_graph = false;

  // Training (training/host_training.h, HostTrainingOptions): folds of the model-grouped
  // held-out evaluation, samples a family needs for GBDT, keeping the samples as anchors.
  int folds = 5;
  int min_family_samples = 30;
  bool anchors = true;

  // Planned cases: rounds (0: none) and the timing budget per device and round, seconds.
  int plan_rounds = 0;
  double plan_budget_s = 10;

  // Run costs (run_costs/run_probes.h, ProbeOptions): timed rounds of the probes (0: no run
  // costs), more of them until they have taken run_min_s seconds, and the idle pause before each
  // timed run - the cold start after it is fitted.
  int run_rounds = ProbeOptions{}.rounds;
  double run_min_s = kHostRunCostMinSeconds;
  double probe_settle_ms = ProbeOptions{}.settle_ms;

  std::function<void(const PipelineProgress&)> progress;  // may be empty
};

// A refit's starting point instead of op timing: samples measured before, and the run costs
// stored with them. Set run costs are applied (those of devices the platform does not have
// dropped) and no probe runs; unset, the probes run when PipelineOptions::run_rounds > 0.
struct StoredCalibration {
  predictor::host_model::CalibrationSamples samples;
  std::optional<RunCosts> run_costs;
};

// The in-graph timings of one CPU device.
struct InGraphTiming {
  std::string device;
  int ops = 0;
  int models = 0;
  double elapsed_s = 0;
};

struct PipelineResult {
  predictor::host_model::CalibrationSamples samples;  // everything the model was trained on
  HostTraining training;                              // the model; its run_costs when it has them
  std::vector<DeviceOutcome> devices;                 // per device of the op timing; refit: none
  std::vector<InGraphTiming> in_graph;
  std::vector<PlannedSamplingRound> planned;
  double training_s = 0;  // the first training's wall time
  // Why the model carries no run costs when the step was asked for ("no CPU device
  // calibrated", "no priority model among the models"); empty otherwise.
  std::string run_costs_missing;
};

// `priors` are the analytic parameters of each device of `platform` (its order): the fit's start
// and fallback, the timing's case limit. `models` are the graphs to time, plan and probe (beside
// them op timing always times the transformer shape graphs); a refit without planned cases or
// probes needs none. The trained model is named after `platform.name`. InvalidArgument for a prior
// count that differs from the platform's devices; the steps' errors otherwise (op timing, training,
// planning, probes).
absl::StatusOr<PipelineResult> RunPipeline(const platform::Platform& platform,
                                           std::span<const predictor::AnalyticDeviceParams> priors,
                                           std::span<const model::Graph> models,
                                           const PipelineOptions& options,
                                           const StoredCalibration* stored = nullptr);

}  // namespace psched::calibration
