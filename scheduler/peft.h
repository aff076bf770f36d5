// PEFT (Arabnejad, Barbosa 2014): an optimistic cost table OCT(t, d), the longest
// remaining path when t runs on d and every later task picks its best device, ranks
// tasks by mean OCT (ready list) and places each where EFT + OCT is smallest.
// Stateless; thread-safe with one workspace per thread. See docs/scheduling.md.
#pragma once

#include <string>

#include "scheduler/list_scheduler.h"

namespace psched::scheduler {

class PeftScheduler final : public ListScheduler {
 public:
  std::string name() const override { return "peft"; }

 protected:
  absl::Status PlaceAll(const Problem& problem, Workspace& workspace) const override;
};

}  // namespace psched::scheduler
