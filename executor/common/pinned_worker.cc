#include "executor/common/pinned_worker.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace psched::executor {

absl::StatusOr<std::unique_ptr<PinnedWorker>> PinnedWorker::Start(std::vector<int> cores) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores) {
    if (core < 0 || core >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("core id ", core, " is out of range"));
    }
    CPU_SET(core, &set);
  }
  std::unique_ptr<PinnedWorker> worker(new PinnedWorker(std::move(cores)));
  worker->thread_ = std::thread([w = worker.get()] { w->Loop(); });
  if (!worker->cores_.empty()) {
    const int err = pthread_setaffinity_np(worker->thread_.native_handle(), sizeof(set), &set);
    if (err != 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot pin a worker to cores {",
                                                     absl::StrJoin(worker->cores_, ","),
                                                     "}: ", std::strerror(err)));
    }
  }
  return worker;
}

PinnedWorker::~PinnedWorker() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PinnedWorker::Loop() {
  for (;;) {
    std::function<void()> job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    job();
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++finished_;
    }
    cv_.notify_all();
  }
}

void PinnedWorker::Post(std::function<void()> job) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(std::move(job));
    ++submitted_;
  }
  cv_.notify_all();
}

void PinnedWorker::Drain() {
  std::unique_lock<std::mutex> lock(mu_);
  const int64_t target = submitted_;
  cv_.wait(lock, [&] { return finished_ >= target; });
}

absl::Status PinnedWorker::Call(const std::function<absl::Status()>& job) {
  absl::Status status;
  int64_t ticket = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back([&] { status = job(); });
    ticket = ++submitted_;
  }
  cv_.notify_all();
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return finished_ >= ticket; });
  return status;
}

}  // namespace psched::executor
