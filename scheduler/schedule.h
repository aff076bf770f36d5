// A schedule: the partition plan of every op and, for every active subtask, its device and
// its start and end times (paper sec. 4.1).
//
// Schedule is a value type built by schedulers through Reset/SetPlan/Add and read by
// everyone else. It keeps per-device order (subtask indices sorted by start time) and the
// makespan up to date, but checks nothing on Add: every scheduler's output is meant to go
// through ValidateSchedule, which rejects any violation of the formulation with a precise
// message. Reset keeps capacity, so a scheduler can reuse one Schedule without allocating.
// Not thread-safe for concurrent mutation.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "model/split.h"
#include "scheduler/partition_plan.h"
#include "scheduler/problem.h"

namespace psched::scheduler {

struct ScheduledSubtask {
  OpId op = 0;
  int slot = 0;  // index into the op's plan.work
  int device = 0;
  model::SplitAxis axis = model::SplitAxis::kNone;
  int64_t begin = 0;  // [begin, end) of the op's work along axis
  int64_t end = 1;
  double start_us = 0;
  double end_us = 0;
};

class Schedule {
 public:
  Schedule() = default;
  Schedule(int num_ops, int num_devices) { Reset(num_ops, num_devices); }

  // Empties the schedule for `num_ops` ops (all plans None) on `num_devices` devices.
  void Reset(int num_ops, int num_devices);
  void SetPlan(OpId op, const PartitionPlan& plan) { plans_[static_cast<size_t>(op)] = plan; }
  // Appends a subtask; keeps device order sorted by start time and the makespan current.
  void Add(const ScheduledSubtask& subtask);

  std::span<const ScheduledSubtask> subtasks() const { return subtasks_; }
  std::span<const PartitionPlan> plans() const { return plans_; }
  const PartitionPlan& plan(OpId op) const { return plans_[static_cast<size_t>(op)]; }
  // Indices into subtasks() of the subtasks on `device`, in start-time order.
  std::span<const int> device_order(int device) const {
    return device_order_[static_cast<size_t>(device)];
  }
  int num_ops() const { return static_cast<int>(plans_.size()); }
  int num_devices() const { return static_cast<int>(device_order_.size()); }
  double makespan_us() const { return makespan_us_; }
  // Latest end time over the subtasks of `op`: C_i. 0 when it has none.
  double CompletionUs(OpId op) const;

 private:
  std::vector<ScheduledSubtask> subtasks_;
  std::vector<PartitionPlan> plans_;
  std::vector<std::vector<int>> device_order_;
  double makespan_us_ = 0;
};

// Checks `schedule` against the formulation: one plan per op whose axis is allowed and
// whose work sums to U with at most max_splits active slots; exactly one subtask per active
// slot with [begin, end) tiling [0, U) in slot order; known devices; durations equal to the
// predicted latency; no two subtasks of one op on one device; no overlap on a device;
// full-barrier dependencies plus transfer cost across memory domains; makespan equal to
// the latest end. The first violation found is returned as InvalidArgument.
absl::Status ValidateSchedule(const Problem& problem, const Schedule& schedule);

}  // namespace psched::scheduler
