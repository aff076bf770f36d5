// Tracing a co-execution run: measured per-subtask times as Chrome trace JSON (chrome://tracing,
// ui.perfetto.dev), with the scheduler's predicted times alongside, and measured vs predicted
// makespan.
//
// One track (thread) per device; every subtask is a complete event ("ph": "X") named after its
// op, with args {op, kind, axis, range, predicted_start_us, predicted_end_us, device_us}. When
// a schedule is given, a second track per device ("<device> (predicted)") shows the predicted
// subtasks, so the two timelines can be compared by eye. Plain functions over plain data;
// thread-safe.
#pragma once

#include <optional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "executor/runtime/coexecution_runtime.h"
#include "model/graph.h"
#include "nlohmann/json.hpp"
#include "scheduler/schedule.h"

namespace psched::executor::runtime {

struct MakespanComparison {
  double measured_us = 0;   // latest measured subtask end (from the start of Run)
  double predicted_us = 0;  // the schedule's makespan; 0 without a schedule
  // measured / predicted; 0 without a schedule.
  double ratio() const { return predicted_us > 0 ? measured_us / predicted_us : 0; }
};

MakespanComparison CompareMakespan(std::span<const SubtaskTiming> timings,
                                   const scheduler::Schedule* schedule = nullptr);

// `device_names[d]` names device d of the timings (and of the schedule, when given).
nlohmann::json ChromeTrace(const model::Graph& graph, std::span<const std::string> device_names,
                           std::span<const SubtaskTiming> timings,
                           const scheduler::Schedule* schedule = nullptr);

// One call for `pschedctl infer --trace FILE`: the last Run of `runtime` as Chrome trace JSON
// written to `path`. kInvalidArgument when the runtime has more devices than names;
// kUnavailable when the file cannot be written.
absl::Status WriteChromeTrace(const std::string& path, const model::Graph& graph,
                              const CoExecutionRuntime& runtime,
                              std::span<const std::string> device_names,
                              const scheduler::Schedule* schedule = nullptr);

}  // namespace psched::executor::runtime
