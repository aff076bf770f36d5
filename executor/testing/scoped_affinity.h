// ScopedAffinity: pins the calling thread to given cores for a test's scope, then gives it its
// affinity back - for tests of what a caller on a particular core does. Not thread-safe: one
// per thread.
#pragma once

#include <pthread.h>
#include <sched.h>

#include <initializer_list>

namespace psched::executor::testing {

class ScopedAffinity {
 public:
  explicit ScopedAffinity(std::initializer_list<int> cores) {
    pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_);
    cpu_set_t set;
    CPU_ZERO(&set);
    for (int c : cores) CPU_SET(c, &set);
    ok_ = pthread_setaffinity_np(pthread_self(), sizeof(set), &set) == 0;
  }
  ~ScopedAffinity() { pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_); }
  ScopedAffinity(const ScopedAffinity&) = delete;
  ScopedAffinity& operator=(const ScopedAffinity&) = delete;
  // Whether the thread could be pinned.
  bool ok() const { return ok_; }

 private:
  cpu_set_t saved_;
  bool ok_ = false;
};

}  // namespace psched::executor::testing
