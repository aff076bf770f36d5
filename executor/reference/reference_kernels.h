// Reference kernels: simple, obviously-correct float implementations of every canonical op
// (model/op_kinds.inc), including fused activations.
//
// They exist to be trusted, not to be fast: every optimized kernel (XNNPACK, hand-written
// CPU, OpenCL) is tested against them. All tensors are NHWC f32 batch 1 as in model/graph.h;
// weights and constant operands are read from the graph. Stateless free functions,
// thread-safe; the graph must outlive the call.
#pragma once

#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "model/graph.h"

namespace psched::executor::reference {

// Computes op `id`. `inputs` holds one pointer per activation (non-constant) input, in
// `op.inputs` order, each to graph.tensor(t).shape.Elements() floats; `output` receives
// graph.output_shape(id).Elements() floats. Validates the op first (model::ValidateOp).
absl::Status RunOp(const model::Graph& graph, model::OpId id, std::span<const float* const> inputs,
                   float* output);

// Runs the whole graph op by op. `inputs_nhwc` holds one NHWC buffer per graph input in
// `graph.inputs` order; the result holds one NHWC buffer per graph output in `graph.outputs`
// order.
absl::StatusOr<std::vector<std::vector<float>>> RunGraph(
    const model::Graph& graph, const std::vector<std::vector<float>>& inputs_nhwc);

}  // namespace psched::executor::reference
