#include "executor/testing/oversubscription.h"

#include <pthread.h>
#include <sched.h>

namespace psched::executor::testing {

Oversubscription::Oversubscription(const std::vector<int>& cores, int per_core, int unpinned) {
  auto spin = [this] {
    // Real work, not a pause loop, so the hog competes for the core like another process.
    volatile double x = 1.0;
    while (!stop_.load(std::memory_order_relaxed)) x = x * 1.000001 + 1e-9;
  };
  for (int core : cores) {
    for (int i = 0; i < per_core; ++i) {
      threads_.emplace_back(spin);
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(core, &set);
      pthread_setaffinity_np(threads_.back().native_handle(), sizeof(set), &set);
    }
  }
  for (int i = 0; i < unpinned; ++i) threads_.emplace_back(spin);
}

Oversubscription::~Oversubscription() {
  stop_.store(true);
  for (std::thread& t : threads_) t.join();
}

}  // namespace psched::executor::testing
