// Lookahead HEFT (Bittencourt, Madeira, da Fonseca 2010): HEFT's upward-rank order, but a task
// goes to the device that minimises the largest earliest finish time of its children when
// they are tentatively placed right after it by HEFT's rule (the task's own finish time
// when it has none).
// Stateless; thread-safe with one workspace per thread. See docs/scheduling.md.
#pragma once

#include <string>

#include "scheduler/list_scheduler.h"

namespace psched::scheduler {

class LookaheadHeftScheduler final : public ListScheduler {
 public:
  std::string name() const override { return "lookahead-heft"; }

 protected:
  absl::Status PlaceAll(const Problem& problem, Workspace& workspace) const override;
};

}  // namespace psched::scheduler
