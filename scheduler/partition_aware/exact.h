// Offline reference solvers (paper sec. 4.1 and 6.2): a mixed-integer program per stage,
// solved with CBC under a time limit, for `exact-schedule-only` (every op unpartitioned),
// `exact-expanded-local` (min-local-latency plans fixed) and `exact` (per op, the choice
// between the unpartitioned op and its min-local-latency plan, jointly with placement and
// order).
//
// Stages come from staging.h (default at most 10 ops, so the programs stay small); each
// stage is solved with earlier stages fixed. The program has a binary per (subtask,
// device), per plan choice and per unordered pair of subtasks of unrelated ops (their
// order), with big-M disjunctions that apply only when both share a device; siblings take
// distinct devices; a subtask starts after its in-stage predecessors complete, after its
// inputs from earlier stages arrive and after its device's last earlier-stage subtask
// (no filling of earlier gaps); an edge with a transfer cost always pays it (exact when
// all devices share a memory domain, conservative otherwise). The heuristic schedule of
// the stage (StageHeft on the candidate plans) is the warm start. The solution's devices
// and per-device order are re-timed to earliest starts, and the stage keeps whichever of
// that and the heuristic schedule finishes first - so a stage that hits its time limit
// is never worse than HEFT; the whole result is finally compared with whole-graph HEFT on
// the same plan choices. "exact" here is exact within that candidate set and time
// limit, not over every integer division.
//
// Parameters (SchedulerOptions.params): "stage_time_limit_s" (default 10; a finite
// SchedulerOptions.timeout overrides it), "max_stage_size" (default 10). Immutable;
// thread-safe (CBC runs single-threaded per call).
#pragma once

#include <string>

#include "scheduler/scheduler.h"

namespace psched::scheduler::partition_aware {

enum class ExactMode { kScheduleOnly, kExpandedLocal, kJoint };

class ExactScheduler final : public Scheduler {
 public:
  explicit ExactScheduler(ExactMode mode) : mode_(mode) {}
  std::string name() const override;
  absl::StatusOr<Schedule> Plan(const Problem& problem, const SchedulerOptions& options) const override;

 private:
  ExactMode mode_;
};

}  // namespace psched::scheduler::partition_aware
