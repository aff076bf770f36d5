// How one operator's work can be divided into subtasks (paper sec. 2.2 / 4.1).
//
// A split axis a gives the operator an integer workload U_{i,a} (WorkSize); a subtask owns
// the half-open range [begin, end) of that axis. Shared by the predictor (a subtask is
// predicted as its own smaller op), the scheduler (partition plans) and the executor
// (kernels bound to a slice of the output, or a partial sum over input channels).
//
// The axes per kind (the view is the tensor's Shape{h, w, c}; row-major: {rows, 1, last}):
//   conv2d           cout: output channels (groups when grouped); cin: input channels
//                    (ungrouped); spatial: output rows, reading the input halo.
//   fully_connected  cout: output features; cin: input features; spatial: token rows of a
//                    row-major [rows, K] input (at least two rows).
//   matmul           cout: output columns N; cin: the reduction K (partial sums, as conv
//                    cin); spatial: rows of the output's flattened batch x M, so a range of
//                    whole matrices is a split by heads.
//   softmax, layer_norm, activation: spatial, rows of a row-major output (each row is
//                    normalised on its own).
//   add, mul, sub, div: spatial, rows of a row-major output whose operands are either
//                    the output's shape (sliced with it) or broadcast to every row (a
//                    [..., 1, last] bias or a scalar).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "model/graph.h"

namespace psched::model {

enum class SplitAxis : uint8_t {
  kNone,            // the whole op; U = 1
  kOutputChannels,  // "cout": disjoint channel slices of the output (groups for grouped conv)
  kInputChannels,   // "cin": partial sums over input channels, accumulated into the output
  kRows,            // "spatial": disjoint ranges of output rows, reading the input halo
};
inline constexpr SplitAxis kAllSplitAxes[] = {SplitAxis::kNone, SplitAxis::kOutputChannels,
                                              SplitAxis::kInputChannels, SplitAxis::kRows};

// "none", "cout", "cin", "spatial" (names are part of the plan JSON contract).
std::string_view SplitAxisName(SplitAxis axis);
std::optional<SplitAxis> SplitAxisFromName(std::string_view name);

// U_{i,a}: the integer workload of `op` along `axis`, or 0 when the op cannot be split
// that way (non-partitionable kinds, cin on grouped conv). kNone always gives 1.
int64_t WorkSize(const Graph& graph, OpId op, SplitAxis axis);

// How a row split of an element-wise binary op `op` reads operand `input`: a slice of the
// same rows (kRows), the whole operand for every row (kBroadcast: one element, or one row of
// the output's last dim), or neither (kOther: the op has no row split).
enum class RowOperand : uint8_t { kRows, kBroadcast, kOther };
RowOperand ClassifyRowOperand(const Graph& graph, OpId op, TensorId input);

}  // namespace psched::model
