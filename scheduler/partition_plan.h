// The partition plan pi_i = (a_i, u_i) of one operator (paper sec. 4.1).
//
// `work` holds one workload per device slot; entries sum to U_{i,a} (model::WorkSize) and
// zero entries are inactive subtasks. A plan may list fewer than K slots: missing slots
// are zero. None() is the unpartitioned plan (none, (1)). Plain value type.
#pragma once

#include <cstdint>
#include <vector>

#include "model/split.h"

namespace psched::scheduler {

struct PartitionPlan {
  model::SplitAxis axis = model::SplitAxis::kNone;
  std::vector<int64_t> work{1};

  static PartitionPlan None() { return PartitionPlan{}; }
  int ActiveSubtasks() const {
    int n = 0;
    for (int64_t w : work) n += w > 0 ? 1 : 0;
    return n;
  }
  bool operator==(const PartitionPlan&) const = default;
};

}  // namespace psched::scheduler
