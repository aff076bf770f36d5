// daemon::ReadyPlan: a validated plan held in memory, what Infer runs and a cached GetPlan
// answers with no SQLite or JSON on the way. Immutable once made; shared by pointer.
#pragma once

#include <map>
#include <string>

#include "cache/store.h"
#include "daemon/backend.h"

namespace psched::daemon {

struct ReadyPlan {
  // The plan's own cache key: a plan made with a corrected latency model has that model's
  // predictor version.
  cache::PlanKey key;
  PlanOutput output;  // output.id set
  double planning_ms = 0;
  // The key it is served under (PlanKey::Joined() of the request's key): its own key,
  // except for a plan measurement feedback serves in place of another (daemon/plan_feedback.h).
  std::string slot;
  // The scheduler and options it was requested with.
  std::string requested_scheduler;
  std::map<std::string, std::string> options;
};

}  // namespace psched::daemon
