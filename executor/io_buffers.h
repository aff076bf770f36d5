// The graph input/output buffers an executor's Run accepts.
//
// Both executors (CpuGraphExecutor, CoExecutionRuntime) take one NHWC buffer per graph input
// and output, by pointer or, in a convenience overload, as owned vectors; this is the one
// place that checks those arguments and sizes owned outputs. Stateless; thread-safe.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/graph.h"

namespace psched::executor {

using PointerRun =
    absl::FunctionRef<absl::Status(std::span<const float* const>, std::span<float* const>)>;

// InvalidArgument when the buffer counts differ from the graph's or a pointer is null.
absl::Status CheckIoPointers(size_t num_inputs, size_t num_outputs,
                             std::span<const float* const> inputs_nhwc,
                             std::span<float* const> outputs_nhwc);

// Copies every entry of `copies` in parts of 16K floats, running `parallel_for(parts,
// copy_part)` - e.g. across a device's threads. Small parts let a thread take over the parts
// of one that has not woken up yet.
struct FloatCopy {
  const float* from;
  float* to;
  int64_t floats;
};
using PartsRunner = absl::FunctionRef<void(size_t parts, absl::FunctionRef<void(size_t)> part)>;
void CopyInParts(std::span<const FloatCopy> copies, PartsRunner parallel_for);

// InvalidArgument (naming the input) when the count or a size does not match.
absl::StatusOr<std::vector<std::vector<float>>> RunWithOwnedBuffers(
    std::span<const model::Shape> input_shapes, std::span<const model::Shape> output_shapes,
    const std::vector<std::vector<float>>& inputs_nhwc, PointerRun run);

}  // namespace psched::executor
