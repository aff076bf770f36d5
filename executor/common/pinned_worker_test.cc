#include "executor/common/pinned_worker.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace psched::executor {
namespace {

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

}  // namespace
}  // namespace psched::executor
