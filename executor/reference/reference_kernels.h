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

// f(x) for one element under `activation` (kNone is the identity).
float ApplyActivation(const model::Activation& activation, float x);

// Checks that op `id` is well formed: attrs of the right type, input count, shapes consistent
// with the attrs (output extent included), weights present and sized as declared. The error
// names the op, what is wrong and the values involved.
absl::Status ValidateOp(const model::Graph& graph, model::OpId id);

// Computes op `id`. `inputs` holds one pointer per activation (non-constant) input, in
// `op.inputs` order, each to graph.tensor(t).shape.Elements() floats; `output` receives
// graph.output_shape(id).Elements() floats. Validates the op first.
absl::Status RunOp(const model::Graph& graph, model::OpId id, std::span<const float* const> inputs,
                   float* output);

// Runs the whole graph op by op. `inputs_nhwc` holds one NHWC buffer per graph input in
// `graph.inputs` order; the result holds one NHWC buffer per graph output in `graph.outputs`
// order.
absl::StatusOr<std::vector<std::vector<float>>> RunGraph(
    const model::Graph& graph, const std::vector<std::vector<float>>& inputs_nhwc);

}  // namespace psched::executor::reference
