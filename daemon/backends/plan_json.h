// The plan JSON pschedd caches (docs/api.md, "subtasks": [{"op", "op_id",
// "device", "strategy", "work": [b, e], "start_us", "end_us"}]): written from a
// scheduler::Schedule, and read back into one over a model's graph and a platform's device
// names. A subtask whose time the latency model took from a stand-in (an op family its data
// does not cover, LatencyModel::PredictsWithFallback) also has "fallback": true.
//
// Nothing in the JSON is trusted: wrong types, unknown devices or strategies and op ids out
// of range are errors, never exceptions. Each op's plan is rebuilt from its subtasks in work
// order (axis and slot widths), so ValidateSchedule checks a stored plan exactly as it checks
// a freshly computed one (gaps in the work ranges, missing ops, overlaps, wrong durations).
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "model/graph.h"
#include "nlohmann/json.hpp"
#include "predictor/latency_model.h"
#include "scheduler/schedule.h"

namespace psched::daemon {

// The plan JSON of `schedule`: subtasks in start order, with the scheduler, makespan,
// platform and device names; the fallback marks when `model` (the one that planned) is given.
nlohmann::json ScheduleToJson(const model::Graph& graph, const std::string& platform,
                              const std::vector<std::string>& devices, const std::string& scheduler,
                              const scheduler::Schedule& schedule,
                              const predictor::LatencyModel* model = nullptr);

// FAILED_PRECONDITION for a device `devices` does not list; INTERNAL ("malformed cached
// plan: ...") for any other shape or type error.
absl::StatusOr<scheduler::Schedule> ScheduleFromJson(const model::Graph& graph,
                                                     const std::vector<std::string>& devices,
                                                     const nlohmann::json& plan);

}  // namespace psched::daemon
