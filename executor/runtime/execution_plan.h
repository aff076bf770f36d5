// ExecutionPlan: which device runs which slice of which op, and in what order.
//
// Per device an ordered list of steps; a step is one subtask: the slice of op `op`'s work it
// computes (executor/common/work_slice.h). The steps of one op use one axis and partition
// [0, WorkSize) exactly (kNone: a single step [0, 1)). Every subtask of an op starts after
// all subtasks of its predecessor ops have finished (the paper's full-barrier
// dependencies), so a device's order must never wait on work queued behind it anywhere;
// ValidateExecutionPlan checks all of this. Plain data.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "executor/common/work_slice.h"
#include "model/graph.h"
#include "model/split.h"

namespace psched::executor::runtime {

struct PlanStep {
  model::OpId op = model::kInvalidId;
  WorkSlice slice = WorkSlice::Whole();
  // When the schedule the plan came from predicted the step to start and end, from the start
  // of the run (negative: no prediction). The runtime uses them to wake a device thread shortly
  // before a long-awaited input is due (RuntimeOptions::predictive_wake).
  double predicted_start_us = -1;
  double predicted_end_us = -1;
};

struct ExecutionPlan {
  std::vector<std::vector<PlanStep>> device_steps;  // [device] -> steps in run order
};

// A plan running every op whole on device 0, in op order.
ExecutionPlan SingleDevicePlan(const model::Graph& graph, int num_devices = 1);

// OK when `plan` covers every op of `graph` exactly once (as above), names only devices
// [0, num_devices) and runs to completion: simulating the queues never leaves every device
// waiting. Errors name the op, step or device at fault.
absl::Status ValidateExecutionPlan(const model::Graph& graph, const ExecutionPlan& plan,
                                   int num_devices);

}  // namespace psched::executor::runtime
