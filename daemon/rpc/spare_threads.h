// SpareThreads: runs closures on threads it starts when all it has are busy, and keeps the
// idle ones for the next closure. It is where a call poller (call_pollers.h) sends a call
// that would block it: the poller goes back to its queue, and the call waits on a thread of
// its own as it would on gRPC's sync server.
//
// At most `max_threads` threads; closures beyond wait in arrival order for one to free up.
// The destructor runs every accepted closure, then joins the threads.
//
// Thread-safety: Run may be called from any thread, also from a closure.
#pragma once

#include <cstddef>
#include <deque>
#include <functional>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "sync/mutex.h"

namespace psched::daemon {

class SpareThreads {
 public:
  explicit SpareThreads(int max_threads);
  ~SpareThreads();
  SpareThreads(const SpareThreads&) = delete;
  SpareThreads& operator=(const SpareThreads&) = delete;

  void Run(std::function<void()> work);

  // Threads started so far, and those of them idle.
  size_t threads() const;
  size_t idle_threads() const;

 private:
  void Loop();

  const size_t max_threads_;
  mutable sync::Mutex mu_;
  std::deque<std::function<void()>> pending_ ABSL_GUARDED_BY(mu_);
  size_t waiting_ ABSL_GUARDED_BY(mu_) = 0;  // threads idle in Loop
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psched::daemon
