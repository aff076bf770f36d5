#include "daemon/engine/inference_queue.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <thread>
#include <vector>

#include "absl/time/clock.h"
#include "gtest/gtest.h"
#include "sync/notification.h"

namespace psched::daemon {
namespace {

TEST(InferenceQueueTest, RunsJobsInOrderOneAtATime) {
  InferenceQueue queue(16);
  std::vector<int> order;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  std::vector<std::shared_ptr<InferenceQueue::Job>> jobs;
  for (int i = 0; i < 10; ++i) {
    auto job = queue.Submit(
        [&, i] {
          int now = ++running;
          max_running = std::max(max_running.load(), now);
          order.push_back(i);
          --running;
        },
        absl::InfiniteFuture());
    ASSERT_TRUE(job.ok());
    jobs.push_back(*job);
  }
  for (auto& job : jobs) {
    ASSERT_TRUE(job->WaitUntil(absl::InfiniteFuture()));
    EXPECT_TRUE(job->outcome().ok());
  }
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(max_running.load(), 1);
  EXPECT_EQ(queue.Progress().completed, 10);
}

TEST(InferenceQueueTest, FullQueueIsResourceExhausted) {
  InferenceQueue queue(2);
  sync::Notification release;
  auto blocker = queue.Submit([&] { release.WaitForNotification(); }, absl::InfiniteFuture());
  auto waiting = queue.Submit([] {}, absl::InfiniteFuture());
  ASSERT_TRUE(blocker.ok() && waiting.ok());
  auto refused = queue.Submit([] {}, absl::InfiniteFuture());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("2 of 2"), std::string::npos) << refused.status();
  release.Notify();
  ASSERT_TRUE((*waiting)->WaitUntil(absl::InfiniteFuture()));
  EXPECT_TRUE(queue.Submit([] {}, absl::InfiniteFuture()).ok());
}

TEST(InferenceQueueTest, DropsCancelledAndExpiredJobs) {
  InferenceQueue queue(8);
  sync::Notification release;
  bool ran_cancelled = false, ran_expired = false;
  auto blocker = queue.Submit([&] { release.WaitForNotification(); }, absl::InfiniteFuture());
  auto cancelled = queue.Submit([&] { ran_cancelled = true; }, absl::InfiniteFuture());
  auto expired = queue.Submit([&] { ran_expired = true; }, absl::Now() + absl::Milliseconds(1));
  (*cancelled)->Cancel();
  absl::SleepFor(absl::Milliseconds(5));
  release.Notify();
  ASSERT_TRUE((*cancelled)->WaitUntil(absl::InfiniteFuture()));
  ASSERT_TRUE((*expired)->WaitUntil(absl::InfiniteFuture()));
  EXPECT_EQ((*cancelled)->outcome().code(), absl::StatusCode::kCancelled);
  EXPECT_EQ((*expired)->outcome().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(ran_cancelled);
  EXPECT_FALSE(ran_expired);
}

TEST(InferenceQueueTest, ShutdownFinishesQueuedJobsAndRefusesNew) {
  InferenceQueue queue(8);
  sync::Notification release;
  std::atomic<int> ran{0};
  auto first = queue.Submit(
      [&] {
        release.WaitForNotification();
        ++ran;
      },
      absl::InfiniteFuture());
  auto second = queue.Submit([&] { ++ran; }, absl::InfiniteFuture());
  queue.Shutdown();
  EXPECT_EQ(queue.Submit([] {}, absl::InfiniteFuture()).status().code(),
            absl::StatusCode::kUnavailable);
  release.Notify();
  queue.Drain();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_TRUE((*second)->outcome().ok());
}

TEST(InferenceQueueTest, ProgressReportsRunningJob) {
  InferenceQueue queue(4);
  sync::Notification started, release;
  auto job = queue.Submit(
      [&] {
        started.Notify();
        release.WaitForNotification();
      },
      absl::InfiniteFuture());
  started.WaitForNotification();
  InferenceQueue::ProgressInfo progress = queue.Progress();
  EXPECT_EQ(progress.depth, 1);
  EXPECT_TRUE(progress.running_for.has_value());
  release.Notify();
  ASSERT_TRUE((*job)->WaitUntil(absl::InfiniteFuture()));
  queue.Drain();
  EXPECT_FALSE(queue.Progress().running_for.has_value());
}

using WhenIdle = InferenceQueue::WhenIdle;

TEST(InferenceQueueTest, AnIdleQueueRunsTheJobOnTheCaller) {
  InferenceQueue queue(4);
  std::thread::id ran_on;
  auto job = queue.Submit([&] { ran_on = std::this_thread::get_id(); }, absl::InfiniteFuture(),
                          WhenIdle::kRunOnCaller);
  ASSERT_TRUE(job.ok());
  // Done before Submit returned, on this thread, and counted.
  EXPECT_TRUE((*job)->WaitUntil(absl::InfinitePast()));
  EXPECT_TRUE((*job)->outcome().ok());
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(queue.Progress().completed, 1);
  EXPECT_EQ(queue.Progress().depth, 0);
  // An expired deadline is refused the same way as in the queue, without running.
  bool ran = false;
  auto expired = queue.Submit([&] { ran = true; }, absl::InfinitePast(), WhenIdle::kRunOnCaller);
  ASSERT_TRUE(expired.ok());
  EXPECT_EQ((*expired)->outcome().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(ran);
}

TEST(InferenceQueueTest, ABusyQueueQueuesACallersJobAndRunsOneAtATime) {
  InferenceQueue queue(4);
  sync::Notification started, release;
  std::atomic<int> running{0};
  std::atomic<int> max_running{0};
  auto track = [&] {
    max_running = std::max(max_running.load(), ++running);
    --running;
  };
  // A job a caller runs occupies the devices: a queued job waits for it.
  std::thread caller([&] {
    auto job = queue.Submit(
        [&] {
          max_running = std::max(max_running.load(), ++running);
          started.Notify();
          release.WaitForNotification();
          --running;
        },
        absl::InfiniteFuture(), WhenIdle::kRunOnCaller);
    ASSERT_TRUE(job.ok());
  });
  started.WaitForNotification();
  EXPECT_EQ(queue.Progress().depth, 1);
  std::thread::id ran_on;
  auto queued = queue.Submit(
      [&] {
        ran_on = std::this_thread::get_id();
        track();
      },
      absl::InfiniteFuture(), WhenIdle::kRunOnCaller);
  ASSERT_TRUE(queued.ok());
  auto plain = queue.Submit(track, absl::InfiniteFuture());
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(queue.Progress().depth, 3);
  EXPECT_FALSE((*queued)->WaitUntil(absl::Now() + absl::Milliseconds(20)));
  release.Notify();
  caller.join();
  ASSERT_TRUE((*queued)->WaitUntil(absl::InfiniteFuture()));
  ASSERT_TRUE((*plain)->WaitUntil(absl::InfiniteFuture()));
  EXPECT_NE(ran_on, std::this_thread::get_id());  // the worker ran it
  EXPECT_EQ(max_running.load(), 1);
  EXPECT_EQ(queue.Progress().completed, 3);
}

TEST(InferenceQueueTest, DrainWaitsForAJobACallerRuns) {
  auto queue = std::make_unique<InferenceQueue>(4);
  sync::Notification started, release;
  std::atomic<bool> finished{false};
  std::thread caller([&] {
    auto job = queue->Submit(
        [&] {
          started.Notify();
          release.WaitForNotification();
          finished = true;
        },
        absl::InfiniteFuture(), WhenIdle::kRunOnCaller);
    EXPECT_TRUE(job.ok());
  });
  started.WaitForNotification();
  std::thread drainer([&] {
    queue->Drain();
    EXPECT_TRUE(finished.load());
  });
  absl::SleepFor(absl::Milliseconds(20));
  EXPECT_FALSE(finished.load());
  release.Notify();
  drainer.join();
  caller.join();
  EXPECT_EQ(queue->Submit([] {}, absl::InfiniteFuture(), WhenIdle::kRunOnCaller).status().code(),
            absl::StatusCode::kUnavailable);
}

}  // namespace
}  // namespace psched::daemon
