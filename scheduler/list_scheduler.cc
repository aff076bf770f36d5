#include "scheduler/list_scheduler.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "scheduler/ceft.h"
#include "scheduler/heft.h"
#include "scheduler/ldcp.h"
#include "scheduler/lookahead_heft.h"
#include "scheduler/peft.h"
#include "scheduler/psls.h"
#include "scheduler/single_device.h"

namespace psched::scheduler {

absl::StatusOr<Schedule> ListScheduler::Schedule(const Problem& problem,
                                                 std::span<const PartitionPlan> plans) const {
  Workspace workspace;
  scheduler::Schedule out;
  if (absl::Status s = ScheduleInto(problem, plans, workspace, out); !s.ok()) return s;
  return out;
}

absl::Status ListScheduler::ScheduleInto(const Problem& problem,
                                         std::span<const PartitionPlan> plans, Workspace& ws,
                                         scheduler::Schedule& out,
                                         const ScheduleScope& scope) const {
  if (absl::Status s = ws.graph.Build(problem, plans, scope.ops); !s.ok()) return s;
  if (absl::Status s = ws.Prepare(problem, scope.fixed); !s.ok()) return s;
  if (absl::Status s = PlaceAll(problem, ws); !s.ok()) return s;
  out.Reset(problem.num_ops(), problem.num_devices());
  if (!plans.empty()) {
    for (OpId op = 0; op < problem.num_ops(); ++op) out.SetPlan(op, plans[static_cast<size_t>(op)]);
  }
  const ExpandedGraph& g = ws.graph;
  for (int t = 0; t < g.num_tasks(); ++t) {
    const int device = ws.task_device[static_cast<size_t>(t)];
    if (device < 0) {
      return absl::InternalError(absl::StrCat(name(), " left subtask ", g.task(t).slot, " of op ",
                                              g.task(t).op, " unplaced"));
    }
    const ExpandedGraph::Task& task = g.task(t);
    const double start = ws.task_start[static_cast<size_t>(t)];
    out.Add(ScheduledSubtask{task.op, task.slot, device, task.axis, task.begin, task.end, start,
                             start + g.cost(t, device)});
  }
  return absl::OkStatus();
}

std::vector<std::string> ListSchedulerNames() {
  return {"heft", "lookahead-heft", "peft", "ldcp", "ceft", "psls", "single:<device>"};
}

absl::StatusOr<std::unique_ptr<ListScheduler>> MakeListScheduler(std::string_view name) {
  if (name == "heft") return std::make_unique<HeftScheduler>();
  if (name == "lookahead-heft") return std::make_unique<LookaheadHeftScheduler>();
  if (name == "peft") return std::make_unique<PeftScheduler>();
  if (name == "ldcp") return std::make_unique<LdcpScheduler>();
  if (name == "ceft") return std::make_unique<CeftScheduler>();
  if (name == "psls") return std::make_unique<PslsScheduler>();
  if (name.starts_with("single:")) {
    const std::string_view device = name.substr(7);
    if (device.empty()) {
      return absl::InvalidArgumentError("'single:' needs a device name, e.g. single:gpu");
    }
    return std::make_unique<SingleDeviceScheduler>(std::string(device));
  }
  return absl::NotFoundError(absl::StrCat("unknown list scheduler '", std::string(name),
                                          "'; known: ", absl::StrJoin(ListSchedulerNames(), ", ")));
}

}  // namespace psched::scheduler
