#include "daemon/engine/inference_queue.h"

#include "absl/strings/str_cat.h"

namespace psched::daemon {

absl::Status InferenceQueue::Job::outcome() const {
  sync::MutexLock lock(&mu_);
  return outcome_;
}

absl::Duration InferenceQueue::Job::queued_for() const {
  sync::MutexLock lock(&mu_);
  return started_ == absl::Time() ? absl::ZeroDuration() : started_ - submitted_;
}

InferenceQueue::InferenceQueue(int capacity)
    : capacity_(capacity), worker_([this] { WorkerLoop(); }) {}

InferenceQueue::~InferenceQueue() { Drain(); }

absl::StatusOr<std::shared_ptr<InferenceQueue::Job>> InferenceQueue::Submit(Work work,
                                                                            absl::Time deadline,
                                                                            WhenIdle when_idle) {
  auto job = std::make_shared<Job>();
  job->work_ = std::move(work);
  job->deadline_ = deadline;
  job->submitted_ = absl::Now();
  {
    sync::MutexLock lock(&mu_);
    if (shutting_down_) return absl::UnavailableError("pschedd is shutting down");
    int64_t depth = static_cast<int64_t>(pending_.size()) + (running_job_ ? 1 : 0);
    if (depth >= capacity_) {
      return absl::ResourceExhaustedError(absl::StrCat("inference queue is full (", depth, " of ",
                                                       capacity_, " requests waiting or running)"));
    }
    if (when_idle != WhenIdle::kRunOnCaller || !IsIdle()) {
      pending_.push_back(job);
      return job;
    }
    running_job_ = true;
  }
  RunJob(job);
  return job;
}

void InferenceQueue::Shutdown() {
  sync::MutexLock lock(&mu_);
  shutting_down_ = true;
}

void InferenceQueue::Drain() {
  Shutdown();
  if (worker_.joinable()) worker_.join();
  // A job a caller runs may still be running.
  sync::MutexLock lock(&mu_);
  mu_.Await(sync::Condition(this, &InferenceQueue::IsIdle));
}

InferenceQueue::ProgressInfo InferenceQueue::Progress() const {
  sync::MutexLock lock(&mu_);
  ProgressInfo info;
  info.completed = completed_;
  info.depth = static_cast<int64_t>(pending_.size()) + (running_job_ ? 1 : 0);
  if (running_since_.has_value()) info.running_for = absl::Now() - *running_since_;
  return info;
}

void InferenceQueue::WorkerLoop() {
  while (true) {
    std::shared_ptr<Job> job;
    {
      sync::MutexLock lock(&mu_);
      mu_.Await(sync::Condition(this, &InferenceQueue::WorkOrShutdown));
      if (pending_.empty()) return;  // shutting down and drained
      job = std::move(pending_.front());
      pending_.pop_front();
      running_job_ = true;
    }
    RunJob(job);
  }
}

void InferenceQueue::RunJob(const std::shared_ptr<Job>& job) {
  absl::Status outcome;
  absl::Time now = absl::Now();
  if (job->cancelled_.load()) {
    outcome = absl::CancelledError("request cancelled while queued");
  } else if (now >= job->deadline_) {
    outcome = absl::DeadlineExceededError("deadline passed while the inference was queued");
  } else {
    {
      sync::MutexLock lock(&job->mu_);
      job->started_ = now;
    }
    {
      sync::MutexLock lock(&mu_);
      running_since_ = now;
    }
    job->work_();
  }
  {
    sync::MutexLock lock(&job->mu_);
    job->outcome_ = outcome;
  }
  {
    // Count the job before waking its waiter, so a caller that saw it finish also sees
    // it in Progress().
    sync::MutexLock lock(&mu_);
    running_job_ = false;
    running_since_.reset();
    if (outcome.ok()) ++completed_;
  }
  job->done_.Notify();
}

}  // namespace psched::daemon
