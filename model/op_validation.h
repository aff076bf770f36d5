// Whether an op of a canonical graph is well formed: the one definition every executor
// checks before it compiles or runs an op (reference, CPU and OpenCL kernels, the
// co-execution runtime), so a malformed graph is refused with the same message everywhere.
// Stateless functions; thread-safe; the graph must outlive the call.
#pragma once

#include <string_view>

#include "absl/status/status.h"
#include "model/graph.h"

namespace psched::model {

// Checks that op `id` is well formed: attrs of the right type, input count, shapes consistent
// with the attrs (output extent included), weights present and sized as declared. The error
// names the op, what is wrong and the values involved.
absl::Status ValidateOp(const Graph& graph, OpId id);

// InvalidArgument "op <id> '<name>' (<kind>): <what>". REQUIRES: `id` is an op of `graph`.
absl::Status InvalidOpError(const Graph& graph, OpId id, std::string_view what);

}  // namespace psched::model
