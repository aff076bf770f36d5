// Re-timing a fixed schedule under another problem's latencies: the paper's cross-platform
// experiment (sec. 6, "Cross-Platform Scheduling") plans with one platform's predictions and
// runs the fixed plan on another device. The plan of every op, the device of every subtask
// and each device's order stay as planned; every subtask then starts as early as its device
// and its inputs (full barrier, transfer cost across memory domains) allow, and lasts what
// `problem` predicts. Pure function.
#pragma once

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler {

// InvalidArgument when `schedule` does not fit `problem` (another op or device count, a
// split axis or work size the problem's op does not have); the result passes
// ValidateSchedule(problem, ...). Retiming under the problem a schedule was planned with
// reproduces its makespan when the schedule has no idle gaps a device could close.
absl::StatusOr<Schedule> RetimeSchedule(const Problem& problem, const Schedule& schedule);

// A plan's run as predicted: `schedule` retimed under `problem` (which it must fit, as above)
// with each input from another device charged by how long its subtask's device had been idle
// when it came (Problem::HandOffUs: a waiter still spinning resumes at once, a parked one must
// be woken) instead of the planners' constant sync cost; an input that came while the device
// was still busy costs nothing beyond a transfer. In a plan on two devices or more, each subtask
// but a device's first starts no sooner than Problem::SubtaskGapUs after the device's previous
// one ends (the runtime taking its
// next step, a GPU queue's dispatch, and its kernels waiting for an input from another device or
// signalling one). When the schedule uses two devices or more,
// each subtask lasts its prediction times 1 + (Problem::CoRunFactor - 1) x the share of it
// during which another device runs (co_run_overlap.h; iterated until the run settles), so the
// result passes ValidateSchedule only where those factors are 1. An op split along input
// channels ends Problem::CombineUs after its slices, on its last slice's device: the partial
// sums added into the output there, as the runtime does (nor does it then pass
// ValidateSchedule). Its makespan plus the model's
// RunOverheadUs is the plan's predicted latency. Equals RetimeSchedule where HandOffUs is
// SyncUs, CoRunFactor 1, SubtaskGapUs 0, no op is split along input channels and no input
// arrives within the sync cost before its device is free.
absl::StatusOr<Schedule> RetimeByWaits(const Problem& problem, const Schedule& schedule);

// Whether a device's queue runs a sync kernel between two of its subtasks: the later one, of an
// op with predecessor ops `preds`, waits for an input another device produced, or the earlier
// one, of an op with successor ops `previous_succs`, signals another device. `devices_of[op]`:
// the devices the op's subtasks run on (bit d for device d). RetimeByWaits charges the two kinds
// of gap (Problem::SubtaskGapUs) by it, and the run calibration measures them by it.
bool SyncKernelBetween(std::span<const OpId> preds, std::span<const OpId> previous_succs,
                       std::span<const uint64_t> devices_of, int device);

}  // namespace psched::scheduler
