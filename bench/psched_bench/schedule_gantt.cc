#include "bench/psched_bench/schedule_gantt.h"

#include <vector>

#include "timeline/subtask_span.h"

namespace psched::bench {
namespace {

std::vector<std::string> DeviceNames(const scheduler::Problem& problem) {
  std::vector<std::string> names;
  for (const platform::DeviceSpec& d : problem.platform().devices) names.push_back(d.name);
  return names;
}

std::vector<timeline::SubtaskSpan> Spans(const scheduler::Problem& problem,
                                         const scheduler::Schedule& schedule) {
  std::vector<timeline::SubtaskSpan> spans;
  for (const scheduler::ScheduledSubtask& s : schedule.subtasks()) {
    spans.push_back({.op = problem.op_name(s.op),
                     .op_id = s.op,
                     .device = s.device,
                     .axis = s.axis,
                     .begin = s.begin,
                     .end = s.end,
                     .start_us = s.start_us,
                     .end_us = s.end_us});
  }
  return spans;
}

}  // namespace

std::string ScheduleGanttSvg(const scheduler::Problem& problem, const scheduler::Schedule& schedule,
                             const timeline::GanttOptions& options) {
  return timeline::GanttSvg(DeviceNames(problem), Spans(problem, schedule), schedule.makespan_us(),
                            options);
}

absl::Status WriteScheduleGanttSvg(const std::string& path, const scheduler::Problem& problem,
                                   const scheduler::Schedule& schedule,
                                   const timeline::GanttOptions& options) {
  return timeline::WriteGanttSvg(path, DeviceNames(problem), Spans(problem, schedule),
                                 schedule.makespan_us(), options);
}

}  // namespace psched::bench
