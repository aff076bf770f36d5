// Expanded-DAG scheduling (paper sec. 4.4): fix one plan per op - `expanded-equal:<list>`
// the equal-size rule, `expanded-local:<list>` the min-local-latency rule (both judged
// under the one-subtask-per-device mapping, see candidate_plans.h) - then let the named
// schedule-only list scheduler place the subtasks of the expanded graph. The list
// scheduler chooses devices freely; only the work division comes from the rule.
// Immutable; thread-safe.
#pragma once

#include <memory>
#include <string>

#include "scheduler/scheduler.h"

namespace psched::scheduler::partition_aware {

enum class ExpansionRule { kEqualSize, kMinLocalLatency };

class ExpandedDagScheduler final : public Scheduler {
 public:
  ExpandedDagScheduler(ExpansionRule rule, std::unique_ptr<ListScheduler> list)
      : rule_(rule), list_(std::move(list)) {}
  std::string name() const override;
  absl::StatusOr<Schedule> Plan(const Problem& problem, const SchedulerOptions& options) const override;

 private:
  ExpansionRule rule_;
  std::unique_ptr<ListScheduler> list_;
};

}  // namespace psched::scheduler::partition_aware
