// The JSON task-graph format of `psched-bench --taskgraph` (docs/taskgraph-format.md):
// devices, tasks with a fixed cost per device, and edges with an optional transfer cost.
// Parsing checks everything and reports the first problem with its JSON location; tasks
// are put in a topological order (stable: the file's order where dependencies allow).
// Pure functions; thread-safe.
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
};

absl::StatusOr<TaskGraphInput> ParseTaskGraphJson(std::string_view text);
// NotFound when the file is missing; otherwise as ParseTaskGraphJson, message prefixed
// with the path.
absl::StatusOr<TaskGraphInput> LoadTaskGraphFile(const std::string& path);

}  // namespace psched::bench
