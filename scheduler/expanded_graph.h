// The subtask DAG of a problem under fixed partition plans (paper sec. 4.4, appendix A).
//
// One task per active subtask of every op in scope, grouped by op in op order, each with a
// predicted latency per device. Dependencies stay at op level: full barrier, so every task
// of op j depends on every task of each predecessor of j, and one op-level edge stands for
// the K x K subtask edges (read them through Problem::preds). Tasks of one op ("siblings")
// must run on distinct devices. Build reuses capacity, so a long-lived ExpandedGraph
// re-expands without allocating. Not thread-safe for concurrent Build.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "scheduler/partition_plan.h"
#include "scheduler/problem.h"

namespace psched::scheduler {

class ExpandedGraph {
 public:
  struct Task {
    OpId op = 0;
    int slot = 0;
    model::SplitAxis axis = model::SplitAxis::kNone;
    int64_t begin = 0;
    int64_t end = 1;
  };

  // Expands the ops in `scope` (ascending op ids; empty: every op) under `plans` (one per
  // op of the problem; empty: every op unpartitioned). Rejects a plan whose axis the op
  // cannot be split along, whose work does not sum to U, or with more active slots than
  // max_splits. Keeps a view of `plans`: plan() is valid while they live.
  absl::Status Build(const Problem& problem, std::span<const PartitionPlan> plans,
                     std::span<const OpId> scope = {});

  int num_tasks() const { return static_cast<int>(tasks_.size()); }
  int num_devices() const { return num_devices_; }
  const Task& task(int t) const { return tasks_[static_cast<size_t>(t)]; }
  double cost(int t, int device) const {
    return cost_[static_cast<size_t>(t) * static_cast<size_t>(num_devices_) +
                 static_cast<size_t>(device)];
  }
  double mean_cost(int t) const { return mean_cost_[static_cast<size_t>(t)]; }
  // The ops in scope, ascending (topological).
  std::span<const OpId> ops() const { return ops_; }
  bool InScope(OpId op) const { return TaskBegin(op) < TaskEnd(op); }
  // Tasks of `op` are [TaskBegin(op), TaskEnd(op)); empty when `op` is out of scope.
  int TaskBegin(OpId op) const { return task_begin_[static_cast<size_t>(op)]; }
  int TaskEnd(OpId op) const { return task_end_[static_cast<size_t>(op)]; }
  const PartitionPlan& plan(OpId op) const;

 private:
  int num_devices_ = 0;
  std::vector<Task> tasks_;
  std::vector<double> cost_;  // [task * D + device]
  std::vector<double> mean_cost_;
  std::vector<OpId> ops_;
  std::vector<int> task_begin_, task_end_;  // [op]
  std::span<const PartitionPlan> plans_;
};

}  // namespace psched::scheduler
