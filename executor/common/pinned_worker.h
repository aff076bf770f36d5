// PinnedWorker: one thread pinned to a set of CPU cores that runs submitted jobs in order.
//
// Each CPU logical device gets one: its kernels are created and run on that thread, so the
// XNNPACK threadpool it creates inherits the pinning. Call blocks until the job has run on
// the worker; Post queues a job without waiting (jobs run in submission order; Drain waits
// for all of them).
//
// Waiting for work: after a job the worker spins up to kIdleSpin watching for the next one
// (back-to-back runs then cost no wake-up: a request stream's gap is ~100 us here), then runs
// the optional idle hook (a CPU device parks its threadpool there) and sleeps on a condition
// variable. The sleep is untimed on purpose: a timed wait of a millisecond measured 20-36 us
// per wake-up on this VM against 3.5 us untimed.
//
// Thread-safe: any thread may submit. The destructor finishes queued jobs and joins.
#pragma once

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/mutex.h"

namespace psched::executor {

class PinnedWorker {
 public:
  // Starts the thread and pins it to `cores` (CPU ids; empty: no pinning). Fails if a core
  // id is negative or not usable by this process.
  // How long the worker watches for a next job before it runs the idle hook and sleeps.
  static constexpr absl::Duration kIdleSpin = absl::Microseconds(250);

  // `when_idle`, if set, runs on the worker each time it is about to sleep for lack of work.
  static absl::StatusOr<std::unique_ptr<PinnedWorker>> Start(
      std::vector<int> cores, std::function<void()> when_idle = nullptr);
  ~PinnedWorker();
  PinnedWorker(const PinnedWorker&) = delete;
  PinnedWorker& operator=(const PinnedWorker&) = delete;

  // Runs `job` on the worker and returns its status.
  absl::Status Call(const std::function<absl::Status()>& job);
  void Post(std::function<void()> job);
  void Drain();

  const std::vector<int>& cores() const { return cores_; }

 private:
  PinnedWorker(std::vector<int> cores, std::function<void()> when_idle)
      : cores_(std::move(cores)), when_idle_(std::move(when_idle)) {}
  void Loop();
  // Spins up to kIdleSpin; true as soon as a job the worker has not taken was posted.
  bool SpinForWork() const;

  const std::vector<int> cores_;
  const std::function<void()> when_idle_;
  sync::Mutex mu_;
  sync::CondVar work_;  // a job was queued, or stopping_ set
  sync::CondVar done_;  // finished_ grew
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  int64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> posted_{0};  // submitted_, readable without mu_ (SpinForWork)
  int64_t taken_ = 0;               // jobs the worker took; worker thread only
  int64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace psched::executor
