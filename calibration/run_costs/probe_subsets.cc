#include "calibration/run_costs/probe_subsets.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "calibration/op_timing/calibrate.h"
#include "scheduler/device_capability.h"

namespace psched::calibration {

std::vector<DeviceSubset> HostProbeSubsets(const platform::Platform& platform,
                                           const std::vector<bool>& usable) {
  std::vector<int> cpus;
  int gpu = -1;
  for (size_t d = 0; d < platform.devices.size(); ++d) {
    const platform::DeviceSpec& spec = platform.devices[d];
    if (!usable.empty() && !usable[d]) continue;
    if (spec.kind == platform::DeviceKind::kCpu) cpus.push_back(static_cast<int>(d));
    if (spec.kind == platform::DeviceKind::kGpu && gpu < 0) gpu = static_cast<int>(d);
  }
  if (cpus.empty()) return {};
  std::vector<DeviceSubset> out = {{.indices = cpus, .suffix = "cpus"}};
  if (gpu < 0) return out;
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
  out.push_back({.indices = {cpus.front(), gpu}, .suffix = "gpu", .gpu_core = gpu_core});
  return out;
}

platform::Platform SubsetPlatform(const platform::Platform& platform, const DeviceSubset& subset) {
  platform::Platform out = platform;
  out.name = absl::StrCat(platform.name, "-", subset.suffix);
  out.devices.clear();
  for (int d : subset.indices) {
    out.devices.push_back(platform.devices[static_cast<size_t>(d)]);
    platform::DeviceSpec& spec = out.devices.back();
    if (spec.kind == platform::DeviceKind::kGpu) {
      spec.opencl_device = calibration::CalibrationGpuSelector(spec.opencl_device);
    }
  }
  return out;
}

absl::StatusOr<std::vector<ProbePlan>> PlanProbes(std::span<const model::Graph> graphs,
                                                  const platform::Platform& platform,
                                                  const predictor::LatencyModel& model,
                                                  const PlanFn& plan,
                                                  std::span<const std::string> methods,
                                                  absl::string_view what) {
  std::vector<ProbePlan> out;
  for (size_t g = 0; g < graphs.size(); ++g) {
    const model::Graph& graph = graphs[g];
    std::vector<std::string> all;
    for (const platform::DeviceSpec& d : platform.devices) {
      bool runs_all = true;
      for (model::OpId op = 0; op < static_cast<model::OpId>(graph.ops.size()) && runs_all; ++op) {
        runs_all = scheduler::DeviceRunsOp(d.kind, graph, op);
      }
      if (runs_all) all.push_back("single:" + d.name);
    }
    if (platform.devices.size() >= 2) all.insert(all.end(), methods.begin(), methods.end());
    absl::StatusOr<scheduler::Problem> problem =
        scheduler::Problem::FromGraph(graph, platform, model);
    if (!problem.ok()) {
      return absl::Status(problem.status().code(),
                          absl::StrCat(what, ": ", graph.name, ": ", problem.status().message()));
    }
    for (const std::string& method : all) {
      absl::StatusOr<scheduler::Schedule> schedule = plan(*problem, method);
      if (!schedule.ok()) {
        return absl::Status(schedule.status().code(),
                            absl::StrCat(what, ": planning ", graph.name, " with ", method, ": ",
                                         schedule.status().message()));
      }
      out.push_back({.graph = g, .method = method, .schedule = *std::move(schedule)});
    }
  }
  return out;
}

}  // namespace psched::calibration
