// The quietest rounds of the probes (run_probes.h), for the run-cost fit (fit_run_costs.h).
//
// The run costs set the level of every plan's prediction, and a shared machine slows whole
// stretches of the probes at once: a neighbour on the VM here, another app on a phone. Probes
// disturbed for half a minute left a core's in-run factor at 1.18 where quiet ones gave 1.03,
// and every single-core plan then ran at 0.82-0.87 of its prediction. RunProbes runs every
// probe once per round, so a disturbance hits a round's probes alike: a round's slowness is the
// geometric mean over the probes of its run's wall time over the probe's median, and the fit
// keeps the quieter half of the rounds. On a quiet machine that costs little (it keeps the
// faster half of each probe's run-to-run spread, a percent or two); on a disturbed one it keeps
// every burst shorter than half the probes out of the costs.
// Pure functions; thread-safe.
#pragma once

#include <span>
#include <vector>

#include "calibration/run_costs/run_probes.h"

namespace psched::calibration {

struct RoundSelection {
  std::vector<double> slowness;  // per timed round, 1 = the probes' median
  std::vector<int> kept;         // the rounds kept, in the order they ran
  // The largest slowness among the rounds kept and among those dropped (0: none dropped).
  double slowest_kept = 0, slowest_dropped = 0;
};

// Per timed round of `results` its slowness, and the (rounds + 1) / 2 quietest of them (ties:
// the earlier). Every round is kept, and none has a slowness, when the probes did not all run
// the same number of rounds with a positive wall time each.
RoundSelection QuietestRounds(std::span<const ProbeResult> results);

// `results` with only the timings and breakdowns of `rounds` (indices into each probe's runs).
// REQUIRES: every index below each probe's number of runs.
std::vector<ProbeResult> KeepRounds(std::span<const ProbeResult> results,
                                    std::span<const int> rounds);

}  // namespace psched::calibration
