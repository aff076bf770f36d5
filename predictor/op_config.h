// The configuration of one operator or one subtask of a partitioned operator: everything a
// latency model may look at.
//
// A subtask is described as an operator of its own (paper sec. 2.2): a cout slice of a
// conv is a conv with fewer output channels (fewer groups for grouped/depthwise conv), a
// spatial slice is a conv producing fewer output rows from the input rows it reads
// (halo included), a cin slice is a conv over fewer input channels whose result is
// accumulated into the output (`accumulate`). OpConfig is a small value type.
#pragma once

#include <cstdint>
#include <vector>

#include "model/graph.h"
#include "model/split.h"

namespace psched::predictor {

struct OpConfig {
  model::OpKind kind = model::OpKind::kActivation;
  std::vector<model::Shape> inputs;  // activation inputs, in op order
  model::Shape output;
  model::Window2d window;  // conv and pooling; default (1x1) otherwise
  int32_t groups = 1;      // conv only
  model::ActivationKind activation = model::ActivationKind::kNone;
  bool accumulate = false;  // cin subtask: adds a partial sum into the shared output
  double flops = 0;         // multiply-add counted as 2
  double bytes = 0;         // activations read + written + weights read, f32

  // True for a conv with one input channel per group (and groups > 1).
  bool IsDepthwise() const;
};

// The configuration of the whole op `id` (the kNone plan).
OpConfig WholeOpConfig(const model::Graph& graph, model::OpId id);

// The configuration of the subtask [begin, end) of `whole` along `axis` (work units as in
// model::WorkSize). kNone returns `whole`.
// REQUIRES: 0 <= begin < end <= WorkSize along axis.
OpConfig SubtaskConfig(const OpConfig& whole, model::SplitAxis axis, int64_t begin, int64_t end);
OpConfig SubtaskConfig(const model::Graph& graph, model::OpId id, model::SplitAxis axis,
                       int64_t begin, int64_t end);

// Recomputes `flops` and `bytes` from the shapes; used after editing a config by hand.
void ComputeCost(OpConfig& config);

}  // namespace psched::predictor
