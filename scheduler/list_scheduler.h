// The interface of schedule-only list schedulers, and the inner SCHEDULE routine of the
// partition-aware methods (paper sec. 4.2 and 5): given fixed partition plans, place every
// subtask of the expanded graph on a device and order it.
//
// Implementations (heft, lookahead-heft, peft, ldcp, ceft, psls, single:<device>) are
// stateless and immutable: const methods are thread-safe, provided each thread passes its
// own Workspace. ScheduleInto reuses the workspace and the output schedule, so repeated
// calls do not allocate once warm. docs/scheduling.md records the choices each
// algorithm leaves open (ties, averaging, insertion, sibling subtasks).
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "scheduler/list_workspace.h"
#include "scheduler/partition_plan.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler {

// Restricts a run to part of the problem (a stage of the iterative search).
struct ScheduleScope {
  // Ops to schedule, ascending; empty: all ops.
  std::span<const OpId> ops;
  // Subtasks already scheduled (earlier stages): they keep their devices and times, block
  // their devices, and give the completion times of predecessors outside `ops`. May be
  // null. Predecessors outside `ops` with no subtask here are treated as done at time 0.
  const Schedule* fixed = nullptr;
};

class ListScheduler {
 public:
  using Workspace = ListWorkspace;

  virtual ~ListScheduler() = default;
  virtual std::string name() const = 0;

  // Schedules the expanded graph of `plans` (one per op; empty: nothing partitioned).
  absl::StatusOr<scheduler::Schedule> Schedule(const Problem& problem,
                                               std::span<const PartitionPlan> plans = {}) const;
  // As Schedule, into `out`, with caller-owned scratch. With a scope, `out` holds the
  // plans of every op but only the subtasks of the ops in scope.
  absl::Status ScheduleInto(const Problem& problem, std::span<const PartitionPlan> plans,
                            Workspace& workspace, scheduler::Schedule& out,
                            const ScheduleScope& scope = {}) const;

 protected:
  // Places every task of workspace.graph (prepared: nothing placed yet).
  virtual absl::Status PlaceAll(const Problem& problem, Workspace& workspace) const = 0;
};

// "heft", "lookahead-heft", "peft", "ldcp", "ceft", "psls" or "single:<device>".
absl::StatusOr<std::unique_ptr<ListScheduler>> MakeListScheduler(std::string_view name);
// The names MakeListScheduler accepts ("single:<device>" listed as is).
std::vector<std::string> ListSchedulerNames();

}  // namespace psched::scheduler
