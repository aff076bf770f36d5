// The iterative search's fast inner SCHEDULE routine for `heft`: HEFT on one stage with
// earlier stages fixed, doing per evaluation only work proportional to the stage.
//
// It makes exactly the decisions of scheduler::HeftScheduler run through
// ListScheduler::ScheduleInto with a ScheduleScope (same upward ranks over the stage's
// subtasks, same order and tie-breaks, same insertion policy, same data-ready times), so
// the search may use either interchangeably; stage_heft_test checks they agree. What it
// saves is the per-call cost that grows with the whole model (resetting per-op tables, a
// full Schedule and every plan): Prepare does that once per stage, Run only touches the
// stage. Prefix reuse: a Run whose plans differ from those of the reference Run (see
// MarkReference) in one op keeps the reference placements of the longest common prefix of
// the two HEFT orders that excludes that op's subtasks - placements depend only on earlier
// placements, so they are unchanged - rebuilds the device timelines for them and places
// the rest afresh.
//
// Not thread-safe; buffers are reused, so Run does not allocate once warm.
#pragma once

#include <span>
#include <vector>

#include "scheduler/device_timeline.h"
#include "scheduler/partition_plan.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler::partition_aware {

class StageHeft {
 public:
  // Sets up the stage `ops` (ascending; every predecessor of an op is in `ops` or has its
  // subtasks in `fixed`). `fixed` holds the subtasks of earlier stages.
  void Prepare(const Problem& problem, std::span<const OpId> ops, const Schedule& fixed);

  // Schedules the stage under `plans` (one per op of the problem) and returns the latest
  // end of a stage subtask. `changed` names the only op whose plan may differ from the
  // reference Run's (enables prefix reuse); -1: anything may differ.
  // REQUIRES: Prepare; the stage ops' plans are valid (axis allowed, work sums to U, at
  // most |D| active slots).
  double Run(std::span<const PartitionPlan> plans, OpId changed = -1);

  // Makes the last Run the reference for prefix reuse (after the search accepts a plan).
  void MarkReference();

  // Appends the subtasks of the last Run to `out`.
  void Emit(Schedule& out) const;

  // Subtask placements reused from the reference over all Runs (a measure of the saving).
  int64_t reused_placements() const { return reused_; }

 private:
  struct Task {
    int local = 0;  // index into ops_
    int slot = 0;
    model::SplitAxis axis = model::SplitAxis::kNone;
    int64_t begin = 0;
    int64_t end = 0;
  };
  size_t At(int local, int device) const {
    return static_cast<size_t>(local) * static_cast<size_t>(devices_) + static_cast<size_t>(device);
  }
  void Expand(std::span<const PartitionPlan> plans);
  void Rank();
  // Places order_[from..] after restoring the timelines to the state after order_[0, from).
  void PlaceFrom(size_t from);

  const Problem* problem_ = nullptr;
  int devices_ = 0;
  std::vector<OpId> ops_;
  std::vector<int> local_;  // [op] -> index into ops_, -1 outside the stage
  std::vector<double> external_ready_;  // [local * D + d]: inputs from earlier stages
  std::vector<int> pred_begin_, pred_local_, succ_begin_, succ_local_;
  std::vector<double> pred_transfer_, succ_mean_transfer_;
  std::vector<std::vector<std::pair<double, double>>> base_busy_;  // [device]: fixed intervals
  std::vector<DeviceTimeline> timelines_;

  std::vector<Task> tasks_;
  std::vector<int> task_begin_;  // [local], tasks of local op are [task_begin_[l], task_begin_[l + 1])
  std::vector<double> cost_, mean_cost_, rank_, op_rank_;
  std::vector<int> order_;
  std::vector<int> task_device_;
  std::vector<double> task_start_;
  std::vector<double> placed_end_;  // [local * D + d]; -1: no subtask there
  double makespan_ = 0;

  // The reference Run, by HEFT order position: which subtask and where it went.
  struct Placed {
    int local = 0;
    int slot = 0;
    int device = 0;
    double start = 0;
  };
  std::vector<Placed> reference_;
  bool have_reference_ = false;
  int64_t reused_ = 0;
};

}  // namespace psched::scheduler::partition_aware
