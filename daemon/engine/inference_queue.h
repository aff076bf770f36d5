// InferenceQueue: the bounded FIFO in front of the devices. One worker thread runs jobs one
// at a time, in arrival order, because an inference owns every device of the platform while
// it runs.
//
// Submit() refuses with RESOURCE_EXHAUSTED when `capacity` jobs are already waiting or
// running, and with UNAVAILABLE after Shutdown(). With WhenIdle::kRunOnCaller a job that finds the
// queue idle runs at once on the submitting thread, inside Submit: the hand-off to the worker
// and back is two thread wake-ups, most of what the daemon adds to a small model's inference. A job
// whose deadline has passed or whose caller has gone away when it reaches the front is dropped
// without running (DEADLINE_EXCEEDED / CANCELLED). Shutdown() refuses new jobs but lets queued ones
// finish: that is how SIGTERM completes in-flight requests. Progress() feeds the systemd watchdog:
// a job running longer than the stuck threshold means the executor is not making progress.
//
// Thread-safety: all methods are thread-safe.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/mutex.h"
#include "sync/notification.h"

namespace psched::daemon {

class InferenceQueue {
 public:
  // The work of one job; runs on the worker thread.
  using Work = std::function<void()>;

  // A submitted job. The caller keeps it to wait for the result or to give up.
  class Job {
   public:
    // Blocks until the job ran or was dropped (true) or until `deadline` (false).
    bool WaitUntil(absl::Time deadline) { return done_.WaitForNotificationWithDeadline(deadline); }
    // REQUIRES: WaitUntil returned true. OK when the work ran; otherwise why it did not.
    absl::Status outcome() const;
    // Marks the job unwanted; a job still queued is dropped (CANCELLED).
    void Cancel() { cancelled_.store(true); }
    // Time between Submit and the start of the work (zero until it started).
    absl::Duration queued_for() const;

   private:
    friend class InferenceQueue;
    Work work_;
    absl::Time deadline_;
    absl::Time submitted_;
    std::atomic<bool> cancelled_{false};
    mutable sync::Mutex mu_;
    absl::Time started_ ABSL_GUARDED_BY(mu_);
    absl::Status outcome_ ABSL_GUARDED_BY(mu_);
    sync::Notification done_;
  };

  struct ProgressInfo {
    int64_t completed = 0;                      // jobs that ran to completion
    int64_t depth = 0;                          // waiting + running
    std::optional<absl::Duration> running_for;  // set while a job runs
  };

  // Who runs a job that finds the queue idle: the worker, or the submitting thread.
  enum class WhenIdle { kQueue, kRunOnCaller };

  explicit InferenceQueue(int capacity);
  ~InferenceQueue();  // Shutdown() + waits for the worker and any job running on a caller

  absl::StatusOr<std::shared_ptr<Job>> Submit(Work work, absl::Time deadline,
                                              WhenIdle when_idle = WhenIdle::kQueue);
  // Refuses new jobs; queued ones still run. Returns at once.
  void Shutdown();
  // Waits until every accepted job ran or was dropped and the worker has exited.
  void Drain();

  ProgressInfo Progress() const;
  int capacity() const { return capacity_; }

 private:
  void WorkerLoop();
  // Runs `job` on this thread (the worker's or, idle, the caller's) and completes it.
  // REQUIRES: running_job_ was set for it.
  void RunJob(const std::shared_ptr<Job>& job);
  // The worker wakes for a queued job once no job runs (one may run on a caller), or to exit.
  bool WorkOrShutdown() const ABSL_SHARED_LOCKS_REQUIRED(mu_) {
    return (!pending_.empty() && !running_job_) || (shutting_down_ && pending_.empty());
  }
  bool IsIdle() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return pending_.empty() && !running_job_; }

  const int capacity_;
  mutable sync::Mutex mu_;
  std::deque<std::shared_ptr<Job>> pending_ ABSL_GUARDED_BY(mu_);
  bool running_job_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<absl::Time> running_since_ ABSL_GUARDED_BY(mu_);
  bool shutting_down_ ABSL_GUARDED_BY(mu_) = false;
  int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread worker_;
};

}  // namespace psched::daemon
