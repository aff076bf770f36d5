#include "executor/cpu/cpu_threadpool.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "executor/common/pinned_worker.h"

namespace psched::executor::cpu {
namespace {

// The affinity mask of every thread that ran an item of a call with one item per thread.
struct Masks {
  std::mutex mu;
  std::vector<std::set<int>> masks;
  std::atomic<int> arrived{0};
};

// Records the calling thread's mask, then waits for the other item: each item on its own thread.
void RecordMask(Masks* masks) {
  masks->arrived.fetch_add(1);
  while (masks->arrived.load() < 2) std::this_thread::yield();
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof(set), &set), 0);
  std::set<int> cores;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cores.insert(c);
  }
  std::lock_guard<std::mutex> lock(masks->mu);
  masks->masks.push_back(cores);
}

TEST(CpuThreadpoolTest, PinsOneThreadPerCore) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores";
  auto worker = PinnedWorker::Start({0, 1});
  ASSERT_TRUE(worker.ok()) << worker.status();
  Masks masks;
  std::set<int> caller_mask;
  ASSERT_TRUE((*worker)
                  ->Call([&] {
                    auto pool = CpuThreadpool::Create(2, std::vector<int>{1, 0});
                    if (!pool.ok()) return pool.status();
                    EXPECT_EQ((*pool)->threads(), 2);
                    EXPECT_NE((*pool)->get(), nullptr);
                    ParallelFor((*pool)->get(), 2, [&masks](size_t) { RecordMask(&masks); });
                    cpu_set_t set;
                    CPU_ZERO(&set);
                    sched_getaffinity(0, sizeof(set), &set);
                    for (int c = 0; c < CPU_SETSIZE; ++c) {
                      if (CPU_ISSET(c, &set)) caller_mask.insert(c);
                    }
                    return absl::OkStatus();
                  })
                  .ok());
  // The creating thread is thread 0, on the first listed core; the pool's thread on the other.
  EXPECT_EQ(caller_mask, std::set<int>{1});
  ASSERT_EQ(masks.masks.size(), 2u);
  std::set<std::set<int>> distinct(masks.masks.begin(), masks.masks.end());
  EXPECT_EQ(distinct, (std::set<std::set<int>>{{0}, {1}}));
}

// After MoveThreadZeroTo(1) a caller pinned to core 1 is thread 0 and the pool's own thread
// runs on core 0: each item reports the core it ran on, and a barrier makes each thread take
// one.
TEST(CpuThreadpoolTest, MovingThreadZeroMovesThePoolsThreadOffItsCore) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores";
  auto worker = PinnedWorker::Start({0, 1});
  ASSERT_TRUE(worker.ok()) << worker.status();
  std::unique_ptr<CpuThreadpool> pool;
  ASSERT_TRUE((*worker)
                  ->Call([&] {
                    auto created = CpuThreadpool::Create(2, std::vector<int>{0, 1});
                    if (!created.ok()) return created.status();
                    pool = std::move(*created);
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_FALSE(pool->MoveThreadZeroTo(7)) << "not one of the pool's cores";
  EXPECT_TRUE(pool->MoveThreadZeroTo(0)) << "already thread 0's";
  EXPECT_TRUE(pool->MoveThreadZeroTo(1));
  std::thread caller([&] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(1, &one);
    ASSERT_EQ(pthread_setaffinity_np(pthread_self(), sizeof(one), &one), 0);
    std::atomic<int> arrived{0};
    std::mutex mu;
    std::vector<int> cpus;
    ParallelFor(pool->get(), 2, [&](size_t) {
      arrived.fetch_add(1);
      while (arrived.load() < 2) std::this_thread::yield();
      std::lock_guard<std::mutex> lock(mu);
      cpus.push_back(sched_getcpu());
    });
    std::sort(cpus.begin(), cpus.end());
    EXPECT_EQ(cpus, (std::vector<int>{0, 1}));
  });
  caller.join();
  // Torn down on its creating thread, like a device's.
  ASSERT_TRUE((*worker)
                  ->Call([&] {
                    pool.reset();
                    return absl::OkStatus();
                  })
                  .ok());
}

TEST(CpuThreadpoolTest, APoolThatPinsNothingCannotMoveThreadZero) {
  auto one = CpuThreadpool::Create(1, std::vector<int>{0});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_FALSE((*one)->MoveThreadZeroTo(0));
  auto unpinned = CpuThreadpool::Create(2, std::vector<int>{0});
  ASSERT_TRUE(unpinned.ok()) << unpinned.status();
  EXPECT_FALSE((*unpinned)->MoveThreadZeroTo(0));
}

TEST(CpuThreadpoolTest, OneThreadHasNoPoolAndOtherCoreListsKeepTheAffinity) {
  auto one = CpuThreadpool::Create(1, std::vector<int>{0});
  ASSERT_TRUE(one.ok()) << one.status();
  EXPECT_EQ((*one)->get(), nullptr);
  EXPECT_EQ((*one)->threads(), 1);
  auto unpinned = CpuThreadpool::Create(3, std::vector<int>{0});
  ASSERT_TRUE(unpinned.ok()) << unpinned.status();
  EXPECT_EQ((*unpinned)->threads(), 3);
}

double ProcessCpuMs() {
  timespec t{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e3 + static_cast<double>(t.tv_nsec) / 1e6;
}

TEST(CpuThreadpoolTest, AParkedPoolBurnsNoCpuAndStillWorks) {
  auto pool = CpuThreadpool::Create(2, std::vector<int>{});
  ASSERT_TRUE(pool.ok()) << pool.status();
  std::atomic<size_t> sum{0};
  ParallelFor((*pool)->get(), 100, [&sum](size_t i) { sum.fetch_add(i + 1); });
  (*pool)->Park();
  // Unparked, pthreadpool's thread would spin through most of this sleep (~15 ms per call).
  const double before = ProcessCpuMs();
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  EXPECT_LT(ProcessCpuMs() - before, 5.0);
  // The next call wakes it.
  ParallelFor((*pool)->get(), 100, [&sum](size_t i) { sum.fetch_add(i + 1); });
  EXPECT_EQ(sum.load(), 2u * 5050u);
  (*pool)->Park();
  (*pool)->Park();  // parking a parked pool is harmless
}

// Plain writes by every call, read after the return: in a TSan build, a report unless
// ParallelFor tells TSan about pthreadpool's hand-offs.
TEST(CpuThreadpoolTest, ParallelForRunsEveryIndexOnceBetweenTheCallersWrites) {
  for (int threads : {1, 3}) {
    auto pool = CpuThreadpool::Create(threads, {});
    ASSERT_TRUE(pool.ok()) << pool.status();
    std::vector<int> input(1000);
    for (size_t i = 0; i < input.size(); ++i) input[i] = static_cast<int>(i);
    std::vector<int> output(input.size(), -1);
    std::atomic<int> calls{0};
    ParallelFor((*pool)->get(), input.size(), [&](size_t i) {
      output[i] = 2 * input[i];
      calls.fetch_add(1);
    });
    EXPECT_EQ(calls.load(), 1000);
    for (size_t i = 0; i < output.size(); ++i) ASSERT_EQ(output[i], 2 * input[i]) << i;
  }
}

TEST(CpuThreadpoolTest, RejectsBadInput) {
  EXPECT_EQ(CpuThreadpool::Create(0, {}).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(CpuThreadpool::Create(2, std::vector<int>{0, -1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psched::executor::cpu
