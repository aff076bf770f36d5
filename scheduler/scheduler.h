// The top-level planning interface: a Scheduler turns a Problem into a complete, valid
// Schedule (partition plans included). Every named method of docs/scheduling.md is one Scheduler,
// built by MakeScheduler (registry/registry.h).
//
// Schedulers are immutable after construction; Plan is const and thread-safe unless an
// implementation documents otherwise. Randomised methods draw only from options.seed.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::scheduler {

struct SchedulerOptions {
  uint64_t seed = 0;
  // Wall-clock budget for searches (per stage where a method stages); infinite: none.
  absl::Duration timeout = absl::InfiniteDuration();
  // Method-specific settings ("rho" -> "0.8", ...), documented by each method.
  std::map<std::string, std::string> params;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  // The registry name this scheduler was built from ("heft", "single:gpu", ...).
  virtual std::string name() const = 0;
  virtual absl::StatusOr<Schedule> Plan(const Problem& problem,
                                        const SchedulerOptions& options) const = 0;
};

// A schedule-only method: `list` applied with every op unpartitioned.
class ScheduleOnlyScheduler final : public Scheduler {
 public:
  explicit ScheduleOnlyScheduler(std::unique_ptr<ListScheduler> list) : list_(std::move(list)) {}
  std::string name() const override { return list_->name(); }
  absl::StatusOr<Schedule> Plan(const Problem& problem,
                                const SchedulerOptions& options) const override {
    return list_->Schedule(problem);
  }

 private:
  std::unique_ptr<ListScheduler> list_;
};

}  // namespace psched::scheduler
