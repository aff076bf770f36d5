// Re-timing a fixed schedule under another problem's latencies: the paper's cross-platform
// experiment (sec. 6, "Cross-Platform Scheduling") plans with one platform's predictions and
// runs the fixed plan on another device. The plan of every op, the device of every subtask
// and each device's order stay as planned; every subtask then starts as early as its device
// and its inputs (full barrier, transfer cost across memory domains) allow, and lasts what
// `problem` predicts. Pure function.
#pragma once

#include "absl/status/statusor.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler {

// InvalidArgument when `schedule` does not fit `problem` (another op or device count, a
// split axis or work size the problem's op does not have); the result passes
// ValidateSchedule(problem, ...). Retiming under the problem a schedule was planned with
// reproduces its makespan when the schedule has no idle gaps a device could close.
absl::StatusOr<Schedule> RetimeSchedule(const Problem& problem, const Schedule& schedule);

}  // namespace psched::scheduler
