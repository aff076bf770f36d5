#include "executor/common/pinned_worker.h"

#include <gtest/gtest.h>
#include <pthread.h>
#include <sched.h>

#include <atomic>
#include <thread>

#include "executor/testing/scoped_affinity.h"
#include "sync/notification.h"

namespace psched::executor {
namespace {

using testing::ScopedAffinity;

// Waits (without a time limit: the test harness has one) until `done` holds.
template <typename Done>
void WaitFor(Done done) {
  while (!done()) std::this_thread::yield();
}

TEST(PinnedWorkerTest, RunsJobsInOrderAndCallReturnsTheJobsStatus) {
  absl::StatusOr<std::unique_ptr<PinnedWorker>> worker = PinnedWorker::Start({});
  ASSERT_TRUE(worker.ok()) << worker.status();
  std::vector<int> order;
  for (int i = 0; i < 100; ++i) (*worker)->Post([&order, i] { order.push_back(i); });
  absl::Status status = (*worker)->Call([&] {
    order.push_back(100);
    return absl::DataLossError("the job's own error");
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  ASSERT_EQ(order.size(), 101u);
  for (int i = 0; i <= 100; ++i) EXPECT_EQ(order[static_cast<size_t>(i)], i);
}

TEST(PinnedWorkerTest, IdleHookRunsOnTheWorkerOnceTheQueueRunsDry) {
  std::atomic<int> idles{0};
  std::atomic<std::thread::id> hook_thread;
  absl::StatusOr<std::unique_ptr<PinnedWorker>> worker = PinnedWorker::Start({}, [&] {
    hook_thread = std::this_thread::get_id();
    idles.fetch_add(1);
  });
  ASSERT_TRUE(worker.ok()) << worker.status();
  // Nothing ran yet: a worker that never worked has nothing to put to rest.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(idles.load(), 0);

  std::thread::id job_thread;
  ASSERT_TRUE((*worker)
                  ->Call([&] {
                    job_thread = std::this_thread::get_id();
                    return absl::OkStatus();
                  })
                  .ok());
  WaitFor([&] { return idles.load() >= 1; });
  EXPECT_EQ(hook_thread.load(), job_thread);
  // Once per idle period: with no new job it does not run again.
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  EXPECT_EQ(idles.load(), 1);

  for (int i = 0; i < 10; ++i) (*worker)->Post([] {});
  (*worker)->Drain();
  WaitFor([&] { return idles.load() >= 2; });
  // However the ten jobs were spaced, each idle period ran it at most once.
  EXPECT_LE(idles.load(), 11);
}

TEST(PinnedWorkerTest, DestroyingAnIdleOrSpinningWorkerJoins) {
  std::atomic<int> idles{0};
  for (int i = 0; i < 20; ++i) {
    auto worker = PinnedWorker::Start({}, [&] { idles.fetch_add(1); });
    ASSERT_TRUE(worker.ok());
    (*worker)->Post([] {});
    if (i % 2 == 0) (*worker)->Drain();
  }
  // Every worker was destroyed, some while still watching for their next job: nothing hangs,
  // and the hook ran at most once per worker.
  EXPECT_LE(idles.load(), 20);
}

cpu_set_t OwnAffinity() {
  cpu_set_t set;
  pthread_getaffinity_np(pthread_self(), sizeof(set), &set);
  return set;
}

bool TwoCoresUsable() {
  cpu_set_t set = OwnAffinity();
  return CPU_ISSET(0, &set) && CPU_ISSET(1, &set);
}

// A caller on the idle worker's core runs the job itself, pinned as the worker is, and gets
// its affinity back; the idle hook then runs on the caller, once.
TEST(PinnedWorkerTest, ACallerOnTheIdleWorkersCoreRunsTheJobItself) {
  std::atomic<int> idles{0};
  std::atomic<std::thread::id> hook_thread;
  auto worker = PinnedWorker::Start({0}, [&] {
    hook_thread = std::this_thread::get_id();
    idles.fetch_add(1);
  });
  ASSERT_TRUE(worker.ok()) << worker.status();
  ScopedAffinity on_core_0({0});
  ASSERT_TRUE(on_core_0.ok());
  const cpu_set_t before = OwnAffinity();
  EXPECT_TRUE((*worker)->CallerOnItsCores());
  std::thread::id job_thread;
  cpu_set_t during;
  EXPECT_TRUE((*worker)->TryRunHere([&] {
    job_thread = std::this_thread::get_id();
    during = OwnAffinity();
  }));
  EXPECT_EQ(job_thread, std::this_thread::get_id());
  EXPECT_EQ(CPU_COUNT(&during), 1);
  EXPECT_TRUE(CPU_ISSET(0, &during));
  const cpu_set_t after = OwnAffinity();
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  EXPECT_EQ(idles.load(), 1);
  EXPECT_EQ(hook_thread.load(), std::this_thread::get_id());
  // The worker itself still runs posted jobs afterwards.
  std::thread::id posted_thread;
  ASSERT_TRUE((*worker)
                  ->Call([&] {
                    posted_thread = std::this_thread::get_id();
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_NE(posted_thread, std::this_thread::get_id());
}

TEST(PinnedWorkerTest, ACallerOnAnotherCoreOrBesideABusyWorkerDoesNot) {
  if (!TwoCoresUsable()) GTEST_SKIP() << "needs cores 0 and 1";
  auto worker = PinnedWorker::Start({0});
  ASSERT_TRUE(worker.ok()) << worker.status();
  bool ran = false;
  {
    ScopedAffinity on_core_1({1});
    ASSERT_TRUE(on_core_1.ok());
    EXPECT_FALSE((*worker)->CallerOnItsCores());
    EXPECT_FALSE((*worker)->TryRunHere([&] { ran = true; }));
    EXPECT_FALSE(ran);
  }
  // Busy: a posted job is still running.
  sync::Notification release, started;
  (*worker)->Post([&] {
    started.Notify();
    release.WaitForNotification();
  });
  started.WaitForNotification();
  ScopedAffinity on_core_0({0});
  EXPECT_FALSE((*worker)->TryRunHere([&] { ran = true; }));
  release.Notify();
  (*worker)->Drain();
  EXPECT_FALSE(ran);
  EXPECT_TRUE((*worker)->TryRunHere([&] { ran = true; }));
  EXPECT_TRUE(ran);
}

// Narrows a worker of cores {0, 1} to core 0, as CpuThreadpool::Create does on a cluster
// device's worker.
absl::Status PinTheWorkerToCoreZero(PinnedWorker& worker) {
  return worker.Call([] {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0
               ? absl::OkStatus()
               : absl::InternalError("cannot pin the worker to core 0");
  });
}

// A worker of cores {0, 1} pinned to core 0 (as a cluster device's threadpool pins it): a
// caller on core 1 takes its place only through the take_core hook, which is asked for core
// 1; the worker's thread then moves to core 1 and the job runs pinned there.
TEST(PinnedWorkerTest, ACallerOnAnotherCoreOfTheWorkerTakesItOverThroughTheHook) {
  if (!TwoCoresUsable()) GTEST_SKIP() << "needs cores 0 and 1";
  std::vector<int> asked;
  bool allow = false;
  auto worker = PinnedWorker::Start({0, 1}, nullptr, [&](int core) {
    asked.push_back(core);
    return allow;
  });
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_TRUE(PinTheWorkerToCoreZero(**worker).ok());
  ScopedAffinity on_core_1({1});
  ASSERT_TRUE(on_core_1.ok());
  EXPECT_TRUE((*worker)->CallerOnItsCores());
  bool ran = false;
  // A hook that cannot free the core: the caller does not run the job.
  EXPECT_FALSE((*worker)->TryRunHere([&] { ran = true; }));
  EXPECT_FALSE(ran);
  EXPECT_EQ(asked, std::vector<int>{1});
  allow = true;
  cpu_set_t during;
  EXPECT_TRUE((*worker)->TryRunHere([&] {
    ran = true;
    during = OwnAffinity();
  }));
  EXPECT_TRUE(ran);
  EXPECT_EQ(asked, (std::vector<int>{1, 1}));
  EXPECT_EQ(CPU_COUNT(&during), 1);
  EXPECT_TRUE(CPU_ISSET(1, &during));
  // The worker's thread now lives on core 1: the next caller there needs no hook.
  cpu_set_t worker_set;
  ASSERT_TRUE((*worker)
                  ->Call([&] {
                    worker_set = OwnAffinity();
                    return absl::OkStatus();
                  })
                  .ok());
  EXPECT_EQ(CPU_COUNT(&worker_set), 1);
  EXPECT_TRUE(CPU_ISSET(1, &worker_set));
  EXPECT_TRUE((*worker)->TryRunHere([] {}));
  EXPECT_EQ(asked.size(), 2u);
}

// Without a take_core hook a caller on another of the worker's cores does not take it over.
TEST(PinnedWorkerTest, WithoutTheHookACallerOnAnotherCoreDoesNotTakeItOver) {
  if (!TwoCoresUsable()) GTEST_SKIP() << "needs cores 0 and 1";
  auto worker = PinnedWorker::Start({0, 1});
  ASSERT_TRUE(worker.ok()) << worker.status();
  ASSERT_TRUE(PinTheWorkerToCoreZero(**worker).ok());
  ScopedAffinity on_core_1({1});
  ASSERT_TRUE(on_core_1.ok());
  EXPECT_FALSE((*worker)->CallerOnItsCores());
  bool ran = false;
  EXPECT_FALSE((*worker)->TryRunHere([&] { ran = true; }));
  EXPECT_FALSE(ran);
}

// Jobs posted while a caller runs one in the worker's place wait for it: still one at a time,
// in order.
TEST(PinnedWorkerTest, JobsPostedDuringACallersJobRunAfterIt) {
  auto worker = PinnedWorker::Start({0});
  ASSERT_TRUE(worker.ok()) << worker.status();
  ScopedAffinity on_core_0({0});
  std::atomic<int> step{0};
  std::atomic<int> posted_saw{-1};
  sync::Notification posted;
  EXPECT_TRUE((*worker)->TryRunHere([&] {
    // Another thread posts while this job runs; the worker must not start it yet.
    std::thread poster([&] {
      (*worker)->Post([&] { posted_saw = step.load(); });
      posted.Notify();
    });
    posted.WaitForNotification();
    poster.join();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_EQ(posted_saw.load(), -1) << "the worker ran a job beside the caller's";
    step = 1;
  }));
  (*worker)->Drain();
  EXPECT_EQ(posted_saw.load(), 1);
}

}  // namespace
}  // namespace psched::executor
