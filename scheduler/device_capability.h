// Which ops a device of a platform has kernels for. CPU devices run every canonical op; the
// OpenCL (GPU) backend runs every kind but fully-connected layers over more than one row
// (token rows), which run on CPUs, and slices only convolutions and fully-connected layers
// along output and input channels: the row splits and the MatMul splits (model/split.h) are
// CPU-only. Every GPU kernel applies any activation kind, fused or
// standalone. Problem gives an op a device cannot run
// the latency kUnsupportedUs there, so no method that minimises the makespan places it there.
// Pure functions; thread-safe.
#pragma once

#include "model/graph.h"
#include "model/split.h"
#include "platform/platform.h"

namespace psched::scheduler {

// A latency no real plan reaches (1000 s): what an op costs on a device without a kernel.
inline constexpr double kUnsupportedUs = 1e9;

bool DeviceRunsOp(platform::DeviceKind kind, const model::Graph& graph, model::OpId op);
// Whether a device of `kind` has a kernel for the subtasks of `op` split along `axis`
// (kNone: the whole op, as DeviceRunsOp).
bool DeviceRunsSplit(platform::DeviceKind kind, const model::Graph& graph, model::OpId op,
                     model::SplitAxis axis);

}  // namespace psched::scheduler
