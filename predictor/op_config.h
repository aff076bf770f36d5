// The configuration of one operator or one subtask of a partitioned operator: everything a
// latency model may look at.
//
// A subtask is described as an operator of its own (paper sec. 2.2): a cout slice of a
// conv is a conv with fewer output channels (fewer groups for grouped/depthwise conv), a
// spatial slice is a conv producing fewer output rows from the input rows it reads
// (halo included), a cin slice is a conv over fewer input channels whose result is
// accumulated into the output (`accumulate`). The same holds for the other split kinds
// (model/split.h): a fully-connected or row-wise op over fewer rows, a MatMul with fewer
// columns (n), a shorter reduction (k, accumulated) or fewer rows of its batch x m (whole
// matrices where the count allows). An op whose output is written in place inside a
// concat's output (model/concat_in_place.h) stores strided pixels, which some kernels pay for
// with a staging copy; `output_pixel_stride` says so. A batched MatMul between computed
// tensors carries its GEMM extents (`matmul`), which the three-axis view folds together. A
// concat along another axis than the channels copies its inputs (`concat_copies`); a channel
// concat is written in place by its producers. OpConfig is a small value type.
#pragma once

#include <cstdint>
#include <vector>

#include "model/concat_in_place.h"
#include "model/graph.h"
#include "model/split.h"

namespace psched::predictor {

// kMatMul: `batch` products of [m, k] x [k, n]; the operands hold lhs_batch and rhs_batch of
// their matrices (1 when broadcast over the batch, e.g. a weight shared by every token row).
// Zeros: derived from the three-axis view by ComputeCost (batch 1, m = output rows).
struct MatMulDims {
  int64_t batch = 0, m = 0, n = 0, k = 0;
  int64_t lhs_batch = 0, rhs_batch = 0;
  bool operator==(const MatMulDims&) const = default;
};

struct OpConfig {
  model::OpKind kind = model::OpKind::kActivation;
  std::vector<model::Shape> inputs;  // activation inputs, in op order
  model::Shape output;
  model::Window2d window;  // conv and pooling; default (1x1) otherwise
  int32_t groups = 1;      // conv only
  model::ActivationKind activation = model::ActivationKind::kNone;
  bool accumulate = false;  // cin subtask: adds a partial sum into the shared output
  // Floats between consecutive pixels of the tensor the op writes when that tensor lives inside
  // a wider concat output; 0 when it is the op's own. (A cout subtask of an op writes its
  // channel slice of the op's output either way; that stride is implied.)
  int64_t output_pixel_stride = 0;
  MatMulDims matmul;           // kMatMul only
  bool concat_copies = false;  // kConcat not along the channels (ConcatAttrs::axis != -1)
  double flops = 0;  // multiply-add counted as 2
  double bytes = 0;  // activations read + written + weights read, f32

  // True for a conv with one input channel per group (and groups > 1).
  bool IsDepthwise() const;
};

// The configuration of the whole op `id` (the kNone plan). The first form works out the
// graph's concat aliasing itself; pass it in when configuring many ops of one graph.
OpConfig WholeOpConfig(const model::Graph& graph, model::OpId id);
OpConfig WholeOpConfig(const model::Graph& graph, model::OpId id,
                       const model::ConcatAliasing& aliasing);

// The configuration of the subtask [begin, end) of `whole` along `axis` (work units as in
// model::WorkSize). kNone returns `whole`.
// REQUIRES: 0 <= begin < end <= WorkSize along axis.
OpConfig SubtaskConfig(const OpConfig& whole, model::SplitAxis axis, int64_t begin, int64_t end);
OpConfig SubtaskConfig(const model::Graph& graph, model::OpId id, model::SplitAxis axis,
                       int64_t begin, int64_t end);

// Recomputes `flops` and `bytes` from the shapes; used after editing a config by hand. Data
// movement (transpose, reshape, slice, pad, flatten, concat) counts no flops; a MatMul reads
// both operands; a layer norm reads its scale and bias; a standalone activation costs
// ActivationFlopsPerElement per element.
void ComputeCost(OpConfig& config);

// Flops per element charged for an activation: 1 for a compare or sign flip, a few for the
// piecewise-linear hard sigmoid/swish, a square root or a reciprocal, and the ~10-20 of the
// polynomial evaluations vectorised exp, log, erf and tanh take (sigmoid, SiLU and GELU
// build on them). Relative costs, so a GELU is not predicted as cheap as a ReLU.
double ActivationFlopsPerElement(model::ActivationKind kind);

}  // namespace psched::predictor
