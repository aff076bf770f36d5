// Canonicalisation: RawGraph (what the ONNX importer read) -> canonical Graph.
//
// Rules, applied in this order (docs/model-import.md has the rationale):
//  1. Identity ops (Identity, Dropout, no-op Reshape/Pad/Cast) disappear; consumers and graph
//     outputs read the identity's input instead.
//  1b. A reshape right before or after a transpose folds into it (the transpose reads or
//     writes through the reshape's dims).
//  2. A BatchNormalization folds into the conv2d or fully_connected op producing its input
//     when that op has no fused activation and the BatchNormalization is its only consumer
//     (the producer's output is not a graph output). New filter/bias constants are created,
//     so weights shared with another op stay intact. Any other BatchNormalization becomes a
//     per-channel mul followed by an add with the precomputed scale and shift.
//  3. A standalone activation fuses into its producer when the producer is a conv2d,
//     fully_connected, add, mul or sub without an activation, and the activation is the
//     producer's only consumer (and the producer's output is not a graph output). A ReLU or
//     Clip following a ReLU or Clip (fused or standalone) merges into one Clip/ReLU with the
//     intersected range, under the same single-consumer condition.
//  4. Ops whose results reach no graph output are removed; unused tensors and constants are
//     dropped and ids renumbered. Ops keep their (topological) relative order.
// Constant data is transformed when present; a graph without weights stays without. Pure
// function; thread-safe.
#pragma once

#include "absl/status/statusor.h"
#include "model/graph.h"
#include "model/raw_graph.h"

namespace psched::model {

absl::StatusOr<Graph> Canonicalize(RawGraph raw);

// Kinds an activation can be fused into (rule 3).
bool AcceptsFusedActivation(OpKind kind);

}  // namespace psched::model
