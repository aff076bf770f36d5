// Fits the run costs of the host model (executor/calibration/run_costs.h) to probe runs
// (run_probes.h) of plans made with it.
//
// - In-run factor of a device: over every probe, the median run's summed measured subtask time
//   on the device, divided by the same subtasks' predicted time, summed.
// - Sync cost: one value for every ordered pair of `sync_devices` (hand-offs between host
//   threads cost alike in either direction here; devices outside keep none - a GPU waits and
//   signals in its own queue, and its dispatch_us already charges that). It is the cost c for
//   which the probes that use two or more devices, replayed with their measured subtask times
//   and c on every edge between two of those devices (ReplayUs), take as long in sum as they
//   took (median run of each, from the first subtask's start to the last one's end). Replaying
//   with measured durations leaves the kernels' own error out, so c holds what happened between
//   subtasks: the wake-up of a parked device thread, partial sums combined after a cin split.
//   0 when nothing was lost between subtasks; at most kMaxSyncUs.
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "executor/calibration/run_costs.h"
#include "executor/run_calibration/run_probes.h"

namespace psched::executor::run_calibration {

inline constexpr double kMaxSyncUs = 1000;

// `device_names[i]` names device i of the probes; `sync_devices[i]` whether its pairs get a
// sync cost. REQUIRES: both as long as the probes' device count.
calibration::RunCosts FitRunCosts(std::span<const ProbeResult> results,
                                  std::span<const std::string> device_names,
                                  const std::vector<bool>& sync_devices);

}  // namespace psched::executor::run_calibration
