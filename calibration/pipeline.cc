#include "calibration/pipeline.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "calibration/op_timing/calibration_cases.h"
#include "calibration/op_timing/in_graph_timing.h"
#include "scheduler/registry/registry.h"

namespace psched::calibration {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void Report(const PipelineOptions& options, const PipelineProgress& progress) {
  if (options.progress) options.progress(progress);
}

// The priority models among `models`: those named in options.priority_models, or all of them.
std::vector<model::Graph> PriorityGraphs(const PipelineOptions& options,
                                         std::span<const model::Graph> models) {
  std::vector<model::Graph> graphs;
  for (const model::Graph& g : models) {
    if (options.priority_models.empty() ||
        std::find(options.priority_models.begin(), options.priority_models.end(), g.name) !=
            options.priority_models.end()) {
      graphs.push_back(g);
    }
  }
  return graphs;
}

// How each case is timed on `platform`, from the options.
CalibrationOptions TimingOptions(const platform::Platform& platform,
                                 std::span<const predictor::AnalyticDeviceParams> priors,
                                 const PipelineOptions& options) {
  CalibrationOptions timing;
  timing.platform = platform.name;
  timing.budget_s = options.budget_s;
  timing.runs = options.runs;
  timing.fastest_run = options.fastest_run;
  timing.warmup_runs = options.warmup_runs;
  timing.max_case_ms = options.max_case_ms;
  timing.seed = options.seed;
  timing.prior = std::make_shared<predictor::AnalyticModel>(
      "prior", std::vector<predictor::AnalyticDeviceParams>(priors.begin(), priors.end()));
  return timing;
}

// Step 1: the cases of `models` timed on every device of `platform`, then in-graph.
absl::Status TimeOps(const platform::Platform& platform,
                     std::span<const predictor::AnalyticDeviceParams> priors,
                     std::span<const model::Graph> models, std::span<const model::Graph> priority,
                     const PipelineOptions& options, PipelineResult& result) {
  CaseOptions case_options;
  case_options.seed = options.seed;
  for (const model::Graph& g : priority) case_options.priority_models.push_back(g.name);
  const std::vector<CalibrationCase> cases = BuildCases(models, case_options);
  Report(options, {.step = PipelineStep::kOpTiming,
                   .models = static_cast<int>(models.size()),
                   .cases = static_cast<int>(cases.size())});
  const auto start = std::chrono::steady_clock::now();
  CalibrationOptions timing = TimingOptions(platform, priors, options);
  timing.co_run_share = options.co_run_share;
  if (options.progress) {
    timing.progress = [&](const CalibrationProgress& p) {
      options.progress({.step = PipelineStep::kOpTiming, .timing = &p});
    };
  }
  absl::StatusOr<CalibrationRun> run = Calibrate(platform.devices, cases, timing);
  if (!run.ok()) return run.status();
  Report(options,
         {.step = PipelineStep::kOpTiming, .finished = true, .elapsed_s = SecondsSince(start)});
  result.samples = std::move(run->samples);
  result.devices = std::move(run->devices);
  if (!options.in_graph) return absl::OkStatus();

  Report(options, {.step = PipelineStep::kInGraph, .models = static_cast<int>(priority.size())});
  const auto in_graph_start = std::chrono::steady_clock::now();
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const platform::DeviceSpec& device = platform.devices[d];
    if (device.kind != platform::DeviceKind::kCpu || result.devices[d].skipped) continue;
    const auto device_start = std::chrono::steady_clock::now();
    InGraphTiming timed_device{.device = device.name};
    for (const model::Graph& graph : priority) {
      absl::StatusOr<std::vector<predictor::host_model::CalibrationSample>> timed = TimeOpsInGraph(
          device, graph,
          {.warmup_runs = options.warmup_runs, .runs = options.runs, .seed = options.seed});
      if (!timed.ok()) {
        return absl::Status(timed.status().code(),
                            absl::StrCat("in-graph timing of ", graph.name, " on ", device.name,
                                         ": ", timed.status().message()));
      }
      timed_device.ops += static_cast<int>(timed->size());
      ++timed_device.models;
      result.samples.samples.insert(result.samples.samples.end(), timed->begin(), timed->end());
    }
    timed_device.elapsed_s = SecondsSince(device_start);
    result.in_graph.push_back(std::move(timed_device));
  }
  Report(options, {.step = PipelineStep::kInGraph,
                   .finished = true,
                   .elapsed_s = SecondsSince(in_graph_start)});
  return absl::OkStatus();
}

// Step 4: probes of the priority models on the devices that calibrated, their costs applied.
absl::Status MeasureRunCosts(const platform::Platform& platform, const std::vector<bool>& usable,
                             std::span<const model::Graph> priority, const PipelineOptions& options,
                             PipelineResult& result) {
  if (priority.empty()) {
    result.run_costs_missing = "no priority model among the models";
    return absl::OkStatus();
  }
  Report(options, {.step = PipelineStep::kRunCosts, .models = static_cast<int>(priority.size())});
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<RunCosts> costs =
      CalibrateHostRunCosts(priority, platform, usable, result.training.model, scheduler::PlanWith,
                            {.probe = {.warmup_runs = std::max(1, options.warmup_runs),
                                       .rounds = options.run_rounds,
                                       .min_s = options.run_min_s,
                                       .settle_ms = options.probe_settle_ms},
                             .seed = options.seed});
  if (!costs.ok()) return costs.status();
  Report(options,
         {.step = PipelineStep::kRunCosts, .finished = true, .elapsed_s = SecondsSince(start)});
  if (costs->probes == 0) {
    result.run_costs_missing = "no CPU device calibrated";
    return absl::OkStatus();
  }
  return ApplyRunCosts(*costs, result.training);
}

// A refit's stored run costs, less those of devices `platform` does not have, applied.
absl::Status ApplyStoredRunCosts(const platform::Platform& platform, RunCosts costs,
                                 HostTraining& training) {
  auto known = [&](const std::string& name) { return platform.DeviceIndex(name).has_value(); };
  std::erase_if(costs.in_run, [&](const RunCosts::InRun& r) { return !known(r.device); });
  std::erase_if(costs.sync,
                [&](const RunCosts::Sync& s) { return !known(s.from) || !known(s.to); });
  return ApplyRunCosts(costs, training);
}

}  // namespace

absl::StatusOr<PipelineResult> RunPipeline(const platform::Platform& platform,
                                           std::span<const predictor::AnalyticDeviceParams> priors,
                                           std::span<const model::Graph> models,
                                           const PipelineOptions& options,
                                           const StoredCalibration* stored) {
  if (priors.size() != platform.devices.size()) {
    return absl::InvalidArgumentError(absl::StrCat("calibration: ", priors.size(), " priors for ",
                                                   platform.devices.size(), " devices"));
  }
  const std::vector<model::Graph> priority = PriorityGraphs(options, models);
  PipelineResult result;
  if (stored != nullptr) {
    result.samples = stored->samples;
  } else if (absl::Status s = TimeOps(platform, priors, models, priority, options, result);
             !s.ok()) {
    return s;
  }
  std::vector<bool> usable(platform.devices.size(), true);
  for (size_t d = 0; d < result.devices.size(); ++d) usable[d] = !result.devices[d].skipped;

  HostTrainingOptions training_options;
  training_options.priors.assign(priors.begin(), priors.end());
  training_options.seed = options.seed;
  training_options.folds = options.folds;
  training_options.min_family_samples = options.min_family_samples;
  training_options.anchors = options.anchors;
  const auto train_start = std::chrono::steady_clock::now();
  absl::StatusOr<HostTraining> training =
      TrainHostModel(platform.name, result.samples, training_options);
  if (!training.ok()) return training.status();
  result.training = std::move(*training);
  result.training_s = SecondsSince(train_start);

  if (options.plan_rounds > 0 && !priority.empty()) {
    PlannedSamplingOptions planned;
    planned.rounds = options.plan_rounds;
    planned.timing = TimingOptions(platform, priors, options);
    planned.timing.budget_s = options.plan_budget_s;
    planned.training = training_options;
    Report(options,
           {.step = PipelineStep::kPlannedCases, .models = static_cast<int>(priority.size())});
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<PlannedSamplingRound>> rounds = SamplePlannedCases(
        priority, platform, usable, scheduler::PlanWith, planned, result.samples, result.training);
    if (!rounds.ok()) return rounds.status();
    result.planned = std::move(*rounds);
    Report(
        options,
        {.step = PipelineStep::kPlannedCases, .finished = true, .elapsed_s = SecondsSince(start)});
  }

  if (stored != nullptr && stored->run_costs.has_value()) {
    if (absl::Status s = ApplyStoredRunCosts(platform, *stored->run_costs, result.training);
        !s.ok()) {
      return s;
    }
  } else if (options.run_rounds > 0) {
    if (absl::Status s = MeasureRunCosts(platform, usable, priority, options, result); !s.ok()) {
      return s;
    }
  }
  return result;
}

}  // namespace psched::calibration
