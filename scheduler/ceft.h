// CEFT (Khan 2012): the graph is cut into critical paths by upward rank, those into
// constrained critical paths (CCPs: the ready prefix of a path), and each CCP goes as a
// whole to the device on which its last task finishes first.
// Stateless; thread-safe with one workspace per thread. See docs/scheduling.md.
#pragma once

#include <string>

#include "scheduler/list_scheduler.h"

namespace psched::scheduler {

class CeftScheduler final : public ListScheduler {
 public:
  std::string name() const override { return "ceft"; }

 protected:
  absl::Status PlaceAll(const Problem& problem, Workspace& workspace) const override;
};

}  // namespace psched::scheduler
