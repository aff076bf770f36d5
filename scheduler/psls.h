// PSLS (pre-scheduling list scheduling, 2019): a HEFT pre-schedule fixes a device per
// task; tasks are then ranked by their remaining path length under that pre-schedule and
// each is placed where its finish time plus the pre-scheduled remaining length is smallest;
// the better of the final and the pre-schedule is kept.
// Stateless; thread-safe with one workspace per thread. See docs/scheduling.md.
#pragma once

#include <string>

#include "scheduler/list_scheduler.h"

namespace psched::scheduler {

class PslsScheduler final : public ListScheduler {
 public:
  std::string name() const override { return "psls"; }

 protected:
  absl::Status PlaceAll(const Problem& problem, Workspace& workspace) const override;
};

}  // namespace psched::scheduler
