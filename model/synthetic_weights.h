// Deterministic synthetic weights for graph-only models.
//
// A graph imported without weights can still be executed (for timing, or to exercise the
// runtime) once every constant has data. SynthesizeWeights fills each constant whose data
// is empty, leaving real data untouched:
//  - conv filters and FC weights: uniform in +-gain * sqrt(3 / fan_in), with gain sqrt(2)
//    when the op's fused activation is a ReLU-like clamp (He-uniform) and 1 otherwise
//    (LeCun-uniform), so activations keep unit order of magnitude through deep stacks;
//  - biases and add/sub operands: uniform in [-0.05, 0.05];
//  - mul operands: uniform in [0.5, 1].
// Values depend only on (seed, constant name, element index), not on iteration order, so
// the same model and seed always give the same bytes. Pure function of its inputs.
#pragma once

#include <cstdint>

#include "model/graph.h"

namespace psched::model {

// Fills every constant with empty data; sets graph->has_weights.
void SynthesizeWeights(uint64_t seed, Graph* graph);

}  // namespace psched::model
