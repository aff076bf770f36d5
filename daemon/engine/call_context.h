// daemon::CallContext: who is asking, as the engine sees a request: its deadline, whether its
// caller went away, and whether an admin asks. The gRPC services fill it from the call; the
// engine and its parts (PlanBook, InferenceQueue) never see gRPC.
//
// Thread-safety: a value; `cancelled` is called from the request's own thread only.
#pragma once

#include "absl/time/time.h"
#include "daemon/engine/backend.h"

namespace psched::daemon {

struct CallContext {
  absl::Time deadline = absl::InfiniteFuture();
  CancelledFn cancelled = [] { return false; };
  // An admin's request: planning for it is not capped by max_planning_s.
  bool uncapped_planning = false;
};

// How often a blocked request looks at its cancellation probe and deadline.
inline constexpr absl::Duration kPollInterval = absl::Milliseconds(20);

}  // namespace psched::daemon
