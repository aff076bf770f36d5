#include "scheduler/partition_aware/partition_only.h"

#include <algorithm>

#include "scheduler/partition_aware/candidate_plans.h"
#include "scheduler/partition_aware/placement_state.h"

namespace psched::scheduler::partition_aware {

absl::StatusOr<Schedule> PartitionOnlyScheduler::Plan(const Problem& problem,
                                                      const SchedulerOptions& options) const {
  PlacementState state(problem);
  std::vector<double> starts;
  for (OpId op = 0; op < problem.num_ops(); ++op) {
    const PlacedPlan placed = MinLocalLatencyPlan(problem, op);
    starts.clear();
    for (int d : placed.devices) {
      starts.push_back(std::max(state.DataReady(op, d), state.timeline(d).AvailableAt()));
    }
    state.PlaceOp(op, placed.plan, placed.devices, starts);
  }
  return std::move(state.schedule());
}

}  // namespace psched::scheduler::partition_aware
