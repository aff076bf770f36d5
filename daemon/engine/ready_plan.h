// daemon::ReadyPlan: a validated plan held in memory, what Infer runs and a cached GetPlan
// answers with no SQLite or JSON on the way. Immutable once made; shared by pointer.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/store.h"
#include "daemon/engine/backend.h"

namespace psched::daemon {

// One subtask as GetPlan reports it: names, not indices.
struct PlanSubtaskInfo {
  std::string op;
  int64_t op_id = 0;
  std::string device;
  std::string strategy = "none";
  int64_t work_begin = 0;
  int64_t work_end = 1;
  double start_us = 0;
  double end_us = 0;
  bool fallback = false;  // the latency model had no data of its own for the op
};

// What a GetPlan of the plan answers, formatted once when the plan becomes ready: a cached
// GetPlan then only copies it into the response.
struct PlanAnswer {
  std::vector<PlanSubtaskInfo> subtasks;  // in the plan's order (start time)
  std::string cached_schedule_json;       // PlanAnswerJson(..., cached = true)
};

struct ReadyPlan {
  // The plan's own cache key: a plan made with a corrected latency model has that model's
  // predictor version.
  cache::PlanKey key;
  PlanOutput output;  // output.id set
  double planning_ms = 0;
  // The key it is served under (PlanKey::Joined() of the request's key): its own key,
  // except for a plan measurement feedback serves in place of another
  // (daemon/engine/plan_feedback.h).
  std::string slot;
  // The scheduler and options it was requested with.
  std::string requested_scheduler;
  std::map<std::string, std::string> options;
  // Set by MakeReady.
  std::shared_ptr<const PlanAnswer> answer;
  // Read from the cache where ImportPlans stored it: planned on another board.
  bool imported = false;
};

// `plan` with its answer formatted: every ReadyPlan the engine serves is made here.
std::shared_ptr<const ReadyPlan> MakeReady(ReadyPlan plan);

// The schedule JSON GetPlan answers with (docs/api.md): the plan JSON plus the answer's
// `cached`, `imported`, `planning_ms`, `scheduler` and `makespan_us`.
std::string PlanAnswerJson(const ReadyPlan& plan, bool cached);

}  // namespace psched::daemon
