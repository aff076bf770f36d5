// ArenaPlan: where every activation tensor of a graph lives in one flat float arena.
//
// Tensors whose lifetimes (producer .. last consumer, in op order) do not overlap share
// memory; offsets are assigned greedily, largest block first, at the lowest offset that
// does not collide with a block live at the same time. A concat input is placed directly
// inside its channel slice of the concat output when that is legal (produced by an op whose
// CPU kernel writes strided output, every other consumer reads strided input, not a graph
// input), so the concat copies nothing for it; nested concats chain. Plain data; a plan is
// computed once per graph and is immutable afterwards.
#pragma once

#include <cstdint>
#include <vector>

#include "model/graph.h"

namespace psched::executor::cpu {

struct TensorPlacement {
  int64_t offset = -1;       // floats from the arena start to element (0, 0, 0); -1: constant
  int64_t pixel_stride = 0;  // floats between consecutive pixels
};

struct ArenaPlan {
  std::vector<TensorPlacement> tensors;  // indexed by TensorId
  int64_t size = 0;                      // floats, including XNNPACK's read-past slack
  int64_t in_place_concat_inputs = 0;    // concat inputs that need no copy
};

// Plans the arena for `graph`, whose ops run one at a time in op id order. With
// `reuse_memory` false every tensor gets its own block (for runtimes that run ops
// concurrently). REQUIRES: every op passed reference::ValidateOp.
ArenaPlan PlanArena(const model::Graph& graph, bool reuse_memory = true);

}  // namespace psched::executor::cpu
