// Which residual adds may run inside the conv before them, part by part on the thread that
// wrote each part of the conv's output, right after it did (the kernel:
// executor/cpu/residual_added_conv.h).
//
// Why: a residual add is memory-bound, and run as its own op on a multi-core device it reads
// what the conv's parts wrote on every core, half of it from the other core's cache
// (docs/runtime-performance.md measures hrnet's 46 adds slower on two cores than on one).
// ONNX Runtime fuses Conv+Add in its graph; psched fuses in the executors instead, so plans,
// predictors and the phone data keep seeing the ops the model has. The conv still writes its
// output; the add reads it back while it is in cache.
//
// A pair qualifies (FusableResidual) when the add is an Add of the conv's output - which
// nothing else reads and which is not a graph output - and one other tensor of the same shape.
// The executors add what only they know: both run whole, one right after the other on one
// device, the other operand is complete before the conv starts, and the add's output is
// planned as written while the conv runs (arena_plan.h, ExtraWriter), so ViewsAllowFusedAdd
// holds. Pure functions.
#pragma once

#include <optional>
#include <span>

#include "executor/common/tensor_view.h"
#include "model/graph.h"

namespace psched::executor {

// The residual tensor of `add` when `conv` -> `add` qualifies (see above); nullopt otherwise.
std::optional<model::TensorId> FusableResidual(const model::Graph& graph, model::OpId conv,
                                               model::OpId add);

// Whether the add may run on each part as soon as the conv wrote it, with tensors in these
// views: its output shares no float with the conv's inputs (other parts may still read them)
// and, for each of its own operands, is either exactly that view (in place) or apart from it.
bool ViewsAllowFusedAdd(std::span<const TensorView> conv_inputs, const TensorView& conv_output,
                        const TensorView& residual, const TensorView& output);

}  // namespace psched::executor
