// HEFT (Topcuoglu, Hariri, Wu 2002): tasks in decreasing upward rank, each on the device
// with the earliest finish time under insertion-based placement (paper sec. 4.2).
// Stateless; thread-safe with one workspace per thread.
#pragma once

#include <string>

#include "scheduler/list_scheduler.h"

namespace psched::scheduler {

class HeftScheduler final : public ListScheduler {
 public:
  std::string name() const override { return "heft"; }

 protected:
  absl::Status PlaceAll(const Problem& problem, Workspace& workspace) const override;
};

// HEFT's placement of every task of a prepared workspace; also the pre-schedule of PSLS.
absl::Status PlaceHeft(const Problem& problem, ListWorkspace& workspace);

// Fills workspace.order with the tasks sorted by decreasing `rank`, ties by task index
// (a topological order whenever ranks do not grow along edges). Allocation-free once warm.
void OrderByDecreasingRank(const std::vector<double>& rank, std::vector<int>& order);

}  // namespace psched::scheduler
