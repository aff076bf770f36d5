// daemon::PlanBook: the plans the Engine answers with, and the planning that makes them.
//
// - Ready plans: validated plans kept in memory by PlanKey::Joined(), what GetPlan and Infer
//   find first. A model's plans sort together; past kMaxReadyPlans the book starts over (the
//   store still holds every plan).
// - The checked memo: cached plans that passed Backend::CheckPlan, by plan key and a hash of
//   the plan JSON, so a plan read from the store is checked once. A memo only: past
//   kMaxCheckedPlans it starts over.
// - Flights: one planning run per plan key however many requests ask at once. Each runs on a
//   thread of its own at idle priority, on the cores no device is pinned to, once it holds one
//   of max_concurrent_plans planning slots; it stops early only when every request waiting
//   for it has gone. A request that is not uncapped stops waiting max_planning_s after its
//   flight started planning (waiting for a slot not counted).
//
// Ownership: ready plans are shared with the requests holding them. A planner thread owns its
// flight and calls the Planner it was given; whatever those functions use must outlive the
// thread, so the owner calls WaitForPlanners before destroying it (the destructor waits too).
//
// Thread-safety: all methods are thread-safe. Three mutexes, each guarding its part:
// plans_mu_ (ready plans), checked_mu_ (the memo) and flights_mu_ (flights, planners and
// slots). None is held while planning or calling a Planner, and none is taken under another
// but a flight's own mutex under flights_mu_.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "cache/store.h"
#include "daemon/engine/backend.h"
#include "daemon/engine/call_context.h"
#include "daemon/engine/ready_plan.h"
#include "sync/mutex.h"

namespace psched::daemon {

class PlanBook {
 public:
  // What a flight's planner thread runs.
  struct Planner {
    // Plans, once a slot is held; `progress` reaches every request waiting, `abandoned` says
    // when none is left.
    std::function<absl::StatusOr<PlanOutput>(const ProgressFn& progress,
                                             const CancelledFn& abandoned)>
        plan;
    // After the slot is returned: what the requests get of `plan`'s outcome, planned in
    // `planning_ms` (typically the plan stored and kept ready).
    std::function<absl::StatusOr<std::shared_ptr<const ReadyPlan>>(absl::StatusOr<PlanOutput> plan,
                                                                   double planning_ms)>
        finish;
  };

  // How many planner threads hold a planning slot and how many wait for one.
  struct PlanningLoad {
    int64_t planning = 0;
    int64_t waiting = 0;
  };

  // Ready plans kept at most.
  static constexpr size_t kMaxReadyPlans = 256;

  // `max_concurrent_plans` 0: unbounded. The planners avoid the cores `platform`'s devices
  // are pinned to.
  PlanBook(const PlatformInfo& platform, int max_concurrent_plans, int max_planning_s);
  ~PlanBook();
  PlanBook(const PlanBook&) = delete;
  PlanBook& operator=(const PlanBook&) = delete;

  // The ready plan kept under `key`, or null.
  std::shared_ptr<const ReadyPlan> Find(const cache::PlanKey& key) const;
  // Keeps `plan` ready under its key (its slot) and returns the shared handle.
  std::shared_ptr<const ReadyPlan> Keep(ReadyPlan plan);
  // Serves `plan` in its slot from now on, in place of the plan there (plan feedback).
  void Replace(std::shared_ptr<const ReadyPlan> plan);
  void Drop(const cache::PlanKey& key);
  // Drops the ready plans of `model_id` ("" = every model).
  void Forget(const std::string& model_id);

  // Whether the plan `schedule_json` stored under `key` passed its check before.
  bool Checked(const cache::PlanKey& key, const std::string& schedule_json) const;
  void MarkChecked(const cache::PlanKey& key, const std::string& schedule_json);
  // Drops the memo of `model_id`'s plans ("" = every model).
  void ForgetChecked(const std::string& model_id);

  // The outcome of the flight for `key`: joins the one in the air, or starts one running
  // `planner`. Returns early, leaving the flight to the others, when `context`'s deadline
  // passes or it is cancelled, and with RESOURCE_EXHAUSTED when the flight is capped and
  // planned longer than max_planning_s. `progress` (may be empty) runs on this thread.
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> PlanOnce(const cache::PlanKey& key,
                                                            const CallContext& context,
                                                            const ProgressFn& progress,
                                                            Planner planner);
  PlanningLoad Load() const;
  // Waits until no planner thread is running.
  void WaitForPlanners();

 private:
  struct Flight;

  // Waits for a planning slot, polling `abandoned`; false, with no slot taken, once it says
  // every requester has gone.
  bool TakePlanningSlot(const CancelledFn& abandoned) ABSL_LOCKS_EXCLUDED(flights_mu_);
  void ReturnPlanningSlot() ABSL_LOCKS_EXCLUDED(flights_mu_);
  bool PlanningSlotFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(flights_mu_);
  // The planner thread of `flight`.
  void Fly(const std::shared_ptr<Flight>& flight, const std::string& flight_key,
           const Planner& planner);
  // Puts the calling planner thread at idle priority (SCHED_IDLE) and onto planning_cores_,
  // when there are any: planning then takes no time inference wants, even during a flood.
  void BecomeBackgroundPlanner() const;
  // The cores this process may run on that no device of `platform` is pinned to.
  static std::vector<int> FreeCores(const PlatformInfo& platform);

  const int max_concurrent_plans_;
  const int max_planning_s_;
  const std::vector<int> planning_cores_;

  mutable sync::Mutex plans_mu_;
  std::map<std::string, std::shared_ptr<const ReadyPlan>> ready_plans_ ABSL_GUARDED_BY(plans_mu_);

  mutable sync::Mutex checked_mu_;
  // "<plan key>|<hash of the plan JSON>".
  std::set<std::string> checked_plans_ ABSL_GUARDED_BY(checked_mu_);
  static constexpr size_t kMaxCheckedPlans = 4096;

  mutable sync::Mutex flights_mu_;
  std::map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(flights_mu_);
  int planners_ ABSL_GUARDED_BY(flights_mu_) = 0;          // planning threads still running
  int planning_ ABSL_GUARDED_BY(flights_mu_) = 0;          // of them, holding a slot
  int planning_waiting_ ABSL_GUARDED_BY(flights_mu_) = 0;  // of them, waiting for one
};

}  // namespace psched::daemon
