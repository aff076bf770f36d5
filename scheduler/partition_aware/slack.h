// Slack of scheduled subtasks (paper sec. 5.3), aggregated per operator.
//
// The scheduled-subtask graph has the subtasks of a schedule as nodes, full-barrier
// dependency edges between the subtasks of dependent ops that both appear in the
// schedule, and device-order edges between consecutive subtasks of one device. A reverse
// pass gives each subtask its latest finish LF (the makespan for sinks, else the least
// latest start of its successors) and slack LF - end; an op's slack is the least slack of
// its subtasks. Transfer costs are not subtracted on dependency edges: they are zero
// inside a memory domain, the case the paper models, and slack only steers sampling.
//
// SlackAnalysis keeps its buffers across calls, so repeated Compute does not allocate
// once warm. Not thread-safe.
#pragma once

#include <vector>

#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler::partition_aware {

class SlackAnalysis {
 public:
  // Analyses every subtask of `schedule` against schedule.makespan_us().
  void Compute(const Problem& problem, const Schedule& schedule);

  // Least slack over the op's subtasks; +infinity when the op has none in the schedule.
  double op_slack(OpId op) const { return op_slack_[static_cast<size_t>(op)]; }
  // Sum of the op's subtask durations; 0 when it has none.
  double op_duration(OpId op) const { return op_duration_[static_cast<size_t>(op)]; }
  // Slack of subtask `index` of the analysed schedule.
  double subtask_slack(int index) const { return subtask_slack_[static_cast<size_t>(index)]; }

 private:
  std::vector<double> op_slack_, op_duration_, op_min_latest_start_;
  std::vector<double> subtask_slack_;
  std::vector<int> order_, next_on_device_;
};

}  // namespace psched::scheduler::partition_aware
