#include "scheduler/partition_aware/expanded_dag_scheduler.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/partition_aware/candidate_plans.h"

namespace psched::scheduler::partition_aware {

std::string ExpandedDagScheduler::name() const {
  return absl::StrCat(rule_ == ExpansionRule::kEqualSize ? "expanded-equal:" : "expanded-local:",
                      list_->name());
}

absl::StatusOr<Schedule> ExpandedDagScheduler::Plan(const Problem& problem,
                                                    const SchedulerOptions& options) const {
  std::vector<PartitionPlan> plans(static_cast<size_t>(problem.num_ops()));
  for (OpId op = 0; op < problem.num_ops(); ++op) {
    plans[static_cast<size_t>(op)] = rule_ == ExpansionRule::kEqualSize
                                         ? EqualSizePlan(problem, op).plan
                                         : MinLocalLatencyPlan(problem, op).plan;
  }
  return list_->Schedule(problem, plans);
}

}  // namespace psched::scheduler::partition_aware
