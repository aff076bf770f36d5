#include "scheduler/partition_aware/slack.h"

#include <algorithm>
#include <limits>
#include <numeric>

namespace psched::scheduler::partition_aware {

void SlackAnalysis::Compute(const Problem& problem, const Schedule& schedule) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  const auto subtasks = schedule.subtasks();
  const size_t n = static_cast<size_t>(problem.num_ops());
  op_slack_.assign(n, kInf);
  op_duration_.assign(n, 0.0);
  op_min_latest_start_.assign(n, kInf);
  subtask_slack_.assign(subtasks.size(), 0.0);
  next_on_device_.assign(subtasks.size(), -1);
  for (int d = 0; d < schedule.num_devices(); ++d) {
    const auto order = schedule.device_order(d);
    for (size_t k = 0; k + 1 < order.size(); ++k) {
      next_on_device_[static_cast<size_t>(order[k])] = order[k + 1];
    }
  }
  // Every edge of the subtask graph goes from an earlier-or-equal start to a later one, and
  // ties (zero-length subtasks) go from a lower op id to a higher one, so this order is a
  // reverse topological order.
  order_.resize(subtasks.size());
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(), [&](int a, int b) {
    const ScheduledSubtask& x = subtasks[static_cast<size_t>(a)];
    const ScheduledSubtask& y = subtasks[static_cast<size_t>(b)];
    if (x.start_us != y.start_us) return x.start_us > y.start_us;
    return x.op > y.op;
  });
  std::vector<double>& latest_start = subtask_slack_;  // reused: holds LS until the last step
  const double makespan = schedule.makespan_us();
  for (int idx : order_) {
    const ScheduledSubtask& s = subtasks[static_cast<size_t>(idx)];
    double latest_finish = makespan;
    for (OpId succ : problem.succs(s.op)) {
      latest_finish = std::min(latest_finish, op_min_latest_start_[static_cast<size_t>(succ)]);
    }
    const int next = next_on_device_[static_cast<size_t>(idx)];
    if (next >= 0) latest_finish = std::min(latest_finish, latest_start[static_cast<size_t>(next)]);
    const double duration = s.end_us - s.start_us;
    const double ls = latest_finish - duration;
    const double slack = latest_finish - s.end_us;
    latest_start[static_cast<size_t>(idx)] = ls;
    double& op_ls = op_min_latest_start_[static_cast<size_t>(s.op)];
    op_ls = std::min(op_ls, ls);
    double& op_slack = op_slack_[static_cast<size_t>(s.op)];
    op_slack = std::min(op_slack, slack);
    op_duration_[static_cast<size_t>(s.op)] += duration;
  }
  for (size_t k = 0; k < subtasks.size(); ++k) {
    subtask_slack_[k] = latest_start[k] - subtasks[k].start_us;
  }
}

}  // namespace psched::scheduler::partition_aware
