#include "executor/common/futex.h"

#include <atomic>
#include <chrono>
#include <thread>

#include "gtest/gtest.h"

namespace psched::executor {
namespace {

// A timed wait nobody wakes returns once its timeout has passed (the caller loops past
// spurious returns on its own condition, as the runtime does); one whose word already differs
// returns at once.
TEST(FutexTest, ATimedWaitReturnsAfterItsTimeoutOrAtOnceOnAChangedWord) {
  int32_t word = 0;
  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::milliseconds(2);
  while (std::chrono::steady_clock::now() < deadline) {
    FutexWaitFor(&word, 0,
                 std::chrono::nanoseconds(deadline - std::chrono::steady_clock::now()).count());
  }
  EXPECT_EQ(word, 0);
  FutexWaitFor(&word, 1, int64_t{3600} * 1000000000);  // the word is not 1: no wait
}

// A thread in a timed wait of an hour is woken by the writer and sees its value.
TEST(FutexTest, ATimedWaitIsWokenByTheWriter) {
  int32_t word = 0;
  std::atomic<bool> done = false;
  std::thread waiter([&] {
    while (std::atomic_ref<int32_t>(word).load() == 0) {
      FutexWaitFor(&word, 0, int64_t{3600} * 1000000000);
    }
    done.store(true);
  });
  std::atomic_ref<int32_t>(word).store(1);
  FutexWakeAll(&word);
  waiter.join();
  EXPECT_TRUE(done.load());
}

}  // namespace
}  // namespace psched::executor
