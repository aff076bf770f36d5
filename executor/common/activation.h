// Fused activations (model::Activation) evaluated on the host: per element, and in place over
// a tensor view. Used by the CPU kernels for what XNNPACK cannot fuse, by the co-execution
// runtime after an op's input-channel partial sums are combined, and by the reference
// kernels. Stateless; thread-safe for views that do not overlap.
#pragma once

#include "executor/common/tensor_view.h"
#include "model/graph.h"

namespace psched::executor {

// f(x) for one element under `activation` (kNone is the identity).
float ApplyActivation(const model::Activation& activation, float x);

// Applies `activation` to every element of `view` in place.
void ApplyActivationInPlace(const model::Activation& activation, const TensorView& view);

}  // namespace psched::executor
