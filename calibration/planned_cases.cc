#include "calibration/planned_cases.h"

#include <map>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "calibration/run_costs/probe_subsets.h"
#include "predictor/device_subset_model.h"
#include "predictor/op_config.h"

namespace psched::calibration {
absl::StatusOr<std::vector<std::vector<calibration::CalibrationCase>>> PlannedCases(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<bool>& usable, std::shared_ptr<const predictor::LatencyModel> model,
    const PlanFn& plan, std::span<const std::string> methods,
    const predictor::host_model::CalibrationSamples& sampled) {
  std::set<std::pair<std::string, std::string>> known;  // (device, configuration)
  for (const predictor::host_model::CalibrationSample& s : sampled.samples) {
    if (!s.co_running) known.emplace(s.device, calibration::ConfigKey(s.config));
  }
  std::vector<std::vector<calibration::CalibrationCase>> out(platform.devices.size());
  // One extracted op per (graph, op), shared by its cases.
  std::map<std::pair<const model::Graph*, model::OpId>, std::shared_ptr<const model::Graph>> ops;
  std::vector<model::ConcatAliasing> aliasing;
  for (const model::Graph& g : graphs) aliasing.push_back(model::AliasConcatInputs(g));
  for (const DeviceSubset& subset : HostProbeSubsets(platform, usable)) {
    const platform::Platform planned = SubsetPlatform(platform, subset);
    absl::StatusOr<std::unique_ptr<predictor::DeviceSubsetModel>> subset_model =
        predictor::DeviceSubsetModel::Create(model, subset.indices);
    if (!subset_model.ok()) return subset_model.status();
    absl::StatusOr<std::vector<ProbePlan>> plans =
        PlanProbes(graphs, planned, **subset_model, plan, methods, "planned cases");
    if (!plans.ok()) return plans.status();
    for (const ProbePlan& p : *plans) {
      const model::Graph& graph = graphs[p.graph];
      for (const scheduler::ScheduledSubtask& s : p.schedule.subtasks()) {
        const int device = subset.indices[static_cast<size_t>(s.device)];
        const platform::DeviceSpec& spec = platform.devices[static_cast<size_t>(device)];
        // As the planner predicts it: `n` units from unit 0.
        const int64_t end = s.axis == model::SplitAxis::kNone ? 1 : s.end - s.begin;
        predictor::OpConfig config = predictor::SubtaskConfig(
            predictor::WholeOpConfig(graph, s.op, aliasing[p.graph]), s.axis, 0, end);
        if (!known.emplace(spec.name, calibration::ConfigKey(config)).second) continue;
        std::shared_ptr<const model::Graph>& op = ops[{&graph, s.op}];
        if (op == nullptr)
          op = std::make_shared<const model::Graph>(calibration::ExtractOp(graph, s.op));
        std::string source = absl::StrCat(graph.name, "/op ", s.op, " '", graph.op(s.op).name, "'");
        if (s.axis != model::SplitAxis::kNone) {
          absl::StrAppend(&source, " ", std::string(model::SplitAxisName(s.axis)), "[0,", end, ")");
        }
        absl::StrAppend(&source, " planned by ", p.method);
        out[static_cast<size_t>(device)].push_back({.graph = op,
                                                    .axis = s.axis,
                                                    .begin = 0,
                                                    .end = end,
                                                    .config = std::move(config),
                                                    .category = "planned",
                                                    .source = std::move(source),
                                                    .priority = true});
      }
    }
  }
  return out;
}

absl::StatusOr<std::vector<PlannedSamplingRound>> SamplePlannedCases(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<bool>& usable, const PlanFn& plan, const PlannedSamplingOptions& options,
    predictor::host_model::CalibrationSamples& samples, calibration::HostTraining& training) {
  std::vector<PlannedSamplingRound> rounds;
  calibration::CalibrationOptions timing = options.timing;
  timing.co_run_share = 0;
  for (int round = 0; round < options.rounds; ++round) {
    absl::StatusOr<std::vector<std::vector<calibration::CalibrationCase>>> cases =
        PlannedCases(graphs, platform, usable, training.model, plan, options.methods, samples);
    if (!cases.ok()) return cases.status();
    PlannedSamplingRound& r = rounds.emplace_back();
    r.planned.assign(platform.devices.size(), 0);
    r.timed.assign(platform.devices.size(), 0);
    bool any = false;
    for (size_t d = 0; d < cases->size(); ++d) {
      const std::vector<calibration::CalibrationCase>& device_cases = (*cases)[d];
      r.planned[d] = static_cast<int>(device_cases.size());
      if (device_cases.empty()) continue;
      absl::StatusOr<calibration::CalibrationRun> run =
          calibration::Calibrate({&platform.devices[d], 1}, device_cases, timing);
      if (!run.ok()) return run.status();
      r.timed[d] = static_cast<int>(run->samples.samples.size());
      any = any || r.timed[d] > 0;
      for (predictor::host_model::CalibrationSample& s : run->samples.samples) {
        samples.samples.push_back(std::move(s));
      }
    }
    if (!any) break;
    absl::StatusOr<calibration::HostTraining> trained =
        calibration::TrainHostModel(platform.name, samples, options.training);
    if (!trained.ok()) return trained.status();
    training = *std::move(trained);
  }
  return rounds;
}

}  // namespace psched::calibration
