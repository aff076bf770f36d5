// The reference of the exact solvers' proofs: plain enumeration of every placed plan of
// every op and every order of the subtasks on every device, each timed at its earliest
// starts (after the device's previous subtask and the op's inputs, fitting between
// earlier stages' busy intervals); orders that contradict the dependencies are skipped.
// No bounds, no ordering rule, nothing shared with the branch and bound but the instance.
// For tiny instances only: ResourceExhausted when the enumeration would exceed `limit`
// (plan combinations x orders).
#pragma once

#include <cstdint>

#include "absl/status/statusor.h"
#include "scheduler/exact/stage_instance.h"
#include "scheduler/exact/stage_solution.h"

namespace psched::scheduler::exact {

absl::StatusOr<StageSolution> SolveBruteForce(const StageInstance& instance, int64_t limit);

}  // namespace psched::scheduler::exact
