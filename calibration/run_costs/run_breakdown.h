// Where a co-execution run's time went, against its plan's prediction.
//
// A run's wall time differs from the schedule's makespan for three reasons, and this splits
// them apart from the runtime's per-subtask timestamps:
//   - kernels: each subtask ran longer or shorter than predicted. `replay_us` is the span the
//     plan would have had with the measured subtask durations and no cost between them
//     (ReplayUs: each device's subtasks in their run order, each starting when its device is
//     free and every subtask of its predecessor ops has ended - the runtime's rules);
//   - between subtasks: a subtask started later than its device and inputs allowed - waking a
//     device parked on another device's work, combining cin partial sums. `span_us` - `replay_us`,
//     attributed per subtask to `cross_delays` (its last input came from another device) or
//     `local_delay_us` (it did not);
//   - the run's fixed costs outside every subtask: `first_start_us` (posting the devices' jobs)
//     and `wall_us` - `trace_end_us` (input and output copies, zeroing cin outputs, waking the
//     caller).
// Plain functions over plain data; thread-safe.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include "executor/runtime/coexecution_runtime.h"
#include "model/graph.h"
#include "scheduler/schedule.h"

namespace psched::calibration {

// A subtask whose binding input came from another device: how long after both that input and
// its own device were ready it started, and how long its device had sat idle before the input
// came (a waiter spins for a while, then parks and must be woken).
struct CrossDelay {
  double delay_us = 0;
  double idle_us = 0;
  int from_device = 0;
  int to_device = 0;
};

struct RunBreakdown {
  double predicted_us = 0;    // the schedule's makespan
  double replay_us = 0;       // measured durations, no cost between subtasks, from 0
  double trace_end_us = 0;    // last subtask end, from the start of Run
  double first_start_us = 0;  // first subtask start, from the start of Run
  double wall_us = 0;         // Run as the caller timed it
  // trace_end_us - first_start_us: what the devices took once started.
  double span_us() const { return trace_end_us - first_start_us; }
  // Each subtask whose binding input came from another device, in start order.
  std::vector<CrossDelay> cross_delays;
  double local_delay_us = 0;  // summed over the other subtasks
  // Per device: the local delays of its subtasks after its first (the gap between two subtasks
  // of one device: the runtime taking the next step, a GPU queue's dispatch), summed, and how
  // many subtasks that is; [1] those with a sync kernel before them in a GPU queue - an input
  // from another device to wait for (even when it is there), or the device's previous subtask
  // signalling another device -, [0] the others.
  std::vector<std::array<double, 2>> gap_us;
  std::vector<std::array<double, 2>> gaps;
  // Per device: summed measured and predicted subtask durations, and the predicted durations
  // each weighted by the share of the subtask, as it ran, during which another device ran too
  // (scheduler/co_run_overlap.h: what the co-run factor applies to).
  std::vector<double> measured_kernel_us, predicted_kernel_us, predicted_overlapped_us;
  // Summed over whole-op subtasks and over slices of split ops (all devices).
  double measured_whole_us = 0, predicted_whole_us = 0;
  double measured_slice_us = 0, predicted_slice_us = 0;
  // Summed by where a subtask's inputs were produced (by the plan, weighted by the work each
  // device did of the producing ops): all on its own device, partly, all on others.
  std::array<double, 3> measured_by_locality{}, predicted_by_locality{};
};

// Microseconds between a subtask's end on device `from` and a dependent subtask's start on
// device `to` != `from`, when that end came `idle_us` after device `to` was free (<= 0: while it
// was still busy).
using SyncCost = std::function<double(int from, int to, double idle_us)>;

// The span of `timings` replayed with their measured durations, each device's subtasks in their
// measured start order, each starting when its device is free (plus, after the device's first
// subtask, `gap_us[device][1]` for one with an input from another device or after a subtask
// feeding another device, [0] for the others;
// empty: none) and every subtask of its predecessor ops has ended plus `sync` when that subtask
// ran on another device. From 0.
double ReplayUs(const model::Graph& graph,
                std::span<const executor::runtime::SubtaskTiming> timings, const SyncCost& sync,
                std::span<const std::array<double, 2>> gap_us = {});

// The schedule's predicted duration of each of `timings`, in their order (a subtask is known
// by its device, op and slice start); nullopt for a subtask the schedule does not have.
std::vector<std::optional<double>> PredictedDurationsUs(
    const scheduler::Schedule& schedule, std::span<const executor::runtime::SubtaskTiming> timings);

// Per subtask of `timings`, in their order: the share of it, as it ran, during which another
// device ran a subtask (scheduler::OverlapFractions over the measured intervals).
std::vector<double> MeasuredOverlapFractions(
    std::span<const executor::runtime::SubtaskTiming> timings);

// REQUIRES: `timings` are one Run of a runtime executing `schedule` of `graph`.
RunBreakdown BreakDownRun(const model::Graph& graph, const scheduler::Schedule& schedule,
                          std::span<const executor::runtime::SubtaskTiming> timings,
                          double wall_us);

// Field by field median over runs of one plan; cross_delays pools every run's.
RunBreakdown MedianBreakdown(std::span<const RunBreakdown> runs);

}  // namespace psched::calibration
