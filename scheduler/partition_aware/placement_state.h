// Device timelines and per-op completion state for methods that decide partition plans
// while they place subtasks (partition-only, PA-HEFT), so they cannot use the
// ListWorkspace of a fixed expanded graph.
//
// Places subtasks one at a time into a Schedule it owns. Not thread-safe.
#pragma once

#include <vector>

#include "scheduler/device_timeline.h"
#include "scheduler/partition_plan.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler::partition_aware {

class PlacementState {
 public:
  explicit PlacementState(const Problem& problem);

  // When the inputs of `op` are available on `device`: the latest end of any subtask of a
  // predecessor plus the transfer cost when it ran in another memory domain.
  double DataReady(OpId op, int device) const;
  const DeviceTimeline& timeline(int device) const { return timelines_[static_cast<size_t>(device)]; }

  // Records `plan` for `op` and places its slot q on devices[q] at starts[q].
  void PlaceOp(OpId op, const PartitionPlan& plan, const std::vector<int>& devices,
               const std::vector<double>& starts);

  Schedule& schedule() { return schedule_; }

 private:
  const Problem& problem_;
  std::vector<DeviceTimeline> timelines_;
  std::vector<double> placed_end_;  // [op * D + device]; -1: nothing there
  Schedule schedule_;
};

}  // namespace psched::scheduler::partition_aware
