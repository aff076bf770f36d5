// Synthetic conv graphs for the partition-aware tests and the conformance suite: NHWC
// batch-1 graphs of 3x3 same-padding convolutions (partitionable along every axis) joined
// by channel concats, without weights. Test-only; pure functions.
#pragma once

#include <cstdint>

#include "model/graph.h"

namespace psched::scheduler::partition_aware::testing {

// n convolutions in a chain.
model::Graph ConvChain(int n);
// A stem conv, `branches` parallel chains of `depth` convs, a concat, a final conv.
model::Graph ForkJoin(int branches, int depth);
// conv -> {conv, conv} -> concat -> conv, repeated `blocks` times.
model::Graph Diamonds(int blocks);
// n ops: each draws 1-3 earlier ops (or the input) as inputs with a fixed seed; one input
// gives a conv with 8..64 output channels, more give a concat. A final concat joins the
// sinks so the graph has one output.
model::Graph RandomDag(int n, uint64_t seed);

}  // namespace psched::scheduler::partition_aware::testing
