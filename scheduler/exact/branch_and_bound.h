// The primary exact solver: a combinatorial branch and bound over list schedules of
// subtasks, exact over a StageInstance's whole candidate space (docs/scheduling.md,
// "Exact reference solvers", places it among the exact methods).
//
// Search space. A node is a list of placed subtasks (op, axis, device, work). The next
// subtask is appended to its device: it starts at the earliest time >= the end of the
// device's last stage subtask and >= its inputs' readiness that fits between earlier
// stages' busy intervals (Fit). Only lists whose starts are nondecreasing (ties by op,
// then device) are generated. Every optimal schedule can be shifted left into one whose
// start-sorted list reproduces it exactly under this rule, so the search is complete;
// and each such schedule has exactly one list, so no order is enumerated twice. An op's
// first subtask fixes its axis; a grid part takes any number of units (the part holding
// the last unit is `clip` shorter), the last part of an op takes what is left, a fixed
// plan's slots go to distinct devices in any order.
//
// Pruning. (1) Bounds: per unfinished op, its earliest completion from per-device heads
// (device free, inputs ready, no start before the current one) through a relaxed division
// (StageInstance::RelaxedDivisionBound) plus its static tail; and load bounds sum_d
// lambda_d (free_d) + sum_ops min_d lambda_d * least work (a Lagrangian relaxation of the
// per-device load constraints, lambda chosen at the root). (2) Dominance: two nodes with
// the same placed set and partial ops, where one has every device free no later, every
// relevant completion no later, a current start no later and no larger sum of starts,
// the other is pruned (the sum-of-starts condition makes the rule safe with the ordering
// rule above). (3) The warm start, when given, is the first incumbent.
//
// Children are tried best bound first; grid parts are tried from the division that
// balances the op's finish times outward. On a limit the best schedule found is returned
// with the least bound over the open nodes. Deterministic for a given instance and limits
// except where the time limit cuts it. Not thread-safe (one solver per call).
#pragma once

#include "scheduler/exact/stage_instance.h"
#include "scheduler/exact/stage_solution.h"

namespace psched::scheduler::exact {

// `warm` (may be null): a valid schedule of the instance, used as the first incumbent.
StageResult SolveBranchAndBound(const StageInstance& instance, const SolveLimits& limits,
                                const StageSolution* warm = nullptr);

// The root lower bound of the instance (what SolveBranchAndBound proves before branching).
double RootLowerBound(const StageInstance& instance);

}  // namespace psched::scheduler::exact
