// Oversubscription: busy threads that compete with the code under test for the machine's
// cores, so tests can check that co-execution stays correct (and finishes) when device
// threads, driver threads, the caller and other processes outnumber the cores - the state of
// a shared or loaded machine, made deliberate and reproducible.
//
// The constructor starts `per_core` spinning threads pinned to each listed core (plus
// `unpinned` ones left to the scheduler); the destructor stops and joins them. Not copyable;
// thread-safe to destroy from the creating thread only.
#pragma once

#include <atomic>
#include <thread>
#include <vector>

namespace psched::executor::testing {

class Oversubscription {
 public:
  Oversubscription(const std::vector<int>& cores, int per_core, int unpinned = 0);
  ~Oversubscription();
  Oversubscription(const Oversubscription&) = delete;
  Oversubscription& operator=(const Oversubscription&) = delete;

  int threads() const { return static_cast<int>(threads_.size()); }

 private:
  std::atomic<bool> stop_{false};
  std::vector<std::thread> threads_;
};

}  // namespace psched::executor::testing
