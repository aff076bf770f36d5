#include "daemon/engine/plan_book.h"

#include <sched.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

// Erases a model's entries ("" = every entry) from a sorted container keyed
// "<model id>|...": they are exactly the keys in ["<id>|", "<id>}"), '}' being the character
// after '|'.
template <typename Sorted>
void EraseModelEntries(Sorted& entries, const std::string& model_id) {
  if (model_id.empty()) {
    entries.clear();
    return;
  }
  entries.erase(entries.lower_bound(model_id + "|"), entries.lower_bound(model_id + "}"));
}

std::string CheckedEntry(const cache::PlanKey& key, const std::string& schedule_json) {
  return absl::StrCat(key.model_id, "|", key.platform_fingerprint, "|", key.predictor_version, "|",
                      key.scheduler_config, "|", std::hash<std::string>{}(schedule_json));
}

}  // namespace

// One planning run shared by every request for the same plan key.
struct PlanBook::Flight {
  sync::Mutex mu;
  bool done ABSL_GUARDED_BY(mu) = false;
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> result ABSL_GUARDED_BY(mu) =
      absl::UnknownError("not planned");
  int waiters ABSL_GUARDED_BY(mu) = 1;  // the caller that started it
  // An admin asked for it: its requests wait for it however long it plans.
  bool uncapped ABSL_GUARDED_BY(mu) = false;
  // When its requests stop waiting unless uncapped: planning's start plus max_planning_s
  // (waiting for a planning slot not counted).
  absl::Time cap ABSL_GUARDED_BY(mu) = absl::InfiniteFuture();
  int64_t progress_seq ABSL_GUARDED_BY(mu) = 0;
  PlanProgressEvent progress ABSL_GUARDED_BY(mu);
};

PlanBook::PlanBook(const PlatformInfo& platform, int max_concurrent_plans, int max_planning_s)
    : max_concurrent_plans_(max_concurrent_plans),
      max_planning_s_(max_planning_s),
      planning_cores_(FreeCores(platform)) {}

PlanBook::~PlanBook() { WaitForPlanners(); }

void PlanBook::WaitForPlanners() {
  sync::MutexLock lock(&flights_mu_);
  flights_mu_.Await(sync::Condition(
      +[](int* planners) { return *planners == 0; }, &planners_));
}

std::shared_ptr<const ReadyPlan> PlanBook::Find(const cache::PlanKey& key) const {
  sync::MutexLock lock(&plans_mu_);
  auto it = ready_plans_.find(key.Joined());
  return it != ready_plans_.end() ? it->second : nullptr;
}

std::shared_ptr<const ReadyPlan> PlanBook::Keep(ReadyPlan plan) {
  plan.slot = plan.key.Joined();
  std::shared_ptr<const ReadyPlan> ready = MakeReady(std::move(plan));
  sync::MutexLock lock(&plans_mu_);
  if (ready_plans_.size() >= kMaxReadyPlans) ready_plans_.clear();
  ready_plans_[ready->slot] = ready;
  return ready;
}

void PlanBook::Replace(std::shared_ptr<const ReadyPlan> plan) {
  sync::MutexLock lock(&plans_mu_);
  ready_plans_[plan->slot] = std::move(plan);
}

void PlanBook::Drop(const cache::PlanKey& key) {
  sync::MutexLock lock(&plans_mu_);
  ready_plans_.erase(key.Joined());
}

void PlanBook::Forget(const std::string& model_id) {
  sync::MutexLock lock(&plans_mu_);
  EraseModelEntries(ready_plans_, model_id);
}

bool PlanBook::Checked(const cache::PlanKey& key, const std::string& schedule_json) const {
  const std::string entry = CheckedEntry(key, schedule_json);
  sync::MutexLock lock(&checked_mu_);
  return checked_plans_.contains(entry);
}

void PlanBook::MarkChecked(const cache::PlanKey& key, const std::string& schedule_json) {
  std::string entry = CheckedEntry(key, schedule_json);
  sync::MutexLock lock(&checked_mu_);
  if (checked_plans_.size() >= kMaxCheckedPlans) checked_plans_.clear();
  checked_plans_.insert(std::move(entry));
}

void PlanBook::ForgetChecked(const std::string& model_id) {
  sync::MutexLock lock(&checked_mu_);
  EraseModelEntries(checked_plans_, model_id);
}

absl::StatusOr<std::shared_ptr<const ReadyPlan>> PlanBook::PlanOnce(const cache::PlanKey& key,
                                                                    const CallContext& context,
                                                                    const ProgressFn& progress,
                                                                    Planner planner) {
  const std::string flight_key = key.Joined();
  std::shared_ptr<Flight> flight;
  {
    sync::MutexLock lock(&flights_mu_);
    auto it = flights_.find(flight_key);
    if (it != flights_.end()) {
      flight = it->second;
      sync::MutexLock flight_lock(&flight->mu);
      ++flight->waiters;
      if (context.uncapped_planning) {
        flight->uncapped = true;
        flight->cap = absl::InfiniteFuture();
      }
    } else {
      flight = std::make_shared<Flight>();
      {
        sync::MutexLock flight_lock(&flight->mu);
        flight->uncapped = context.uncapped_planning;
      }
      flights_[flight_key] = flight;
      // The planner runs on its own thread so a caller that gives up does not abandon the
      // others; it stops early only when every caller has gone.
      std::thread([this, flight, flight_key, planner = std::move(planner)] {
        Fly(flight, flight_key, planner);
      }).detach();
      ++planners_;
    }
  }

  int64_t seen_seq = 0;
  while (true) {
    absl::Time wake = std::min(context.deadline, absl::Now() + kPollInterval);
    PlanProgressEvent event;
    bool new_event = false;
    {
      sync::MutexLock lock(&flight->mu);
      flight->mu.AwaitWithDeadline(sync::Condition(&flight->done), std::min(wake, flight->cap));
      if (flight->done) {
        --flight->waiters;
        return flight->result;
      }
      if (absl::Now() >= flight->cap) {
        --flight->waiters;
        return absl::ResourceExhaustedError(absl::StrCat(
            "planning ", key.scheduler_config, " for model ", key.model_id,
            " took longer than max_planning_s = ", max_planning_s_,
            " s; ask for a cheaper scheduler (heft) or a timeout_ms option, or have an admin "
            "plan it once (the plan is cached for everyone)"));
      }
      if (flight->progress_seq != seen_seq) {
        seen_seq = flight->progress_seq;
        event = flight->progress;
        new_event = true;
      }
    }
    if (new_event && progress) progress(event);
    bool expired = absl::Now() >= context.deadline;
    if (expired || context.cancelled()) {
      sync::MutexLock lock(&flight->mu);
      --flight->waiters;
      return expired ? absl::DeadlineExceededError("deadline passed while planning")
                     : absl::CancelledError("plan request cancelled");
    }
  }
}

void PlanBook::Fly(const std::shared_ptr<Flight>& flight, const std::string& flight_key,
                   const Planner& planner) {
  auto on_progress = [&flight](const PlanProgressEvent& event) {
    sync::MutexLock guard(&flight->mu);
    flight->progress = event;
    ++flight->progress_seq;
  };
  auto abandoned = [&flight] {
    sync::MutexLock guard(&flight->mu);
    return flight->waiters == 0;
  };
  BecomeBackgroundPlanner();
  on_progress({"queued", 0});
  const bool slot = TakePlanningSlot(abandoned);
  if (slot) {
    sync::MutexLock guard(&flight->mu);
    if (!flight->uncapped) flight->cap = absl::Now() + absl::Seconds(max_planning_s_);
  }
  on_progress({"planning", 0});
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<PlanOutput> plan =
      slot ? planner.plan(on_progress, abandoned)
           : absl::CancelledError("planning abandoned by every requester while queued");
  if (slot) ReturnPlanningSlot();
  const double planning_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> result =
      planner.finish(std::move(plan), planning_ms);
  {
    sync::MutexLock guard(&flight->mu);
    flight->result = std::move(result);
    flight->done = true;
  }
  // Last touch of `this`: WaitForPlanners waits for planners_ to reach zero.
  sync::MutexLock guard(&flights_mu_);
  flights_.erase(flight_key);
  --planners_;
}

PlanBook::PlanningLoad PlanBook::Load() const {
  sync::MutexLock lock(&flights_mu_);
  return {planning_, planning_waiting_};
}

bool PlanBook::TakePlanningSlot(const CancelledFn& abandoned) {
  sync::MutexLock lock(&flights_mu_);
  ++planning_waiting_;
  while (!PlanningSlotFree()) {
    // Polled: a requester leaving does not signal this lock.
    if (flights_mu_.AwaitWithTimeout(sync::Condition(this, &PlanBook::PlanningSlotFree),
                                     kPollInterval)) {
      break;
    }
    flights_mu_.Unlock();
    const bool gone = abandoned();
    flights_mu_.Lock();
    if (gone) {
      --planning_waiting_;
      return false;
    }
  }
  --planning_waiting_;
  ++planning_;
  return true;
}

void PlanBook::ReturnPlanningSlot() {
  sync::MutexLock lock(&flights_mu_);
  --planning_;
}

bool PlanBook::PlanningSlotFree() const {
  return max_concurrent_plans_ <= 0 || planning_ < max_concurrent_plans_;
}

std::vector<int> PlanBook::FreeCores(const PlatformInfo& platform) {
  cpu_set_t allowed;
  CPU_ZERO(&allowed);
  if (sched_getaffinity(0, sizeof(allowed), &allowed) != 0) return {};
  for (const PlatformDeviceInfo& device : platform.devices) {
    for (int core : device.cores) {
      if (core >= 0 && core < CPU_SETSIZE) CPU_CLR(core, &allowed);
    }
  }
  std::vector<int> cores;
  for (int core = 0; core < CPU_SETSIZE; ++core) {
    if (CPU_ISSET(core, &allowed)) cores.push_back(core);
  }
  return cores;
}

void PlanBook::BecomeBackgroundPlanner() const {
  // SCHED_IDLE: the thread runs only on a core nothing else wants, so planning never delays
  // an inference, a call poller or a client; a busy board plans later, within max_planning_s.
  const sched_param param{};
  if (sched_setscheduler(0, SCHED_IDLE, &param) != 0) {
    spdlog::debug("planner not at idle priority: errno {}", errno);
  }
  if (planning_cores_.empty()) return;
  cpu_set_t cores;
  CPU_ZERO(&cores);
  for (int core : planning_cores_) CPU_SET(core, &cores);
  if (sched_setaffinity(0, sizeof(cores), &cores) != 0) {
    spdlog::debug("planner not moved to the devices' free cores: errno {}", errno);
  }
}

}  // namespace psched::daemon
