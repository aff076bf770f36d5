// PinnedWorker: one thread pinned to a set of CPU cores that runs submitted jobs in order.
//
// Each CPU logical device gets one: its kernels are created and run on that thread, so the
// XNNPACK threadpool it creates inherits the pinning. Call blocks until the job has run on
// the worker; Post queues a job without waiting (jobs run in submission order; Drain waits
// for all of them). Thread-safe: any thread may submit. The destructor finishes queued jobs
// and joins.
#pragma once

#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"

namespace psched::executor {

class PinnedWorker {
 public:
  // Starts the thread and pins it to `cores` (CPU ids; empty: no pinning). Fails if a core
  // id is negative or not usable by this process.
  static absl::StatusOr<std::unique_ptr<PinnedWorker>> Start(std::vector<int> cores);
  ~PinnedWorker();
  PinnedWorker(const PinnedWorker&) = delete;
  PinnedWorker& operator=(const PinnedWorker&) = delete;

  // Runs `job` on the worker and returns its status.
  absl::Status Call(const std::function<absl::Status()>& job);
  void Post(std::function<void()> job);
  void Drain();

  const std::vector<int>& cores() const { return cores_; }

 private:
  explicit PinnedWorker(std::vector<int> cores) : cores_(std::move(cores)) {}
  void Loop();

  const std::vector<int> cores_;
  absl::Mutex mu_;
  absl::CondVar work_;  // a job was queued, or stopping_ set
  absl::CondVar done_;  // finished_ grew
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  int64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace psched::executor
