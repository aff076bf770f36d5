// Gantt charts of subtask timelines as standalone SVG, like the paper's schedule figures: one
// row per device, one bar per subtask, one colour per operator (the subtasks of a partitioned
// operator share it), a time axis in milliseconds. psched-bench draws one per model x method,
// `pschedctl plan show --svg` one per plan read back from pschedd. Pure functions over plain
// data; thread-safe.
#pragma once

#include <span>
#include <string>

#include "absl/status/status.h"
#include "timeline/subtask_span.h"

namespace psched::timeline {

struct GanttOptions {
  std::string title;    // drawn above the chart; empty: none
  int width_px = 1200;  // total width; the time axis gets what the labels leave
};

// The chart of `spans` on rows named `devices`; spans on a device index out of range are
// left out. A bar's colour and label come from its op_id.
std::string GanttSvg(std::span<const std::string> devices, std::span<const SubtaskSpan> spans,
                     double makespan_us, const GanttOptions& options = {});

// Writes GanttSvg to `path`; an error names the path and the OS reason.
absl::Status WriteGanttSvg(const std::string& path, std::span<const std::string> devices,
                           std::span<const SubtaskSpan> spans, double makespan_us,
                           const GanttOptions& options = {});

}  // namespace psched::timeline
