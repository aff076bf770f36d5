// How much of each subtask's time another device was busy: the share of a run over which the
// host model's co-run factor applies (LatencyModel::CoRunFactor). Two cores slow each other
// down only while both run (they share the last-level cache and memory bandwidth), so a device
// that works while the other waits - most of a HEFT plan that hands whole ops back and forth -
// runs at its own speed, and one whose every subtask has a twin on the other core - a
// partition-only plan - pays the factor throughout. Used both ways: to predict a fixed plan's run
// (scheduler::RetimeByWaits) and to fit the factor to measured runs
// (calibration/run_costs/fit_run_costs.h). Pure function; thread-safe.
#pragma once

#include <span>
#include <vector>

namespace psched::scheduler {

struct BusyInterval {
  int device = 0;  // >= 0
  double start = 0;
  double end = 0;  // an interval with end <= start is empty
};

// Per interval, in the input's order: the fraction of [start, end) during which some interval of
// another device runs, in [0, 1]; 0 for an empty interval. Intervals of one device may overlap
// each other (they are merged per device first), and any unit of time works.
std::vector<double> OverlapFractions(std::span<const BusyInterval> intervals);

}  // namespace psched::scheduler
