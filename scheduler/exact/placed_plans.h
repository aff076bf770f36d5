// Every plan of an op in a StageInstance's space, with a device for each of its subtasks:
// the explicit enumeration the MIP formulation and the brute force work from (the branch
// and bound never enumerates plans).
//
// A PlacedPlan gives the work of the op's subtask on every device (0: none there). Grid
// axes yield every division into 2..K parts on distinct devices (each part holding the
// last unit in turn when the grid clips it); fixed plans every injective map of their
// slots to devices. Plans with equal work vectors on one axis are listed once. Pure
// functions.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/exact/stage_instance.h"
#include "scheduler/exact/stage_solution.h"

namespace psched::scheduler::exact {

struct PlacedPlan {
  int axis = 0;               // index into the op's space
  std::vector<int64_t> work;  // per device; 0: no subtask there
  std::vector<bool> last;     // per device: the grid part holding the last unit
  std::vector<int> slot;      // per device: the fixed plan's slot there (-1: none or grid)
};

// The placed plans of op `local`; ResourceExhausted when there are more than `limit`.
absl::StatusOr<std::vector<PlacedPlan>> EnumeratePlacedPlans(const StageInstance& instance,
                                                             int local, int64_t limit);

// Times given plans and per-device orders at earliest starts: each subtask after the
// previous one on its device and its op's inputs, fitting between earlier stages' busy
// intervals. Reuses its buffers across calls; not thread-safe.
class OrderTimer {
 public:
  explicit OrderTimer(const StageInstance& instance) : instance_(instance) {}
  // `orders[d]`: the ops (local) with a subtask on device d, in order. Returns the stage
  // makespan, or +infinity when the orders contradict the dependencies; starts() then
  // holds [local][device] starts.
  double Time(const std::vector<const PlacedPlan*>& plans, const std::vector<std::vector<int>>& orders);
  const std::vector<std::vector<double>>& starts() const { return starts_; }

 private:
  const StageInstance& instance_;
  std::vector<std::vector<double>> starts_;
  std::vector<double> end_;        // [local * D + d]
  std::vector<int> remaining_;     // subtasks of each op not yet timed
  std::vector<size_t> position_;   // per device
};

// A stage schedule from per-op placed plans and per-subtask starts (starts[local][device],
// read where the plan has work): subtask slots and ranges in the plan's slot order.
StageSolution SolutionFromPlacedPlans(const StageInstance& instance,
                                      const std::vector<const PlacedPlan*>& plans,
                                      const std::vector<std::vector<double>>& starts);

}  // namespace psched::scheduler::exact
