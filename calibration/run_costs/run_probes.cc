#include "calibration/run_costs/run_probes.h"

#include <chrono>
#include <memory>
#include <set>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "executor/runtime/plan_from_schedule.h"

namespace psched::calibration {

absl::StatusOr<std::vector<ProbeResult>> RunProbes(
    std::span<const Probe> probes, std::span<executor::runtime::Device* const> devices,
    const executor::runtime::RuntimeOptions& runtime_options, const ProbeOptions& options) {
  if (devices.empty()) return absl::InvalidArgumentError("run probes: no devices");
  if (options.rounds < 1 || options.warmup_runs < 0 || !(options.settle_ms >= 0)) {
    return absl::InvalidArgumentError(
        absl::StrCat("run probes: need rounds >= 1, warmup_runs >= 0 and settle_ms >= 0, got ",
                     options.rounds, ", ", options.warmup_runs, " and ", options.settle_ms));
  }
  if (options.max_rounds < options.rounds || !(options.min_s >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "run probes: need max_rounds >= rounds and min_s >= 0, got max_rounds ", options.max_rounds,
        ", rounds ", options.rounds, " and min_s ", options.min_s));
  }
  struct Compiled {
    std::unique_ptr<executor::runtime::CoExecutionRuntime> runtime;
    std::vector<std::vector<float>> input;
  };
  std::vector<Compiled> compiled;
  std::vector<ProbeResult> results;
  for (const Probe& probe : probes) {
    if (probe.graph == nullptr) {
      return absl::InvalidArgumentError(absl::StrCat("run probe '", probe.label, "' has no graph"));
    }
    if (probe.schedule.num_devices() != static_cast<int>(devices.size())) {
      return absl::InvalidArgumentError(
          absl::StrCat("run probe '", probe.label, "' is scheduled on ",
                       probe.schedule.num_devices(), " devices, ", devices.size(), " given"));
    }
    absl::StatusOr<executor::runtime::ExecutionPlan> plan =
        executor::runtime::PlanFromSchedule(*probe.graph, probe.schedule);
    absl::StatusOr<std::unique_ptr<executor::runtime::CoExecutionRuntime>> rt =
        plan.ok()
            ? executor::runtime::CoExecutionRuntime::Create(
                  *probe.graph,
                  std::vector<executor::runtime::Device*>(devices.begin(), devices.end()),
                  *std::move(plan), runtime_options)
            : absl::StatusOr<std::unique_ptr<executor::runtime::CoExecutionRuntime>>(plan.status());
    if (!rt.ok()) {
      return absl::Status(rt.status().code(),
                          absl::StrCat("run probe '", probe.label, "': ", rt.status().message()));
    }
    Compiled c{*std::move(rt), {}};
    for (const model::GraphIO& io : probe.graph->inputs) {
      c.input.emplace_back(static_cast<size_t>(probe.graph->tensor(io.tensor).shape.Elements()),
                           0.5f);
    }
    compiled.push_back(std::move(c));
    ProbeResult result;
    result.label = probe.label;
    result.graph = probe.graph;
    result.schedule = probe.schedule;
    std::set<int> used;
    for (const scheduler::ScheduledSubtask& s : probe.schedule.subtasks()) used.insert(s.device);
    result.devices_used = static_cast<int>(used.size());
    results.push_back(std::move(result));
  }
  auto run = [&](size_t i, bool timed) -> absl::Status {
    if (timed && options.settle_ms > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(options.settle_ms));
    }
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<std::vector<float>>> out =
        compiled[i].runtime->Run(compiled[i].input);
    const double wall_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!out.ok()) {
      return absl::Status(out.status().code(), absl::StrCat("run probe '", probes[i].label,
                                                            "': ", out.status().message()));
    }
    if (!timed) return absl::OkStatus();
    const std::vector<executor::runtime::SubtaskTiming>& timings =
        compiled[i].runtime->last_timings();
    results[i].timings.push_back(timings);
    results[i].breakdowns.push_back(
        BreakDownRun(*probes[i].graph, probes[i].schedule, timings, wall_us));
    return absl::OkStatus();
  };
  for (int w = 0; w < options.warmup_runs; ++w) {
    for (size_t i = 0; i < compiled.size(); ++i) {
      if (absl::Status s = run(i, false); !s.ok()) return s;
    }
  }
  const auto timed_start = std::chrono::steady_clock::now();
  auto more_time = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - timed_start).count() <
           options.min_s;
  };
  for (int round = 0; round < options.max_rounds && (round < options.rounds || more_time());
       ++round) {
    for (size_t i = 0; i < compiled.size(); ++i) {
      if (absl::Status s = run(i, true); !s.ok()) return s;
    }
  }
  return results;
}

}  // namespace psched::calibration
