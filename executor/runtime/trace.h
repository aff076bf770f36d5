// Tracing a co-execution run: the measured per-subtask times of the runtime's last Run as
// Chrome trace JSON (timeline/chrome_trace.h), with the scheduler's predicted times alongside
// when a schedule is given, and measured vs predicted makespan.
//
// Every span carries the graph's op name, op id, kind and work size, so
// calibration/training/trace_samples.h can turn the trace back into calibration samples;
// otherData.graph names the graph. Plain functions over plain data; thread-safe.
#pragma once

#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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
// kInvalidArgument when a subtask ran on a device without a name.
absl::StatusOr<nlohmann::json> ChromeTrace(const model::Graph& graph,
                                           std::span<const std::string> device_names,
                                           std::span<const SubtaskTiming> timings,
                                           const scheduler::Schedule* schedule = nullptr);

// The last Run of `runtime` as Chrome trace JSON written to `path`. kInvalidArgument when the
// runtime has more devices than names; kUnavailable when the file cannot be written.
absl::Status WriteChromeTrace(const std::string& path, const model::Graph& graph,
                              const CoExecutionRuntime& runtime,
                              std::span<const std::string> device_names,
                              const scheduler::Schedule* schedule = nullptr);

}  // namespace psched::executor::runtime
