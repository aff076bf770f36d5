// The JSON task-graph format of `psched-bench --taskgraph` (docs/taskgraph-format.md):
// devices, tasks with a cost per device and optional split tables (the latency of a
// subtask per work size and device), edges with an optional transfer cost, and the split
// limits (alignment, max_splits). Parsing checks everything and reports the first problem
// with its JSON location; tasks are put in a topological order (stable: the file's order
// where dependencies allow). TaskGraphToJson writes the same format back, so an instance
// can be handed to another solver. Pure functions; thread-safe.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/platform.h"
#include "scheduler/problem.h"

namespace psched::bench {

struct TaskGraphInput {
  platform::Platform platform;
  scheduler::TaskGraph tasks;  // in topological order; tasks.names all set
  scheduler::ProblemOptions options;  // alignment and max_splits of split tasks
};

absl::StatusOr<TaskGraphInput> ParseTaskGraphJson(std::string_view text);
// NotFound when the file is missing; otherwise as ParseTaskGraphJson, message prefixed
// with the path.
absl::StatusOr<TaskGraphInput> LoadTaskGraphFile(const std::string& path);

// The document ParseTaskGraphJson reads back into `input` (costs as arrays in device order).
std::string TaskGraphToJson(const TaskGraphInput& input);

}  // namespace psched::bench
