#include "executor/common/pinned_worker.h"

#include <pthread.h>
#include <sched.h>

#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "executor/common/futex.h"

namespace psched::executor {

absl::StatusOr<std::unique_ptr<PinnedWorker>> PinnedWorker::Start(std::vector<int> cores,
                                                                  std::function<void()> when_idle) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores) {
    if (core < 0 || core >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("core id ", core, " is out of range"));
    }
    CPU_SET(core, &set);
  }
  std::unique_ptr<PinnedWorker> worker(new PinnedWorker(std::move(cores), std::move(when_idle)));
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
    sync::MutexLock lock(&mu_);
    stopping_ = true;
    work_.Signal();
  }
  thread_.join();
}

bool PinnedWorker::SpinForWork() const {
  const absl::Time until = absl::Now() + kIdleSpin;
  for (;;) {
    for (int i = 0; i < 16; ++i) {
      if (posted_.load(std::memory_order_acquire) > taken_) return true;
      CpuRelax();
    }
    if (absl::Now() >= until) return false;
    sched_yield();  // a runnable thread on this core (the one that will post) goes first
  }
}

void PinnedWorker::Loop() {
  bool ran_since_idle = false;
  for (;;) {
    if (ran_since_idle && !SpinForWork()) {
      if (when_idle_) when_idle_();
      ran_since_idle = false;
    }
    std::function<void()> job;
    {
      sync::MutexLock lock(&mu_);
      while (!stopping_ && jobs_.empty()) work_.Wait(&mu_);
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++taken_;
    }
    job();
    ran_since_idle = true;
    sync::MutexLock lock(&mu_);
    ++finished_;
    done_.SignalAll();
  }
}

void PinnedWorker::Post(std::function<void()> job) {
  sync::MutexLock lock(&mu_);
  jobs_.push_back(std::move(job));
  posted_.store(++submitted_, std::memory_order_release);
  work_.Signal();
}

void PinnedWorker::Drain() {
  sync::MutexLock lock(&mu_);
  const int64_t target = submitted_;
  while (finished_ < target) done_.Wait(&mu_);
}

absl::Status PinnedWorker::Call(const std::function<absl::Status()>& job) {
  absl::Status status;
  sync::MutexLock lock(&mu_);
  jobs_.push_back([&] { status = job(); });
  const int64_t ticket = ++submitted_;
  posted_.store(ticket, std::memory_order_release);
  work_.Signal();
  while (finished_ < ticket) done_.Wait(&mu_);
  return status;
}

}  // namespace psched::executor
