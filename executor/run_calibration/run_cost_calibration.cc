#include "executor/run_calibration/run_cost_calibration.h"

#include <algorithm>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "executor/calibration/calibrate.h"
#include "executor/run_calibration/fit_run_costs.h"
#include "executor/runtime/plan_from_schedule.h"
#include "model/synthetic_weights.h"
#include "predictor/device_subset_model.h"

namespace psched::executor::run_calibration {

absl::StatusOr<calibration::RunCosts> CalibrateRunCosts(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    std::span<runtime::Device* const> devices, const runtime::RuntimeOptions& runtime_options,
    const predictor::LatencyModel& model, const PlanFn& plan, const RunCostOptions& options) {
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
  std::vector<std::string> methods;
  for (const std::string& name : names) methods.push_back("single:" + name);
  if (num_devices >= 2)
    methods.insert(methods.end(), options.methods.begin(), options.methods.end());

  std::vector<model::Graph> weighted(graphs.begin(), graphs.end());
  std::vector<Probe> probes;
  for (model::Graph& graph : weighted) {
    if (!graph.has_weights) model::SynthesizeWeights(options.seed, &graph);
    absl::StatusOr<scheduler::Problem> problem =
        scheduler::Problem::FromGraph(graph, platform, model);
    if (!problem.ok()) {
      return absl::Status(problem.status().code(), absl::StrCat("run costs: ", graph.name, ": ",
                                                                problem.status().message()));
    }
    for (const std::string& method : methods) {
      absl::StatusOr<scheduler::Schedule> schedule = plan(*problem, method);
      if (!schedule.ok()) {
        return absl::Status(schedule.status().code(),
                            absl::StrCat("run costs: planning ", graph.name, " with ", method, ": ",
                                         schedule.status().message()));
      }
      probes.push_back({&graph, *std::move(schedule), absl::StrCat(graph.name, " ", method)});
    }
  }
  absl::StatusOr<std::vector<ProbeResult>> results =
      RunProbes(probes, devices, runtime_options, options.probe);
  if (!results.ok()) return results.status();
  return FitRunCosts(*results, names, std::vector<bool>(names.size(), true));
}

namespace {

// Probes the devices `indices` of `platform` (named `suffix`), on runtime devices made as
// pschedd makes them, with `model`'s predictions for them.
// A GPU among them has its dispatcher pinned to `gpu_core` (negative: not pinned).
absl::StatusOr<calibration::RunCosts> ProbeSubset(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<int>& indices, const std::string& suffix, int gpu_core,
    std::shared_ptr<const predictor::LatencyModel> model, const PlanFn& plan,
    const RunCostOptions& options) {
  platform::Platform subset = platform;  // its cache line, bandwidth
  subset.name = absl::StrCat(platform.name, "-", suffix);
  subset.devices.clear();
  for (int d : indices) {
    subset.devices.push_back(platform.devices[static_cast<size_t>(d)]);
    platform::DeviceSpec& spec = subset.devices.back();
    // The GPU per-op calibration timed.
    if (spec.kind == platform::DeviceKind::kGpu) {
      spec.opencl_device = calibration::CalibrationGpuSelector(spec.opencl_device);
    }
  }
  absl::StatusOr<std::unique_ptr<predictor::DeviceSubsetModel>> subset_model =
      predictor::DeviceSubsetModel::Create(std::move(model), indices);
  if (!subset_model.ok()) return subset_model.status();
  // As pschedd runs them: a cluster device on one pinned thread per core.
  absl::StatusOr<std::unique_ptr<runtime::PlatformDevices>> devices =
      runtime::PlatformDevices::Create(subset, {.gpu_core = gpu_core});
  if (!devices.ok()) return devices.status();
  return CalibrateRunCosts(graphs, subset, (*devices)->devices(), (*devices)->runtime_options(),
                           **subset_model, plan, options);
}

}  // namespace

absl::StatusOr<calibration::RunCosts> CalibrateHostRunCosts(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<bool>& usable, std::shared_ptr<const predictor::LatencyModel> model,
    const PlanFn& plan, const RunCostOptions& options) {
  std::vector<int> cpus;
  int gpu = -1;
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const platform::DeviceSpec& spec = platform.devices[d];
    if (!usable.empty() && !usable[d]) continue;
    if (spec.kind == platform::DeviceKind::kCpu) cpus.push_back(static_cast<int>(d));
    if (spec.kind == platform::DeviceKind::kGpu && gpu < 0) gpu = static_cast<int>(d);
  }
  if (cpus.empty()) return calibration::RunCosts{};
  absl::StatusOr<calibration::RunCosts> costs =
      ProbeSubset(graphs, platform, cpus, "cpus", -1, model, plan, options);
  if (!costs.ok() || gpu < 0) return costs;
  // The GPU beside one CPU device, the first: its in-run factor and what an edge between it
  // and a host thread costs (its waits and signals run in its own queue, so the CPU pairs'
  // cost does not carry over). The edge's cost is the same for every CPU device. Its driver
  // runs on another CPU device's core, off the probed one's, as psched_coexec_bench's
  // platform B has it.
  const std::vector<int>& probed = platform.devices[static_cast<size_t>(cpus.front())].cpu_cores;
  int gpu_core = -1;
  for (size_t i = 1; i < cpus.size() && gpu_core < 0; ++i) {
    for (int core : platform.devices[static_cast<size_t>(cpus[i])].cpu_cores) {
      if (std::find(probed.begin(), probed.end(), core) == probed.end()) {
        gpu_core = core;
        break;
      }
    }
  }
  absl::StatusOr<calibration::RunCosts> with_gpu =
      ProbeSubset(graphs, platform, {cpus.front(), gpu}, "gpu", gpu_core, model, plan, options);
  if (!with_gpu.ok()) return with_gpu.status();
  const std::string& gpu_name = platform.devices[static_cast<size_t>(gpu)].name;
  for (const calibration::RunCosts::InRun& r : with_gpu->in_run) {
    if (r.device == gpu_name) costs->in_run.push_back(r);
  }
  // No plan used both (the GPU got no share): nothing measured, no cost claimed.
  for (int c : cpus) {
    if (with_gpu->sync.empty()) break;
    const std::string& cpu_name = platform.devices[static_cast<size_t>(c)].name;
    costs->sync.push_back({.from = cpu_name, .to = gpu_name, .us = with_gpu->sync.front().us});
    costs->sync.push_back({.from = gpu_name, .to = cpu_name, .us = with_gpu->sync.front().us});
  }
  costs->probes += with_gpu->probes;
  costs->gpu_multi_device_measured_us = with_gpu->multi_device_measured_us;
  costs->gpu_multi_device_replay_us = with_gpu->multi_device_replay_us;
  return costs;
}

}  // namespace psched::executor::run_calibration
