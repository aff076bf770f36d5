// Which ops a device of a platform has kernels for. CPU devices run every canonical op; the
// OpenCL (GPU) backend runs the classic CNN kinds (convolutions, fully-connected layers over
// one row, pooling, the element-wise kinds over one image, concat along channels, pad, resize,
// flatten), and of transformer graphs matmul (batched, broadcast, either operand constant),
// softmax and layer norm over the last axis of any layout, with the classic activations. The
// other general tensor kinds (transpose, reshape, slice, reductions, ...) and the newer
// activations run on CPUs. Problem gives an op a device cannot run the
// latency kUnsupportedUs there, so no method that minimises the makespan places it there.
// Pure functions; thread-safe.
#pragma once

#include "model/graph.h"
#include "platform/platform.h"

namespace psched::scheduler {

// A latency no real plan reaches (1000 s): what an op costs on a device without a kernel.
inline constexpr double kUnsupportedUs = 1e9;

bool DeviceRunsOp(platform::DeviceKind kind, const model::Graph& graph, model::OpId op);

}  // namespace psched::scheduler
