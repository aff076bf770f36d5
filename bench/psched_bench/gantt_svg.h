// Gantt charts of schedules as standalone SVG, like the paper's schedule figures: one row
// per device, one bar per subtask, one colour per operator (the subtasks of a partitioned
// operator share it), a time axis in milliseconds. Library psched_gantt (psched-bench
// writes one per model x method; pschedctl can link it for `plan show --svg`).
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::bench {

struct GanttOptions {
  std::string title;   // drawn above the chart; empty: none
  int width_px = 1200;  // total width; the time axis gets what the labels leave
};

// The chart of `schedule`; device names and op names come from `problem`.
std::string GanttSvg(const scheduler::Problem& problem, const scheduler::Schedule& schedule,
                     const GanttOptions& options = {});

// Writes GanttSvg to `path`; an error names the path and the OS reason.
absl::Status WriteGanttSvg(const std::string& path, const scheduler::Problem& problem,
                           const scheduler::Schedule& schedule, const GanttOptions& options = {});

}  // namespace psched::bench
