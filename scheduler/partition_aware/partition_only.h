// `partition-only` (paper sec. 4.3): every op takes its min-local-latency plan under the
// one-subtask-per-device mapping (slot d on device d; an unpartitioned op on its fastest
// device) and the ops are issued in the graph's topological order, with no graph-level
// placement or reordering. Each device runs its subtasks in that order (the per-device
// queues of the paper's runtime, appendix A): a subtask starts when its inputs are ready
// and its device has finished the previous subtask in the order, so independent ops on
// different devices may overlap. Immutable; thread-safe.
#pragma once

#include <string>

#include "scheduler/scheduler.h"

namespace psched::scheduler::partition_aware {

class PartitionOnlyScheduler final : public Scheduler {
 public:
  std::string name() const override { return "partition-only"; }
  absl::StatusOr<Schedule> Plan(const Problem& problem, const SchedulerOptions& options) const override;
};

}  // namespace psched::scheduler::partition_aware
