// psched_tsan_canary MODE: in a TSan build, does on purpose what TSan must report, after
// going through every annotated operation of sync/. `race`: an unordered write pair; if an
// annotation left an ignore region open, TSan would see nothing and `make test-tsan` would
// pass however racy psched became. `lock-order`: two sync::Mutex taken in both orders; reported
// only if TSan follows their lock and unlock annotations.
#include <atomic>
#include <cstdio>
#include <cstring>
#include <thread>

#include "sync/mutex.h"
#include "sync/notification.h"

namespace {

using psched::sync::Condition;
using psched::sync::CondVar;
using psched::sync::Mutex;
using psched::sync::MutexLock;
using psched::sync::Notification;

// Every annotated path, from two threads, so conditions are evaluated by the releasing thread
// as well as by the waiter.
void UseEveryOperation() {
  Mutex mu;
  CondVar cv;
  bool step = false;
  bool done = false;
  Notification finished;
  std::thread other([&] {
    {
      MutexLock lock(&mu);
      step = true;
      cv.Signal();
      mu.Await(Condition(&done));
    }
    finished.Notify();
  });
  {
    MutexLock lock(&mu);
    while (!step) cv.Wait(&mu);
    mu.AwaitWithTimeout(Condition(&done), absl::Milliseconds(1));
    done = true;
  }
  finished.WaitForNotification();
  (void)finished.HasBeenNotified();
  other.join();
}

volatile int racy = 0;

// Both threads write while the other runs: a relaxed flag (no happens-before for TSan) starts
// them together and they write many times, so the writes overlap in time. With one write each,
// a writer thread that ran only after the main thread's write was once not reported (TSan's
// history of a memory word is a few accesses deep).
void Race() {
  std::atomic<bool> go = false;
  std::thread writer([&] {
    while (!go.load(std::memory_order_relaxed)) {
    }
    for (int i = 0; i < 1000; ++i) racy = 1;
  });
  go.store(true, std::memory_order_relaxed);
  for (int i = 0; i < 1000; ++i) racy = 2;
  writer.join();
  std::printf("racy = %d\n", racy);  // read, so the compiler keeps the writes
}

void LockOrderInversion() {
  Mutex a, b;
  {
    MutexLock la(&a);
    MutexLock lb(&b);
  }
  MutexLock lb(&b);
  MutexLock la(&a);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: psched_tsan_canary race|lock-order\n");
    return 2;
  }
  UseEveryOperation();
  if (std::strcmp(argv[1], "race") == 0) {
    Race();
  } else if (std::strcmp(argv[1], "lock-order") == 0) {
    LockOrderInversion();
  } else {
    std::fprintf(stderr, "psched_tsan_canary: unknown mode %s\n", argv[1]);
    return 2;
  }
  return 0;
}
