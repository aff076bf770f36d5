#include "scheduler/expanded_graph.h"

#include "absl/strings/str_cat.h"

namespace psched::scheduler {
namespace {

const PartitionPlan& NonePlan() {
  static const PartitionPlan kNone = PartitionPlan::None();
  return kNone;
}

}  // namespace

const PartitionPlan& ExpandedGraph::plan(OpId op) const {
  return plans_.empty() ? NonePlan() : plans_[static_cast<size_t>(op)];
}

absl::Status ExpandedGraph::Build(const Problem& problem, std::span<const PartitionPlan> plans,
                                  std::span<const OpId> scope) {
  const int n = problem.num_ops();
  if (!plans.empty() && static_cast<int>(plans.size()) != n) {
    return absl::InvalidArgumentError(
        absl::StrCat("got ", plans.size(), " partition plans for ", n, " ops"));
  }
  plans_ = plans;
  num_devices_ = problem.num_devices();
  tasks_.clear();
  cost_.clear();
  mean_cost_.clear();
  ops_.clear();
  task_begin_.assign(static_cast<size_t>(n), 0);
  task_end_.assign(static_cast<size_t>(n), 0);
  if (scope.empty()) {
    for (OpId op = 0; op < n; ++op) ops_.push_back(op);
  } else {
    for (size_t k = 0; k < scope.size(); ++k) {
      if (scope[k] < 0 || scope[k] >= n || (k > 0 && scope[k] <= scope[k - 1])) {
        return absl::InvalidArgumentError(absl::StrCat("scope entry ", k, " is op ", scope[k],
                                                       ": need distinct ascending ops in [0, ", n,
                                                       ")"));
      }
      ops_.push_back(scope[k]);
    }
  }
  const int limit = std::min(problem.max_splits(), num_devices_);
  for (OpId op : ops_) {
    const PartitionPlan& p = plan(op);
    const int64_t total = problem.WorkSize(op, p.axis);
    if (total <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", op, " (", problem.op_name(op), ") cannot be split along '",
                       std::string(model::SplitAxisName(p.axis)), "'"));
    }
    if (p.work.empty() || static_cast<int>(p.work.size()) > problem.max_splits()) {
      return absl::InvalidArgumentError(absl::StrCat("op ", op, " (", problem.op_name(op),
                                                     "): plan has ", p.work.size(),
                                                     " slots; need 1..", problem.max_splits()));
    }
    int64_t sum = 0;
    int active = 0;
    for (size_t q = 0; q < p.work.size(); ++q) {
      if (p.work[q] < 0) {
        return absl::InvalidArgumentError(absl::StrCat("op ", op, " (", problem.op_name(op),
                                                       "): plan slot ", q, " has negative work ",
                                                       p.work[q]));
      }
      sum += p.work[q];
      active += p.work[q] > 0 ? 1 : 0;
    }
    if (sum != total) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", op, " (", problem.op_name(op), "): plan work sums to ", sum,
                       ", U along '", std::string(model::SplitAxisName(p.axis)), "' is ", total));
    }
    if (active > limit) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", op, " (", problem.op_name(op), "): plan has ", active,
                       " active subtasks; at most ", limit, " fit on distinct devices"));
    }
    task_begin_[static_cast<size_t>(op)] = static_cast<int>(tasks_.size());
    int64_t begin = 0;
    for (size_t q = 0; q < p.work.size(); ++q) {
      const int64_t w = p.work[q];
      if (w == 0) continue;
      tasks_.push_back(Task{op, static_cast<int>(q), p.axis, begin, begin + w});
      double cost_sum = 0;
      for (int d = 0; d < num_devices_; ++d) {
        const double c = problem.LatencyUs(op, p.axis, w, d);
        cost_.push_back(c);
        cost_sum += c;
      }
      mean_cost_.push_back(cost_sum / num_devices_);
      begin += w;
    }
    task_end_[static_cast<size_t>(op)] = static_cast<int>(tasks_.size());
  }
  return absl::OkStatus();
}

}  // namespace psched::scheduler
