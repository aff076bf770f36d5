// The second, independent exact formulation: a mixed-integer program solved by CBC (the
// paper's Joint-Gurobi formulation of sec. 4.1 with binary selection and ordering
// variables), over the placed plans of placed_plans.h.
//
// Variables: x_pi (binary) per placed plan pi of each op; per (op, device) a start s; per
// op a completion C; the makespan T; per pair of unrelated ops and shared device an order
// binary; per (op, device, earlier-stage busy interval) a before/after binary. The
// subtask of op i on device d is active when a chosen plan uses d (y_id = sum of x_pi
// over those plans) and lasts p_id = sum_pi x_pi tau_d(pi_d). Constraints: one plan per
// op; C_i >= s_id + p_id when active; s_id >= input readiness from earlier stages;
// full-barrier dependencies (s_jd >= C_i, or per device pair with the transfer cost when
// domains differ); big-M disjunctions between active subtasks sharing a device and
// between a subtask and each busy interval; T >= C_i. Valid inequalities tighten the LP:
// T >= C_i + tail_i and per device sum_i p_id <= T - (first possible start).
// The warm start's makespan is a CBC cutoff, so "no better solution" proves it optimal.
//
// For small instances and cross-checks: ResourceExhausted when an op has more than
// `max_plans` placed plans. Single-threaded; CBC's default cuts and heuristics.
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "scheduler/exact/stage_instance.h"
#include "scheduler/exact/stage_solution.h"

namespace psched::scheduler::exact {

absl::StatusOr<StageResult> SolveMip(const StageInstance& instance, const SolveLimits& limits,
                                     const StageSolution* warm = nullptr,
                                     int64_t max_plans = 5000);

}  // namespace psched::scheduler::exact
