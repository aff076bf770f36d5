// WorkSlice: the part of an op's work one subtask computes - [begin, end) of
// model::WorkSize(graph, op, axis) (model/split.h); kNone is the whole op. The one slice type
// of the executor: CPU kernels and OpenCL kernels are created for one, and each step of an
// ExecutionPlan runs one. Plain value type.
#pragma once

#include <cstdint>

#include "model/split.h"

namespace psched::executor {

struct WorkSlice {
  model::SplitAxis axis = model::SplitAxis::kNone;
  int64_t begin = 0;
  int64_t end = 1;

  static WorkSlice Whole() { return {}; }
};

}  // namespace psched::executor
