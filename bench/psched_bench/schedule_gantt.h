// A schedule as a Gantt chart (timeline/gantt_svg.h): one row per device of the problem's
// platform, one bar per scheduled subtask named after the problem's op. psched-bench writes
// one per model x method (--gantt). Pure functions; thread-safe.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"
#include "timeline/gantt_svg.h"

namespace psched::bench {

std::string ScheduleGanttSvg(const scheduler::Problem& problem, const scheduler::Schedule& schedule,
                             const timeline::GanttOptions& options = {});

// Writes ScheduleGanttSvg to `path`; an error names the path and the OS reason.
absl::Status WriteScheduleGanttSvg(const std::string& path, const scheduler::Problem& problem,
                                   const scheduler::Schedule& schedule,
                                   const timeline::GanttOptions& options = {});

}  // namespace psched::bench
