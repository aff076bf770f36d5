// RunCosts: what whole runs of real plans cost beyond the per-op latencies calibration timed
// alone, which isolated samples cannot see. calibration/run_costs/ measures them on the
// host's devices; ApplyRunCosts (host_training.h) puts them into the host model:
//   - `in_run` per device: summed measured / summed predicted subtask time inside the runs. An
//     op timed alone starts with its data evicted from the core's private caches but still in
//     the shared cache; inside a run its input is what the previous op just wrote and its
//     weights and output may come from memory (other work ran since the last run);
//   - `sync_us` per ordered pair of devices: what an edge between subtasks on the two devices
//     costs (LatencyModel::SyncUs) - waking a device thread parked on the other device's work,
//     the data between the cores' caches - fitted so the plans, replayed with their predicted
//     subtask times and this cost on every edge between devices, take what they took. Planners
//     charge it. The same pair's hand-off split by the waiter's idle time (LatencyModel::
//     HandOffUs), measured from the waits themselves, predicts a fixed plan's run: a waiter that
//     has not parked yet resumes within a few microseconds, a parked one after 40-80;
//   - `cold_us` per device: what a run costs the device once beyond its in-run factor - its
//     first kernels after an idle pause run on colder caches than any sample saw;
//   - `run_overhead_us`: the median time of a run outside every subtask (starting the devices,
//     input and output copies). With the largest cold start it is the model's RunOverheadUs
//     (PerRunUs), which a plan's predicted latency adds to its makespan. A constant per run,
//     it changes no plan.
// Plain data and its JSON; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace psched::calibration {

struct RunCosts {
  struct InRun {
    std::string device;
    double measured_us = 0;   // summed over the probes (median run of each)
    double predicted_us = 0;  // what the model predicted for the same subtasks
    double factor = 1;        // measured / predicted
    // What a run costs the device once, beyond factor * predicted: its first kernels after the
    // idle pause before the run (colder caches than calibration's back-to-back samples saw).
    double cold_us = 0;
    // factor and cold_us are fitted to the plans on this device alone; in plans with work on
    // other devices too its subtasks took co_run_factor times longer (shared caches, memory).
    double co_run_factor = 1;
    // What the last slice of a cin-split op to end on this device took beyond its prediction,
    // per element it added of the other slices' partial sums (output elements x other slices;
    // CoExecutionRuntime::CompletesOp), in ns: a partial sum another core wrote costs ~2 ns an
    // element here where a local add costs a tenth of that. The median over `combines` of them
    // in the probes; 0 with fewer than kMinCombines (Problem::CombineUs then uses the model's
    // element-wise add).
    double partial_sum_ns = 0;
    int combines = 0;
    // What a subtask of this device waits after the one before it ends when nothing from
    // another device holds it (the runtime taking its next step; on a GPU, dispatching it):
    // the probes' local delays on the device over `gaps` such subtasks, and `synced_gap_us`
    // over `synced_gaps` of those with an input from another device or after a subtask that
    // fed one (a GPU queue runs a wait or signal kernel between), in the multi-device probes. A
    // prediction of a plan on two devices or more adds it before each of the device's subtasks
    // but the first (LatencyModel::SubtaskGapUs).
    double gap_us = 0;
    int gaps = 0;
    double synced_gap_us = 0;
    int synced_gaps = 0;
  };
  static constexpr int kMinCombines = 5;
  struct Sync {
    std::string from, to;
    double us = 0;
    // The hand-off by how long the waiting device had been idle when its input came
    // (HostLatencyModel::Device::HandOff): the median delay of the probes' waits that came
    // within `window_us` (the runtime's spin before a host waiter parks) and of the later ones.
    // A kind the probes saw fewer than kMinHandOffWaits times costs the median of the pair's
    // waits, or with fewer than that of those too, `us`. window_us 0: none
    // measured (files written before them).
    double window_us = 0;
    double spinning_us = 0, parked_us = 0;
    int spinning_waits = 0, parked_waits = 0;
  };
  static constexpr int kMinHandOffWaits = 5;
  std::vector<InRun> in_run;
  std::vector<Sync> sync;
  double run_overhead_us = 0;
  int probes = 0;  // plans run
  // What the host model adds to every plan's makespan: the run overhead and the largest cold
  // start (the devices of a plan start together, so their cold starts overlap).
  double PerRunUs() const;
  int runs = 0;  // timed runs of each the costs were fitted to
  // The probes' timed rounds, of which the fit kept the `runs` quietest (calibration/
  // run_costs/quiet_rounds.h), and the largest slowness (a round's wall times over the probes'
  // medians) among the rounds kept and among those dropped. rounds 0: no selection (files before
  // it).
  int rounds = 0;
  double slowest_kept_round = 0, slowest_dropped_round = 0;
  // The sync fit: summed median spans of the probes with cross-device edges, as measured and
  // as replayed with their predicted subtask times (in-run factors applied) and no sync cost.
  double multi_device_measured_us = 0;
  double multi_device_replay_us = 0;
  // The replays' sum with the hand-offs by wait instead (how a plan's latency is predicted).
  double multi_device_hand_off_replay_us = 0;
  // The same for the GPU's probes beside one CPU device (0 without a GPU).
  double gpu_multi_device_measured_us = 0;
  double gpu_multi_device_replay_us = 0;
  double gpu_multi_device_hand_off_replay_us = 0;
};

// {"probes", "runs", "rounds", "slowest_kept_round", "slowest_dropped_round", "run_overhead_us",
//  "multi_device_measured_us", "multi_device_replay_us",
//  "multi_device_hand_off_replay_us", "gpu_multi_device_measured_us",
//  "gpu_multi_device_replay_us", "gpu_multi_device_hand_off_replay_us",
//  "in_run": [{"device", "measured_us", "predicted_us", "factor", "cold_us", "co_run_factor",
//              "partial_sum_ns", "combines", "gap_us", "gaps", "synced_gap_us",
//              "synced_gaps"}, ...],
//  "sync": [{"from", "to", "us", "window_us", "spinning_us", "parked_us", "spinning_waits",
//            "parked_waits"}, ...]}
nlohmann::json RunCostsToJson(const RunCosts& costs);
// InvalidArgument naming the field for anything malformed: a missing device name, a factor
// that is not finite and > 0, a cold start, sync or hand-off cost or window that is not finite
// and >= 0, a partial_sum_ns or gap that is not finite and >= 0. A missing cold_us,
// co_run_factor, partial_sum_ns or gap (files written before them) is 0, 1, 0 or 0; missing
// hand-off fields: none. The
// report's figures (counts, sums, the rounds' slowness) may be missing (0), but when present
// must be numbers >= 0, and the counts whole.
absl::StatusOr<RunCosts> RunCostsFromJson(const nlohmann::json& json);
// The table psched-calibrate prints.
std::string FormatRunCosts(const RunCosts& costs);

}  // namespace psched::calibration
