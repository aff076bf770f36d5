// Gantt charts of schedules as standalone SVG, like the paper's schedule figures: one row
// per device, one bar per subtask, one colour per operator (the subtasks of a partitioned
// operator share it), a time axis in milliseconds. Library psched_gantt (psched-bench
// writes one per model x method; pschedctl can link it for `plan show --svg`).
// The plain-rows overload draws a schedule known only by names and times (a plan read back
// from pschedd). Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "model/split.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::bench {

struct GanttOptions {
  std::string title;   // drawn above the chart; empty: none
  int width_px = 1200;  // total width; the time axis gets what the labels leave
};

// One bar: a subtask of op `op_id` on device index `device`.
struct GanttBar {
  std::string op;
  int op_id = 0;
  int device = 0;
  model::SplitAxis axis = model::SplitAxis::kNone;
  int64_t begin = 0;  // [begin, end) of the op's work along axis
  int64_t end = 1;
  double start_us = 0;
  double end_us = 0;
};

// The chart of `bars` on rows named `devices`; bars on a device index out of range are
// left out.
std::string GanttSvg(std::span<const std::string> devices, std::span<const GanttBar> bars,
                     double makespan_us, const GanttOptions& options = {});

// The chart of `schedule`; device names and op names come from `problem`.
std::string GanttSvg(const scheduler::Problem& problem, const scheduler::Schedule& schedule,
                     const GanttOptions& options = {});

// Writes GanttSvg to `path`; an error names the path and the OS reason.
absl::Status WriteGanttSvg(const std::string& path, const scheduler::Problem& problem,
                           const scheduler::Schedule& schedule, const GanttOptions& options = {});

}  // namespace psched::bench
