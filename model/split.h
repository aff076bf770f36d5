// How one operator's work can be divided into subtasks (paper sec. 2.2 / 4.1).
//
// A split axis a gives the operator an integer workload U_{i,a} (WorkSize); a subtask owns
// the half-open range [begin, end) of that axis. Shared by the predictor (a subtask is
// predicted as its own smaller op), the scheduler (partition plans) and the executor
// (kernels bound to a slice of the output, or a partial sum over input channels).
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

}  // namespace psched::model
