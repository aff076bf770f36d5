// Fits the run costs of the host model (calibration/run_costs/run_costs.h) to probe runs
// (run_probes.h) of plans made with it.
//
// Both are fitted to the probes' relative errors, so every plan counts alike however long it
// runs (the target is each plan's measured / predicted):
// - Partial sums, per device, first: the last slice of a cin-split op to end adds the others'
//   partial sums into the output (CoExecutionRuntime::CompletesOp). What it took beyond its
//   prediction times the ratio of measured to predicted time of the op's other slices in the
//   same run (beside it on the same inputs, so the co-run slowdown is not counted), per element
//   added (output elements x other slices), median over every such
//   combine of the multi-device probes: ~2 ns here, where the model's element-wise add of the
//   output predicted a tenth of it (the partial sum comes from the other core's cache). The
//   factors below are fitted to the subtasks' predictions with these combines added, so they do
//   not hold them too.
// - In-run factor and cold start of a device: over the probes that ran subtasks on it, the
//   median run's summed measured subtask time on the device is fitted as factor x the same
//   subtasks' predicted time + cold start, in least squares of the log ratios. The cold start
//   is what a run after an idle pause pays once on the device (its first kernels find colder
//   caches; squeezenet's first five ops on a core took 437 us more than predicted after 20 ms
//   idle): one factor alone left short plans 1.1-1.24x their prediction and long ones about
//   1.0. It needs three probes or more whose lengths differ twofold; else it is 0 and the
//   factor the geometric mean of the ratios. When the device ran plans both alone and beside
//   other devices, the factor is then refitted to the plans alone (geometric mean after the
//   cold start) and the co-run factor is what the others took beyond it over the share of
//   their subtasks that overlapped another device's (least squares over those plans of
//   x = 1 + (factor - 1) x share, x each plan's ratio to the factor alone;
//   RunBreakdown::predicted_overlapped_us): two cores running at once share the last-level
//   cache and memory bandwidth, but only while both run, so one factor over whole plans
//   overcharged plans whose devices take turns and undercharged those that split every op.
// - Hand-offs by wait, per ordered pair of `sync_devices`: the median delay of the probes'
//   waits (RunBreakdown::cross_delays, every timed run) that came within the runtime's spin
//   (CoExecutionRuntime::kSpinNs) and of the later ones, after which a host waiter has parked
//   (here 0.2 us against 50 us between the cores; the GPU's wait kernels never park, 3 us).
//   With the co-run factors over each subtask's overlapped share they predict a fixed plan's
//   run (scheduler::RetimeByWaits).
// - Sync cost, the planners' constant: one value for every ordered pair of `sync_devices`
//   (hand-offs cost alike in either direction here; devices outside keep none. Host
//   calibration fits the CPU devices' pairs and a GPU's with one CPU device in separate probes,
//   run_cost_calibration.h). It is the cost c at which the probes that use two or more
//   devices, replayed in the order their subtasks ran with the durations the planners predict
//   (the schedule's times the device's in-run factor, without the co-run factor and the
//   combines, its cold start on its first subtask) and c on every edge between two of those devices
//   (ReplayUs), take what they took (median run of each, from the first subtask's start to the last
//   one's end) in geometric mean. So c holds all co-execution costs beyond each device's prediction
//   alone: the wake-up of a device thread parked on the other device's work, partial sums
//   combined after a cin split, and kernels slower beside the other core's (in partition-only
//   plans on two cores, subtasks with inputs from both devices ran 12-20% over their
//   prediction, those with their own device's inputs 4-8%). Fitted to the measured kernels
//   instead, c held only the waits, and co-execution plans stayed 1.1-1.3x their prediction.
//   0 when the plans took no longer than predicted; at most kMaxSyncUs.
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "calibration/run_costs/run_costs.h"
#include "calibration/run_costs/run_probes.h"

namespace psched::calibration {

inline constexpr double kMaxSyncUs = 1000;

// `device_names[i]` names device i of the probes; `sync_devices[i]` whether its pairs get a
// sync cost. REQUIRES: both as long as the probes' device count.
calibration::RunCosts FitRunCosts(std::span<const ProbeResult> results,
                                  std::span<const std::string> device_names,
                                  const std::vector<bool>& sync_devices);

}  // namespace psched::calibration
