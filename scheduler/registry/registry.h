// Builds schedulers from their names (docs/scheduling.md): `single:<device>`, `heft`,
// `lookahead-heft`, `peft`, `ldcp`, `ceft`, `psls` (schedule-only) and the partition-aware
// methods registered in registry.cc. Library psched_scheduler_registry; stateless and
// thread-safe.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "scheduler/scheduler.h"

namespace psched::scheduler {

// NotFound (listing the known names) for an unknown method; InvalidArgument for a known
// method with a bad argument.
absl::StatusOr<std::unique_ptr<Scheduler>> MakeScheduler(std::string_view spec);

// `problem` planned by the method named `spec` with default options (seed 1): MakeScheduler's
// errors, then the scheduler's.
absl::StatusOr<Schedule> PlanWith(const Problem& problem, const std::string& spec);

// Every accepted name; argument placeholders in angle brackets ("single:<device>").
std::vector<std::string> RegisteredSchedulers();

}  // namespace psched::scheduler
