#include "daemon/rpc/spare_threads.h"

#include <atomic>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sync/notification.h"

namespace psched::daemon {
namespace {

TEST(SpareThreadsTest, AnIdleThreadIsReusedInsteadOfStartingAnother) {
  SpareThreads spares(8);
  std::atomic<int> ran{0};
  for (int i = 0; i < 50; ++i) {
    sync::Notification done;
    spares.Run([&] {
      ++ran;
      done.Notify();
    });
    done.WaitForNotification();
    while (spares.idle_threads() < spares.threads()) std::this_thread::yield();
  }
  EXPECT_EQ(ran.load(), 50);
  EXPECT_EQ(spares.threads(), 1u);
  EXPECT_EQ(spares.idle_threads(), 1u);
}

TEST(SpareThreadsTest, BlockedClosuresGetThreadsUpToTheLimitAndTheRestWaitTheirTurn) {
  std::atomic<int> ran{0};
  sync::Notification release;
  {
    SpareThreads spares(3);
    std::atomic<int> started{0};
    for (int i = 0; i < 5; ++i) {
      spares.Run([&] {
        ++started;
        release.WaitForNotification();
        ++ran;
      });
    }
    while (started.load() < 3) std::this_thread::yield();
    EXPECT_EQ(spares.threads(), 3u);
    EXPECT_EQ(started.load(), 3);  // two wait for a free thread
    EXPECT_EQ(ran.load(), 0);
    release.Notify();
  }  // the destructor runs what is pending, then joins
  EXPECT_EQ(ran.load(), 5);
}

TEST(SpareThreadsTest, AClosureMayRunAnotherAlsoWhileTheThreadsStop) {
  std::atomic<int> ran{0};
  {
    SpareThreads spares(1);
    spares.Run([&] {
      ++ran;
      spares.Run([&] { ++ran; });
    });
  }
  EXPECT_EQ(ran.load(), 2);
}

}  // namespace
}  // namespace psched::daemon
