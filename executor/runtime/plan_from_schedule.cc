#include "executor/runtime/plan_from_schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "executor/runtime/cpu_device.h"

namespace psched::executor::runtime {

absl::StatusOr<ExecutionPlan> PlanFromSchedule(const model::Graph& graph,
                                               const scheduler::Schedule& schedule) {
  if (schedule.num_ops() != static_cast<int>(graph.ops.size())) {
    return absl::InvalidArgumentError(absl::StrCat("schedule covers ", schedule.num_ops(),
                                                   " ops, graph '", graph.name, "' has ",
                                                   graph.ops.size()));
  }
  std::vector<std::vector<const scheduler::ScheduledSubtask*>> by_device(
      static_cast<size_t>(schedule.num_devices()));
  for (const scheduler::ScheduledSubtask& s : schedule.subtasks()) {
    if (s.device < 0 || s.device >= schedule.num_devices() || s.op < 0 ||
        s.op >= schedule.num_ops()) {
      return absl::InvalidArgumentError(absl::StrCat("scheduled subtask of op ", s.op,
                                                     " on device ", s.device, " is out of range"));
    }
    by_device[static_cast<size_t>(s.device)].push_back(&s);
  }
  ExecutionPlan plan;
  plan.device_steps.resize(by_device.size());
  for (size_t d = 0; d < by_device.size(); ++d) {
    auto& list = by_device[d];
    // A zero-latency op may start exactly when its successor does; op order breaks the tie.
    std::stable_sort(list.begin(), list.end(), [](const auto* a, const auto* b) {
      return a->start_us != b->start_us ? a->start_us < b->start_us : a->op < b->op;
    });
    for (const scheduler::ScheduledSubtask* s : list) {
      plan.device_steps[d].push_back({.op = s->op,
                                      .slice = {s->axis, s->begin, s->end},
                                      .predicted_start_us = s->start_us,
                                      .predicted_end_us = s->end_us});
    }
  }
  if (auto s = ValidateExecutionPlan(graph, plan, schedule.num_devices()); !s.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("schedule of '", graph.name, "' gives an invalid plan: ", s.message()));
  }
  return plan;
}

absl::StatusOr<std::unique_ptr<PlatformDevices>> PlatformDevices::Create(
    const platform::Platform& platform, const PlatformDeviceOptions& options) {
  if (platform.devices.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("platform '", platform.name, "' has no devices"));
  }
  const auto gpus = std::count_if(
      platform.devices.begin(), platform.devices.end(),
      [](const platform::DeviceSpec& d) { return d.kind == platform::DeviceKind::kGpu; });
  if (gpus > 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        "platform '", platform.name, "' has ", gpus,
        " GPUs; the runtime shares one arena and can place it in one GPU's memory only"));
  }
  std::unique_ptr<PlatformDevices> result(new PlatformDevices());
  for (const platform::DeviceSpec& spec : platform.devices) {
    if (spec.kind == platform::DeviceKind::kGpu) {
      auto gpu = OpenClRuntimeDevice::Create(
          spec.name, {.selector = spec.opencl_device,
                      .core = options.gpu_core,
                      .overhead_iterations = options.gpu_overhead_iterations,
                      .program_cache_dir = options.gpu_program_cache_dir});
      if (!gpu.ok()) return gpu.status();
      result->gpu_ = gpu->get();
      result->owned_.push_back(std::move(*gpu));
    } else {
      // A cluster device runs every subtask on one pinned thread per core.
      const int threads = std::max<int>(1, static_cast<int>(spec.cpu_cores.size()));
      auto cpu = CpuDevice::Create(spec.name, spec.cpu_cores, threads);
      if (!cpu.ok()) return cpu.status();
      result->owned_.push_back(std::move(*cpu));
    }
    result->devices_.push_back(result->owned_.back().get());
  }
  return result;
}

std::vector<std::string> PlatformDevices::names() const {
  std::vector<std::string> names;
  for (const Device* d : devices_) names.push_back(d->name());
  return names;
}

RuntimeOptions PlatformDevices::runtime_options() const {
  RuntimeOptions options;
  if (gpu_ != nullptr) {
    options.allocate_arena = gpu_->ArenaAllocator();
    options.allocate_counters = gpu_->CounterAllocator();
  }
  return options;
}

}  // namespace psched::executor::runtime
