#include "executor/run_calibration/run_cost_calibration.h"

#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
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
  for (const platform::DeviceSpec& d : platform.devices) {
    if (d.kind != platform::DeviceKind::kCpu) {
      return absl::InvalidArgumentError(absl::StrCat(
          "run costs: device '", d.name, "' is not a CPU device; probe host-thread devices only"));
    }
    names.push_back(d.name);
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

absl::StatusOr<calibration::RunCosts> CalibrateHostRunCosts(
    std::span<const model::Graph> graphs, const platform::Platform& platform,
    const std::vector<bool>& usable, std::shared_ptr<const predictor::LatencyModel> model,
    const PlanFn& plan, const RunCostOptions& options) {
  platform::Platform cpus = platform;  // its cache line, bandwidth
  cpus.name = platform.name + "-cpus";
  cpus.devices.clear();
  std::vector<int> indices;
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const platform::DeviceSpec& spec = platform.devices[d];
    if (spec.kind != platform::DeviceKind::kCpu || (!usable.empty() && !usable[d])) continue;
    cpus.devices.push_back(spec);
    indices.push_back(static_cast<int>(d));
  }
  if (cpus.devices.empty()) return calibration::RunCosts{};
  absl::StatusOr<std::unique_ptr<predictor::DeviceSubsetModel>> subset =
      predictor::DeviceSubsetModel::Create(std::move(model), std::move(indices));
  if (!subset.ok()) return subset.status();
  // As pschedd runs them: a cluster device on one pinned thread per core.
  absl::StatusOr<std::unique_ptr<runtime::PlatformDevices>> devices =
      runtime::PlatformDevices::Create(cpus);
  if (!devices.ok()) return devices.status();
  return CalibrateRunCosts(graphs, cpus, (*devices)->devices(), (*devices)->runtime_options(),
                           **subset, plan, options);
}

}  // namespace psched::executor::run_calibration
