// `iterative[:<list>]`: the paper's iterative search (sec. 5, Algorithm 1).
//
// Start from initial plans (none, or min-local-latency) and the inner list scheduler's
// schedule of them. Split the DAG into stages (staging.h). Per stage, with the subtasks of
// earlier stages fixed (they keep their devices and times, block their devices and give
// predecessor completion times), repeat: compute slack on the stage's scheduled-subtask
// graph (slack.h); draw `ops_per_iteration` partitionable ops of the stage (with
// replacement) from the mixture P(i) = rho * w_i / sum w + (1 - rho) / |V_p|, w_i = total
// subtask duration / (slack + epsilon); for each, draw `plans_per_op` candidate plans
// (PlanSampler); re-run the inner list scheduler on the stage for every candidate that differs from
// the current plan; accept the candidate that lowers the stage's finish time most; stop when none
// does, after `max_iterations` or when the stage's timeout passes.
//
// Evaluation is stage-local: a candidate reschedules only the stage's ops, and the fixed
// part handed to the list scheduler holds only the earlier subtasks that can matter - the
// stage's external predecessors and the subtasks that end after the earliest time any
// stage op can start - so the cost of an evaluation does not grow with the model.
//
// The result is the best of three schedules of the whole problem: the staged one, the
// inner scheduler's schedule of the final plans without stages, and the starting
// schedule - so the search never returns a schedule worse than the one it started from.
//
// Deterministic for a given seed (one std::mt19937_64). Thread-safe: each call owns its
// state; a ListScheduler is immutable.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"
#include "scheduler/scheduler.h"

namespace psched::scheduler::partition_aware {

enum class InitialPlans { kNone, kMinLocalLatency };

struct IterativeOptions {
  // Stage size limit when no global join closes a stage first (paper: 20). Larger stages
  // see more of the graph per evaluation but each evaluation costs more.
  int max_stage_size = 20;
  // false: one stage holding every op (the paper's no-staging ablation).
  bool staging = true;
  // Operators sampled per iteration and candidate plans drawn per sampled operator
  // (paper: 5 x 10). More widens each iteration's neighbourhood at linear cost.
  int ops_per_iteration = 5;
  int plans_per_op = 10;
  // Extra candidates per sampled operator that move work between the parts of its current
  // plan (log-uniform amount, so both coarse and one-unit moves occur). Not in the paper
  // (0): uniformly drawn divisions rarely land next to a balanced one, which matters when
  // latency varies smoothly with work; local moves let the search refine a good split.
  int local_moves = 0;
  // Weight of slack-biased sampling against uniform sampling, and the slack offset that
  // keeps zero-slack weights finite (paper: 0.8 and 1e-12).
  double rho = 0.8;
  double epsilon = 1e-12;
  // Safeguard iteration budget B per stage; the search normally stops earlier, when no
  // sampled candidate improves.
  int max_iterations = 100000;
  // Wall-clock budget per stage; infinite: none (the paper's default).
  absl::Duration stage_timeout = absl::InfiniteDuration();
  InitialPlans initial = InitialPlans::kNone;
  // Split count K of sampled plans; 0: min(max_splits, |D|). Capped at that value.
  int splits = 0;
  // Candidate cut points are multiples of this; 0: the problem's alignment.
  int64_t alignment = 0;
  uint64_t seed = 0;
};

struct IterativeStats {
  int stages = 0;
  int iterations = 0;       // over all stages, the final non-improving one included
  int64_t evaluations = 0;  // inner list-scheduler runs on candidate plans
  int accepted = 0;         // candidate updates accepted
  double initial_makespan_us = 0;
  double staged_makespan_us = 0;
  double makespan_us = 0;  // of the returned schedule
  double search_ms = 0;    // wall time of the whole call
};

// Runs the search with `list` as the inner SCHEDULE routine. `stats` may be null.
absl::StatusOr<Schedule> IterativeSearch(const Problem& problem, const ListScheduler& list,
                                         const IterativeOptions& options,
                                         IterativeStats* stats = nullptr);

// Applies SchedulerOptions to `base`: seed, timeout (per stage) and params "max_stage_size",
// "staging" (true|false), "ops_per_iteration", "plans_per_op", "rho", "epsilon",
// "max_iterations", "initial" (none|min-local-latency), "splits", "alignment", "local_moves".
// InvalidArgument names an unknown key or a bad value.
absl::StatusOr<IterativeOptions> ApplySchedulerOptions(IterativeOptions base,
                                                       const SchedulerOptions& options);

class IterativeScheduler final : public Scheduler {
 public:
  explicit IterativeScheduler(std::unique_ptr<ListScheduler> list, IterativeOptions options = {})
      : list_(std::move(list)), options_(options) {}
  std::string name() const override { return "iterative:" + list_->name(); }
  absl::StatusOr<Schedule> Plan(const Problem& problem,
                                const SchedulerOptions& options) const override;

 private:
  std::unique_ptr<ListScheduler> list_;
  IterativeOptions options_;
};

}  // namespace psched::scheduler::partition_aware
