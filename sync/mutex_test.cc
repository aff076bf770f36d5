#include "sync/mutex.h"

#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace psched::sync {
namespace {

// The data below is plain (not atomic): in a TSan build, any ordering the annotations failed
// to tell TSan about is a report, and `make test-tsan` fails on the first one.

TEST(MutexTest, MutexLockExcludes) {
  Mutex mu;
  int64_t count = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 10000; ++i) {
        MutexLock lock(&mu);
        ++count;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  MutexLock lock(&mu);
  EXPECT_EQ(count, 40000);
}

// Await's condition is evaluated by the waiter and by every thread releasing the mutex;
// its reads of `count` are made under the lock either way.
TEST(MutexTest, AwaitSeesWritesMadeUnderTheLock) {
  Mutex mu;
  int count = 0;
  std::vector<int> seen;
  std::thread waiter([&] {
    MutexLock lock(&mu);
    mu.Await(Condition(
        +[](int* c) { return *c >= 100; }, &count));
    seen.push_back(count);
  });
  std::vector<std::thread> writers;
  for (int t = 0; t < 2; ++t) {
    writers.emplace_back([&] {
      for (int i = 0; i < 50; ++i) {
        MutexLock lock(&mu);
        ++count;
      }
    });
  }
  for (std::thread& t : writers) t.join();
  waiter.join();
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0], 100);
}

TEST(MutexTest, AwaitWithTimeoutReturnsWhetherTheConditionHolds) {
  Mutex mu;
  bool flag = false;
  MutexLock lock(&mu);
  EXPECT_FALSE(mu.AwaitWithTimeout(Condition(&flag), absl::Milliseconds(10)));
  flag = true;
  EXPECT_TRUE(mu.AwaitWithTimeout(Condition(&flag), absl::Milliseconds(10)));
}

TEST(MutexTest, AwaitWithDeadlineWakesWhenAnotherThreadSetsTheCondition) {
  Mutex mu;
  bool done = false;
  std::string message;
  std::thread setter([&] {
    MutexLock lock(&mu);
    message = "from the setter";
    done = true;
  });
  {
    MutexLock lock(&mu);
    EXPECT_TRUE(mu.AwaitWithDeadline(Condition(&done), absl::InfiniteFuture()));
    EXPECT_EQ(message, "from the setter");
  }
  setter.join();
}

// Two locks taken in the one documented order, with waits in between: no lock-order report.
TEST(MutexTest, NestedLocksAndWaitsKeepTheirOrder) {
  Mutex outer, inner;
  bool ready = false;
  std::thread t([&] {
    MutexLock a(&outer);
    MutexLock b(&inner);
    ready = true;
  });
  {
    MutexLock a(&outer);
    MutexLock b(&inner);
  }
  {
    MutexLock b(&inner);
    inner.Await(Condition(&ready));
  }
  t.join();
}

TEST(CondVarTest, WaitHandsDataOver) {
  Mutex mu;
  CondVar cv;
  std::vector<int> queue;
  int taken = 0;
  std::thread consumer([&] {
    MutexLock lock(&mu);
    while (taken < 1000) {
      while (queue.empty()) cv.Wait(&mu);
      taken += static_cast<int>(queue.size());
      queue.clear();
      cv.SignalAll();
    }
  });
  for (int i = 0; i < 1000; ++i) {
    MutexLock lock(&mu);
    queue.push_back(i);
    cv.Signal();
  }
  consumer.join();
  EXPECT_EQ(taken, 1000);
}

}  // namespace
}  // namespace psched::sync
