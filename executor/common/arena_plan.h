// ArenaPlan: where every activation tensor of a graph lives in one flat float arena - the
// layout the CPU executor, the co-execution runtime and its OpenCL device all bind kernels to.
//
// Two tensors share memory only when every op that touches one is ordered before every op that
// touches the other (op_order.h: one at a time in op order for the CPU executor, a co-execution
// plan's dependencies and queue order for the runtime); offsets are assigned greedily, largest
// block first, at the lowest offset that does not collide with a block it may not share with and
// is not within 512 bytes of a multiple of 4 KiB from a block an op touches beside it (4 KiB
// aliasing slowed such an op up to 1.8x; arena_plan.cc). A concat input is placed directly inside
// its channel slice of the concat output when model::AliasConcatInputs says so
// (model/concat_in_place.h), so the concat copies nothing for it; nested concats chain. Plain
// data; a plan is computed once per graph and is immutable afterwards.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "executor/common/op_order.h"
#include "model/concat_in_place.h"
#include "model/graph.h"

namespace psched::executor {

// Where an activation tensor lives in the arena.
struct TensorPlacement {
  int64_t offset = -1;       // floats from the arena start to element (0, 0, 0); < 0: absent
                             // (a constant)
  int64_t pixel_stride = 0;  // floats between consecutive pixels; 0: dense (the channel count).
                             // Larger inside a channel slice of a concat output.
};

struct ArenaPlan {
  std::vector<TensorPlacement> tensors;  // indexed by TensorId
  int64_t size = 0;                      // floats, including XNNPACK's read-past slack
  int64_t in_place_concat_inputs = 0;    // concat inputs that need no copy
};

// A tensor that op `op`, not only its producer, writes: a residual add run inside the kernel of
// the conv before it (executor/cpu/residual_added_conv.h) writes its output while that conv runs.
struct ExtraWriter {
  model::TensorId tensor = model::kInvalidId;
  model::OpId op = model::kInvalidId;
};

// Plans the arena for `graph`, whose ops are ordered by `order`. Graph inputs are written before
// every op and graph outputs read after every op; so is every tensor in `live_from_start` written
// before every op (the runtime zeroes a cin-split op's output when a run starts), and every
// tensor of `extra_writers` by its op too. REQUIRES: every op passed model::ValidateOp;
// order.num_ops() == graph.ops.size(). Sets every activation tensor's pixel_stride.
ArenaPlan PlanArena(const model::Graph& graph, const OpOrder& order,
                    std::span<const model::TensorId> live_from_start = {},
                    std::span<const ExtraWriter> extra_writers = {});
// Ops running one at a time in op id order (OpOrder::Sequential), or with `reuse_memory` false
// a block per tensor (OpOrder::Unordered).
ArenaPlan PlanArena(const model::Graph& graph, bool reuse_memory = true);

}  // namespace psched::executor
