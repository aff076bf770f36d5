// Reference kernels of the general tensor kinds (transpose, reshape, matmul, layer norm,
// reductions, slices, concat along any axis) and of the element-wise binary kinds under numpy
// broadcasting, over physical dims (model::PhysicalDims). Internal to executor/reference; the
// public entry point is RunOp (reference_kernels.h). Pure functions, thread-safe.
#pragma once

#include <span>

#include "model/graph.h"

namespace psched::executor::reference::internal {

// True for the kinds RunTensorOp computes.
bool IsTensorKind(const model::Op& op);

// Computes op `id` into `output`, reading activation inputs from `acts` (op.inputs order,
// constants skipped) and constants from the graph. REQUIRES: model::ValidateOp passed and
// IsTensorKind(op).
void RunTensorOp(const model::Graph& graph, model::OpId id, std::span<const float* const> acts,
                 float* output);

}  // namespace psched::executor::reference::internal
