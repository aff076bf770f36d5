// Runs an executor's pointer-based Run on caller-owned input vectors.
//
// Both executors (CpuGraphExecutor, CoExecutionRuntime) offer a convenience overload that
// takes owned NHWC inputs and returns owned outputs; this is the one place that checks the
// inputs against the graph's shapes and sizes the outputs. Stateless; thread-safe.
#pragma once

#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/graph.h"

namespace psched::executor {

using PointerRun =
    absl::FunctionRef<absl::Status(std::span<const float* const>, std::span<float* const>)>;

// InvalidArgument (naming the input) when the count or a size does not match.
absl::StatusOr<std::vector<std::vector<float>>> RunWithOwnedBuffers(
    std::span<const model::Shape> input_shapes, std::span<const model::Shape> output_shapes,
    const std::vector<std::vector<float>>& inputs_nhwc, PointerRun run);

}  // namespace psched::executor
