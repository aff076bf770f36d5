// LDCP (Daoud, Kharma 2008): one DAG copy per device (DAGP) whose unscheduled tasks
// cost what they cost on that device; at every step the upward ranks of all DAGPs are
// recomputed with the tasks placed so far fixed, the ready task with the largest rank in
// any DAGP (the longest dynamic critical path) is selected and placed at earliest finish.
// Stateless; thread-safe with one workspace per thread. See docs/scheduling.md.
#pragma once

#include <string>

#include "scheduler/list_scheduler.h"

namespace psched::scheduler {

class LdcpScheduler final : public ListScheduler {
 public:
  std::string name() const override { return "ldcp"; }

 protected:
  absl::Status PlaceAll(const Problem& problem, Workspace& workspace) const override;
};

}  // namespace psched::scheduler
