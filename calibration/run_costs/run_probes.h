// Probes: whole runs of real plans on the host's devices, timed subtask by subtask, for the run
// costs calibration fits (fit_run_costs.h).
//
// Each probe is a schedule of one graph over the caller's devices. RunProbes compiles them all
// on the co-execution runtime, runs each once untimed, then `rounds` times in interleaved
// rounds - every probe once per round, and more while the rounds have taken less than `min_s` -
// so each run starts with the caches holding what the other probes left, as on a daemon that
// serves several models or shares the machine, and a drift in the machine's speed hits every
// probe alike. Every timed run follows an idle pause (`settle_ms`), as a request after a gap
// and as psched_coexec_bench's runs (--settle-ms): the devices' threads have parked and their
// cores idled, and the run's first kernels find colder caches than back-to-back runs would
// (squeezenet's first five ops took 437 us longer than their warm prediction after 20 ms of
// idle; fit_run_costs.h fits that as a cold start). Per run it keeps the runtime's subtask
// timings, the caller's wall time of Run and their breakdown against the schedule
// (run_breakdown.h).
//
// Blocks the calling thread; the devices must not run anything else meanwhile.
#pragma once

#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "calibration/run_costs/run_breakdown.h"
#include "executor/runtime/coexecution_runtime.h"
#include "executor/runtime/device.h"
#include "model/graph.h"
#include "scheduler/schedule.h"

namespace psched::calibration {

struct Probe {
  const model::Graph* graph = nullptr;  // with weights; must outlive RunProbes
  scheduler::Schedule schedule;         // device i is devices[i] of RunProbes
  std::string label;                    // e.g. "squeezenet_v1_1 pa-heft"
};

struct ProbeOptions {
  int warmup_runs = 1;
  // Timed runs of every probe. 15 rounds (a minute for the four bench models here) spread the
  // probes over a longer stretch of a shared machine than 5 (20 s): three refits each from the
  // same samples gave in-run factors of 1.019-1.032 against 1.002-1.049 and co-run factors of
  // 1.071-1.090 against 1.057-1.120 for one core.
  int rounds = 15;
  // More rounds, up to max_rounds, until the timed rounds have taken min_s seconds. A few short
  // probes (the four bench models on one two-core cluster: 15 rounds in 2 s) otherwise fit
  // their costs to a couple of seconds of the machine, and one disturbance covers every round
  // the quiet-round selection (quiet_rounds.h) could choose from. Over six cluster calibrations
  // each way, alternated, the probes' summed runs (the level every prediction is set to) ranged
  // 29.1-34.7 ms with 15 rounds and 29.3-33.1 ms with 20 s of them (~170 rounds;
  // run_cost_calibration.h: kHostRunCostMinSeconds).
  double min_s = 0;
  int max_rounds = 1000;
  double settle_ms = 20;  // idle before each timed run
};

struct ProbeResult {
  std::string label;
  const model::Graph* graph = nullptr;
  scheduler::Schedule schedule;  // the probe's
  int devices_used = 0;          // devices with at least one subtask
  std::vector<std::vector<executor::runtime::SubtaskTiming>> timings;  // per timed run
  std::vector<RunBreakdown> breakdowns;                                // per timed run
};

// One result per probe, in order, each with the same number of timed runs. InvalidArgument for no
// devices, rounds < 1 or above max_rounds, warmup_runs < 0, a negative settle_ms or min_s, a probe
// without a graph or whose schedule is for another device count; the runtime's error naming the
// probe when a plan does not compile or a run fails.
absl::StatusOr<std::vector<ProbeResult>> RunProbes(
    std::span<const Probe> probes, std::span<executor::runtime::Device* const> devices,
    const executor::runtime::RuntimeOptions& runtime_options, const ProbeOptions& options = {});

}  // namespace psched::calibration
