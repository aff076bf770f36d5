// Static cost of canonical ops: FLOPs and parameter counts.
//
// FLOPs count a multiply-add as 2. Convolution, fully-connected and matmul ops count only their
// multiply-adds (2 * MACs, the usual convention for model FLOPs); pooling counts one FLOP per
// window element read; element-wise ops and activations one per output element (a fused
// activation adds one per output element to its op); softmax three per element (exp, sum,
// divide); layer norm 8 per element; a reduction one per input element; linear resize 8 per
// output element (four weighted taps); data movement (concat, pad, flatten, transpose,
// reshape, slice, nearest resize) counts 0. Pure functions; thread-safe.
#pragma once

#include <cstdint>

#include "model/graph.h"

namespace psched::model {

int64_t OpFlops(const Graph& graph, OpId op);

// Elements of the constants an op reads (filter + bias, FC weight + bias, constant operands).
int64_t OpParams(const Graph& graph, OpId op);

// Sums over all ops. A constant read by several ops counts for each: exporters share
// bit-identical initializers (zero biases, say) between unrelated layers, and the
// parameter count should describe the architecture, not that file-level deduplication.
int64_t GraphFlops(const Graph& graph);
int64_t GraphParams(const Graph& graph);

}  // namespace psched::model
