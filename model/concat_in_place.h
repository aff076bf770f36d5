// Which concat inputs are written in place: their producer stores them straight into their
// channel slice of the concat's output, so the concat copies nothing for them.
//
// Every psched backend honours this (the CPU executor and the co-execution runtime lay their
// arena out by it, executor/common/arena_plan.h), and the latency models see it: an op that
// writes inside a wider tensor stores strided pixels, which costs some kernels a staging copy
// (predictor::OpConfig::output_pixel_stride). One rule in one place keeps the two in step.
//
// A concat input goes in place when it is not a graph input, its producer's kernels write
// strided output, the concat reads it once, and every other consumer's kernels read strided
// input. Nested concats chain: an inner concat's output placed in the outer one carries its
// own in-place inputs along. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <vector>

#include "model/graph.h"

namespace psched::model {

// Whether the kernels of `kind` on every backend accept strided (channel-slice) input and
// output views. CreateCpuKernel refuses the views these say no to; the OpenCL kernels take any
// pixel stride.
bool SupportsStridedInput(OpKind kind);
bool SupportsStridedOutput(OpKind kind);

struct ConcatAliasing {
  // Per tensor (by TensorId): the tensor whose memory it lives in - itself, or the outermost
  // concat output it is written inside - and its first channel there.
  std::vector<TensorId> root;
  std::vector<int64_t> channel_offset;
  int64_t in_place_inputs = 0;  // concat inputs that need no copy
};

// REQUIRES: every op passed ValidateOp.
ConcatAliasing AliasConcatInputs(const Graph& graph);

// The floats between consecutive pixels of the tensor op `id` writes when that tensor lives
// inside a wider concat output (that output's channel count); 0 when it is its own tensor (or
// lives inside one no wider).
int64_t OutputPixelStride(const Graph& graph, const ConcatAliasing& aliasing, OpId id);

}  // namespace psched::model
