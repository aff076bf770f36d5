// The exact reference methods (paper sec. 4.1 and 6.2, Table 3's Gurobi rows):
// `exact` (the joint space - every op unpartitioned or split along any allowed axis into
// any division on the alignment grid, the space the iterative search samples from),
// `exact-schedule-only`, `exact-expanded-local` and `exact-expanded-equal`.
//
// Staged mode (default, as the paper's Joint-Gurobi): the stages of the iterative search
// (staging.h, HEFT-rank exploration closed at global joins or `max_stage_size` ops) are
// solved in order, each with the earlier ones fixed - their subtasks keep their devices
// and times, give the stage's input readiness, and block their devices, but a stage
// subtask may use an idle gap between them. Whole-graph mode (`staging=false`) solves one
// stage holding every op: exact for the whole problem, for small graphs.
//
// Per stage: warm starts are HEFT on the stage under several plan vectors (every op
// unpartitioned, min-local-latency, equal-size, and the plans of PA-HEFT and of the
// iterative search on the whole problem; for the restricted spaces, their own plans);
// the best is the incumbent of the formulation (branch and bound by default, or the CBC
// program), which runs until it proves optimality or hits the per-stage time limit and
// reports its lower bound. Each warm start's own whole-graph schedule also serves,
// re-timed after the committed stages with its plans, devices and per-device order kept.
// In the joint space the branch and bound first spends 10%, 10% and 20% of the budget on
// subspaces it finishes quickly - schedule-only, min-local-latency plans, and the
// candidate plans (each op unpartitioned, every warm start's plan, and per axis the
// divisions balancing the op over all devices and over each pair) - each seeding the next,
// then half on neighbourhoods of the incumbent (a sliding window of three ops gets the whole
// joint space, the others keep their plans), then the rest on the whole space. Finally
// the staged plans are also scheduled by HEFT and PSLS across stage boundaries. Finally the staged schedule is compared with the whole-graph
// heuristic schedules in the same space, and the better one is returned (the report says
// which). So `exact` is never worse than its warm starts, its stages are optimal where
// the report says so, and otherwise the report bounds how far each stage may be from it.
//
// Parameters (SchedulerOptions.params): "stage_time_limit_s" (default 10; a finite
// SchedulerOptions.timeout overrides it), "stage_node_limit" (0: none), "max_stage_size"
// (20), "staging" (true|false), "formulation" (bnb|mip). Immutable; Plan is thread-safe (CBC calls are serialised).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/exact/stage_instance.h"
#include "scheduler/exact/stage_solution.h"
#include "scheduler/scheduler.h"

namespace psched::scheduler::exact {

enum class ExactFormulation { kBranchAndBound, kMip };

struct ExactOptions {
  ExactSpace space = ExactSpace::kJoint;
  ExactFormulation formulation = ExactFormulation::kBranchAndBound;
  double stage_time_limit_s = 10;
  // Nodes per search (each phase of a stage); 0: none. Makes results independent of the
  // machine's speed, for tests.
  int64_t stage_node_limit = 0;
  int max_stage_size = 20;
  bool staging = true;
  // Seed of the randomised warm starts (the iterative search), as the methods get it.
  uint64_t seed = 0;
};

struct ExactStageReport {
  int ops = 0;
  double makespan_us = 0;     // the stage objective reached (latest end of its subtasks)
  double lower_bound_us = 0;  // proven bound on it, given the earlier stages
  StopReason stop = StopReason::kOptimal;
  int64_t nodes = 0;
  double seconds = 0;
  std::string incumbent;  // where the final stage schedule came from: "search" or a warm start
};

struct ExactReport {
  std::vector<ExactStageReport> stages;
  int stages_proven = 0;
  double stage_gap_us = 0;       // sum over stages of makespan - lower bound
  double staged_makespan_us = 0;
  double makespan_us = 0;        // of the returned schedule
  std::string source;            // "staged", or the whole-graph heuristic that was better
  double lower_bound_us = 0;     // root bound of the whole problem in the space (no staging)
  double seconds = 0;
};

// Reads the parameters above into `base`; InvalidArgument names a bad key or value.
absl::StatusOr<ExactOptions> ApplyExactParams(ExactOptions base, const SchedulerOptions& options);

// Solves `problem` under `options`; `report` may be null.
absl::StatusOr<Schedule> SolveExact(const Problem& problem, const ExactOptions& options,
                                    ExactReport* report = nullptr);

class ExactScheduler final : public Scheduler {
 public:
  explicit ExactScheduler(ExactSpace space) : space_(space) {}
  std::string name() const override;
  absl::StatusOr<Schedule> Plan(const Problem& problem, const SchedulerOptions& options) const override;
  // As Plan, with the per-stage report.
  absl::StatusOr<Schedule> PlanWithReport(const Problem& problem, const SchedulerOptions& options,
                                          ExactReport* report) const;

 private:
  ExactSpace space_;
};

}  // namespace psched::scheduler::exact
