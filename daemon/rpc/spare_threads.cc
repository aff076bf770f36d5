#include "daemon/rpc/spare_threads.h"

#include <algorithm>
#include <utility>

namespace psched::daemon {

SpareThreads::SpareThreads(int max_threads)
    : max_threads_(static_cast<size_t>(std::max(1, max_threads))) {}

SpareThreads::~SpareThreads() {
  std::vector<std::thread> threads;
  {
    sync::MutexLock lock(&mu_);
    stopping_ = true;
    threads.swap(threads_);
  }
  // A thread exits once nothing is pending; a closure that Runs another meanwhile is on one
  // of these threads, which takes that closure itself.
  for (std::thread& thread : threads) thread.join();
}

void SpareThreads::Run(std::function<void()> work) {
  sync::MutexLock lock(&mu_);
  pending_.push_back(std::move(work));
  if (!stopping_ && pending_.size() > waiting_ && threads_.size() < max_threads_) {
    threads_.emplace_back([this] { Loop(); });
  }
}

size_t SpareThreads::threads() const {
  sync::MutexLock lock(&mu_);
  return threads_.size();
}

size_t SpareThreads::idle_threads() const {
  sync::MutexLock lock(&mu_);
  return waiting_;
}

void SpareThreads::Loop() {
  for (;;) {
    std::function<void()> work;
    {
      sync::MutexLock lock(&mu_);
      ++waiting_;
      mu_.Await(sync::Condition(
          +[](SpareThreads* self) ABSL_NO_THREAD_SAFETY_ANALYSIS {
            return !self->pending_.empty() || self->stopping_;
          },
          this));
      --waiting_;
      if (pending_.empty()) return;  // stopping, and nothing left to run
      work = std::move(pending_.front());
      pending_.pop_front();
    }
    work();
  }
}

}  // namespace psched::daemon
