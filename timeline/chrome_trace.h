// Chrome trace-event JSON of a run (chrome://tracing, ui.perfetto.dev): the one trace writer
// of psched, used by the co-execution runtime (executor/runtime/trace.h) and by
// `pschedctl infer --trace`.
//
// One track (thread) per device; every measured subtask is a complete event ("ph": "X",
// "cat": "measured") named after its op, with args {op, op_id, kind, axis, range, work,
// predicted_start_us, predicted_end_us, device_us} (the fields the span knows). When a plan
// ran, a second track per device ("<device> (predicted)") holds the planned subtasks
// ("cat": "predicted"), so the two timelines can be compared by eye. otherData holds
// measured_makespan_us (the latest measured end), predicted_makespan_us when a plan ran, and
// the caller's own fields. calibration/training/trace_samples.h reads these traces back.
// Pure functions over plain data; thread-safe.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"
#include "timeline/subtask_span.h"

namespace psched::timeline {

struct ChromeTraceInput {
  std::vector<std::string> devices;  // track names, by device index
  std::vector<SubtaskSpan> measured;
  // Set when a plan ran: its subtasks, on the predicted tracks.
  std::optional<std::vector<SubtaskSpan>> predicted;
  double predicted_makespan_us = 0;                      // only read when `predicted` is set
  nlohmann::json other_data = nlohmann::json::object();  // more otherData fields ("graph")
};

// kInvalidArgument naming the span when one is on a device without a name.
absl::StatusOr<nlohmann::json> ChromeTrace(const ChromeTraceInput& input);

// Writes ChromeTrace to `path`: kInvalidArgument as above, kUnavailable naming the path and
// the OS reason when the file cannot be written.
absl::Status WriteChromeTrace(const std::string& path, const ChromeTraceInput& input);

}  // namespace psched::timeline
