// daemon::PlanFeedback: measured times of the plans pschedd serves, and what it does when
// they do not hold up (docs/feedback.md).
//
// Every successful run of a plan is recorded (Record: a short lock and a copy of the run's
// subtask durations into a preallocated ring, no SQL, no JSON), in a window of the last
// `window` runs per plan. Once a window is full its median measured makespan is compared
// with the prediction. When it is more than `tolerance` off either way, a background worker
// asks the Replanner for a candidate: the engine corrects the latency model by the window's
// per-subtask medians and plans again with it. The candidate is then served (Serve) for a
// window of its own, and the faster of the two by median measured makespan stays served;
// a candidate within `tie` of the old plan counts as not slower (its prediction is the
// honest one). A slot (the plan key requests ask for) is corrected at most
// `max_corrections` times until Forget/Reset.
//
// Thread-safety: every method is thread-safe. Record may be called from any request thread
// and never waits on the worker. Ownership: the callbacks must stay valid until Stop (or
// the destructor) returns; Stop waits for a running Replanner call, which is told to stop
// through its cancelled probe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "daemon/engine/backend.h"
#include "daemon/engine/ready_plan.h"
#include "sync/mutex.h"

namespace psched::daemon {

struct FeedbackOptions {
  // Runs per measurement window; 0 turns feedback off (runs are still measured).
  int window = 16;
  // A plan is corrected when median measured / predicted is outside [1/tolerance, tolerance].
  double tolerance = 1.15;
  // A candidate whose median is at most `tie` times the old plan's is served.
  double tie = 1.05;
  int max_corrections = 3;
};

// What was measured of one plan.
struct PlanMeasurement {
  int64_t runs = 0;                       // recorded successful runs, all time
  int64_t window_runs = 0;                // runs in the current window (<= window)
  double median_makespan_us = 0;          // over the window
  double predicted_makespan_us = 0;       // the plan's
  std::vector<MeasuredSubtask> subtasks;  // median per subtask over the window
};

class PlanFeedback {
 public:
  // A plan to try in place of `served`, planned with the latency model corrected by
  // `measured` (refining `correction`, the one `served` was planned with, null for none).
  struct Candidate {
    std::shared_ptr<const ReadyPlan> plan;  // plan->slot == served.slot
    std::shared_ptr<const LatencyCorrection> correction;
  };
  using Replanner = std::function<absl::StatusOr<Candidate>(
      const ReadyPlan& served, const LatencyCorrection* correction,
      const std::vector<MeasuredSubtask>& measured, const CancelledFn& cancelled)>;
  // Serves `plan` for requests of its slot from now on. Called with the feedback's lock held:
  // it must not call back into PlanFeedback.
  using Server = std::function<void(const std::shared_ptr<const ReadyPlan>& plan)>;

  PlanFeedback(FeedbackOptions options, Replanner replanner, Server server);
  ~PlanFeedback();
  PlanFeedback(const PlanFeedback&) = delete;
  PlanFeedback& operator=(const PlanFeedback&) = delete;

  // A successful run of `plan`: its measured makespan and subtask times. Subtasks are
  // matched to the plan's by their position and predicted times; a run whose trace does not
  // match the plan's first recorded run (missing or extra subtasks) adds its makespan only.
  void Record(const std::shared_ptr<const ReadyPlan>& plan, const RunOutput& run);
  // A failed run of `plan`: a candidate on trial that fails is dropped at once and the plan
  // it was to replace is served again.
  void RecordFailure(const std::shared_ptr<const ReadyPlan>& plan);

  // What was measured of `plan`; nullopt when it has not run.
  std::optional<PlanMeasurement> Measured(const ReadyPlan& plan) const;
  // Only its median measured makespan over the window (a short lock, no per-subtask work).
  std::optional<double> MedianMakespanUs(const ReadyPlan& plan) const;

  // Drops what is known of `model_id`'s plans ("" = every model): removed, purged or
  // planned with a latency model no longer in use. A replan running for them is discarded.
  void Forget(const std::string& model_id);
  // Stops the worker (a running Replanner is told to stop and waited for); Record keeps
  // measuring but starts no replan. Idempotent.
  void Stop();

  const FeedbackOptions& options() const { return options_; }

 private:
  struct Window;
  struct Slot;
  enum class Phase { kMeasuring, kReplanning, kTrial };

  static PlanMeasurement Measure(const ReadyPlan& plan, const Window& w);
  // Takes the subtask layout of `w` from its plan's first recorded run.
  static void Lay(Window& w, const std::vector<SubtaskTimingInfo>& trace);
  Window& WindowOf(const std::shared_ptr<const ReadyPlan>& plan) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Acts on a full window of `plan`.
  void Evaluate(const std::shared_ptr<const ReadyPlan>& plan, const Window& window)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Ends the trial of `slot`: `winner` is served and measured on.
  void Conclude(Slot& slot, const std::shared_ptr<const ReadyPlan>& winner,
                const std::shared_ptr<const LatencyCorrection>& correction)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void WorkerLoop();

  const FeedbackOptions options_;
  const Replanner replanner_;
  const Server server_;

  mutable sync::Mutex mu_;
  // By plan (pointer identity: the engine shares one ReadyPlan per plan).
  std::map<const ReadyPlan*, std::unique_ptr<Window>> windows_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, Slot> slots_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> pending_ ABSL_GUARDED_BY(mu_);  // slots to replan
  // Bumped by Forget: a replan started before it is discarded.
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
  // Past this many measured plans it starts over (measurements are statistics).
  static constexpr size_t kMaxWindows = 512;
};

}  // namespace psched::daemon
