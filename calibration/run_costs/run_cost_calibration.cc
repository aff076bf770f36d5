#include "calibration/run_costs/run_cost_calibration.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "calibration/run_costs/fit_run_costs.h"
#include "calibration/run_costs/probe_subsets.h"
#include "calibration/run_costs/quiet_rounds.h"
#include "executor/runtime/plan_from_schedule.h"
#include "model/synthetic_weights.h"
#include "predictor/device_subset_model.h"

namespace psched::calibration {

absl::StatusOr<calibration::RunCosts> CalibrateRunCosts(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    std::span<executor::runtime::Device* const> devices,
    const executor::runtime::RuntimeOptions& runtime_options, const predictor::LatencyModel& model,
    const PlanFn& plan, const RunCostOptions& options) {
  if (graphs.empty()) return absl::InvalidArgumentError("run costs: no graphs to probe with");
  const int num_devices = platform.num_devices();
  if (num_devices == 0 || static_cast<int>(devices.size()) != num_devices ||
      model.num_devices() != num_devices) {
    return absl::InvalidArgumentError(absl::StrCat("run costs: the platform has ", num_devices,
                                                   " devices, the runtime ", devices.size(),
                                                   " and the model ", model.num_devices()));
  }
  std::vector<std::string> names;
  int gpus = 0;
  for (const platform::DeviceSpec& d : platform.devices) {
    gpus += d.kind == platform::DeviceKind::kGpu ? 1 : 0;
    names.push_back(d.name);
  }
  if (gpus > 1) {
    return absl::InvalidArgumentError("run costs: probe one GPU at a time");
  }
  absl::StatusOr<std::vector<ProbePlan>> plans =
      PlanProbes(graphs, platform, model, plan, options.methods, "run costs");
  if (!plans.ok()) return plans.status();
  std::vector<model::Graph> weighted(graphs.begin(), graphs.end());
  for (model::Graph& graph : weighted) {
    if (!graph.has_weights) model::SynthesizeWeights(options.seed, &graph);
  }
  std::vector<Probe> probes;
  for (ProbePlan& p : *plans) {
    const model::Graph& graph = weighted[p.graph];
    probes.push_back({&graph, std::move(p.schedule), absl::StrCat(graph.name, " ", p.method)});
  }
  absl::StatusOr<std::vector<ProbeResult>> results =
      RunProbes(probes, devices, runtime_options, options.probe);
  if (!results.ok()) return results.status();
  const RoundSelection quiet = QuietestRounds(*results);
  calibration::RunCosts costs =
      FitRunCosts(KeepRounds(*results, quiet.kept), names, std::vector<bool>(names.size(), true));
  // min_s may have added rounds
  costs.rounds = results->empty() ? 0 : static_cast<int>(results->front().timings.size());
  costs.slowest_kept_round = quiet.slowest_kept;
  costs.slowest_dropped_round = quiet.slowest_dropped;
  return costs;
}

namespace {

// Probes `subset` of `platform` on runtime devices made as pschedd makes them, with `model`'s
// predictions for them.
absl::StatusOr<calibration::RunCosts> ProbeSubset(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const DeviceSubset& subset, std::shared_ptr<const predictor::LatencyModel> model,
    const PlanFn& plan, const RunCostOptions& options) {
  const platform::Platform probed = SubsetPlatform(platform, subset);
  absl::StatusOr<std::unique_ptr<predictor::DeviceSubsetModel>> subset_model =
      predictor::DeviceSubsetModel::Create(std::move(model), subset.indices);
  if (!subset_model.ok()) return subset_model.status();
  // As pschedd runs them: a cluster device on one pinned thread per core.
  absl::StatusOr<std::unique_ptr<executor::runtime::PlatformDevices>> devices =
      executor::runtime::PlatformDevices::Create(probed, {.gpu_core = subset.gpu_core});
  if (!devices.ok()) return devices.status();
  return CalibrateRunCosts(graphs, probed, (*devices)->devices(), (*devices)->runtime_options(),
                           **subset_model, plan, options);
}

}  // namespace

absl::StatusOr<calibration::RunCosts> CalibrateHostRunCosts(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<bool>& usable, std::shared_ptr<const predictor::LatencyModel> model,
    const PlanFn& plan, const RunCostOptions& options) {
  const std::vector<DeviceSubset> subsets = HostProbeSubsets(platform, usable);
  if (subsets.empty()) return calibration::RunCosts{};
  absl::StatusOr<calibration::RunCosts> costs =
      ProbeSubset(graphs, platform, subsets[0], model, plan, options);
  if (!costs.ok() || subsets.size() < 2) return costs;
  // The GPU beside the first CPU device: its in-run factor and what an edge between it and a
  // host thread costs, the same for every CPU device.
  absl::StatusOr<calibration::RunCosts> with_gpu =
      ProbeSubset(graphs, platform, subsets[1], model, plan, options);
  if (!with_gpu.ok()) return with_gpu.status();
  const std::string& gpu_name = platform.devices[static_cast<size_t>(subsets[1].indices[1])].name;
  for (const calibration::RunCosts::InRun& r : with_gpu->in_run) {
    if (r.device == gpu_name) costs->in_run.push_back(r);
  }
  // Each direction's costs to and from every CPU device. No plan used both (the GPU got no
  // share): nothing measured, no cost claimed.
  for (int c : subsets[0].indices) {
    const std::string& cpu_name = platform.devices[static_cast<size_t>(c)].name;
    for (calibration::RunCosts::Sync s : with_gpu->sync) {
      (s.from == gpu_name ? s.to : s.from) = cpu_name;
      costs->sync.push_back(std::move(s));
    }
  }
  costs->probes += with_gpu->probes;
  costs->gpu_multi_device_measured_us = with_gpu->multi_device_measured_us;
  costs->gpu_multi_device_replay_us = with_gpu->multi_device_replay_us;
  costs->gpu_multi_device_hand_off_replay_us = with_gpu->multi_device_hand_off_replay_us;
  return costs;
}

}  // namespace psched::calibration
