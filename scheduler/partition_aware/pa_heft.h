// `pa-heft`: partition-aware HEFT (paper sec. 4.5).
//
// Priority: the PA upward rank, rank(i) = w(i) + max over successors (mean transfer +
// rank(j)), where w(i) is the min-local-latency OSPD cost of a partitionable op and, as in
// HEFT, the mean latency over devices of any other op. Ops are taken in decreasing rank
// among those whose predecessors are placed (ties: lowest op id).
//
// Placement: for the taken op, the unpartitioned op on every device (insertion-based
// earliest start, as HEFT) and, per split axis, the division of U over all devices (slot d
// on device d, so subtasks land on distinct devices) that minimises the latest finish
// max_d (offset_d + tau_d(u_d)), found by MinMaxDivision. Each device's offset is either
// max(data ready, end of its last subtask) or the data-ready time alone (an idle gap may
// fit); both divisions are then re-timed with insertion and the candidate with the
// earliest finish over all is kept (ties: the unpartitioned op, then axis order).
// Immutable; thread-safe.
#pragma once

#include <string>

#include "scheduler/scheduler.h"

namespace psched::scheduler::partition_aware {

class PaHeftScheduler final : public Scheduler {
 public:
  std::string name() const override { return "pa-heft"; }
  absl::StatusOr<Schedule> Plan(const Problem& problem, const SchedulerOptions& options) const override;
};

}  // namespace psched::scheduler::partition_aware
