// What an exact solver returns for one StageInstance: the best schedule of the stage it
// found, the lower bound it proved, and how the search ended.
//
// A StageSolution holds the subtasks of the stage's ops only (global op ids, slots and
// ranges as in scheduler::Schedule) and one plan per stage op; makespan_us is the latest
// end of those subtasks (the stage objective; earlier stages' work is not counted).
// Plain value types.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "scheduler/partition_plan.h"
#include "scheduler/schedule.h"

namespace psched::scheduler::exact {

struct StageSolution {
  std::vector<ScheduledSubtask> subtasks;
  std::vector<PartitionPlan> plans;  // by local op
  double makespan_us = std::numeric_limits<double>::infinity();
  bool found() const { return makespan_us < std::numeric_limits<double>::infinity(); }
};

// Why a search stopped.
enum class StopReason {
  kOptimal,     // the whole space was searched (or the bound met the incumbent)
  kTimeLimit,
  kNodeLimit,
  kMemoryLimit,  // MIP: the program would be too large to build
};
const char* StopReasonName(StopReason reason);

struct StageResult {
  StageSolution best;
  // A proven lower bound on the stage objective over the whole candidate space.
  double lower_bound_us = 0;
  StopReason stop = StopReason::kOptimal;
  bool proven() const { return stop == StopReason::kOptimal; }
  int64_t nodes = 0;
  double seconds = 0;
};

// Resource limits of one solve. Time is checked often enough that a solve returns within
// a few milliseconds of the limit.
struct SolveLimits {
  double time_limit_s = 10;
  int64_t node_limit = 0;           // 0: none
  int64_t memo_bytes = 128 << 20;   // branch and bound: dominance table size
};

}  // namespace psched::scheduler::exact
