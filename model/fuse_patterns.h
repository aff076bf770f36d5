// Patterns exporters decompose, fused back into the single ops psched has kernels for:
//   x * sigmoid(x)                                   -> activation silu
//   x * hard_sigmoid(x; 1/6, 1/2)                    -> activation hard_swish (opset < 14)
//   x * (erf(x / sqrt 2) + 1) * 0.5                  -> activation gelu (opset < 20)
//   (x - mean(x)) / sqrt(mean((x - mean)^2) + eps)   -> layer_norm, with the scale and shift
//     * gamma + beta                                    that follow (opset < 17)
// Each fused op keeps the pattern's output tensor; the others disappear. A pattern matches
// only when its inner tensors have no other reader and are not graph outputs, and its
// constants carry data (a graph-only model keeps the decomposed form).
#pragma once

#include "model/raw_graph.h"

namespace psched::model {

// REQUIRES: identities removed (every input names its producer's output). Returns the number
// of patterns fused.
int FusePatterns(RawGraph& graph);

}  // namespace psched::model
