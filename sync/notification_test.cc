#include "sync/notification.h"

#include <memory>
#include <string>
#include <thread>

#include "gtest/gtest.h"

namespace psched::sync {
namespace {

TEST(NotificationTest, WaitSeesWhatTheNotifierWrote) {
  Notification ready;
  std::string payload;
  std::thread notifier([&] {
    payload = "written before Notify";
    ready.Notify();
  });
  ready.WaitForNotification();
  EXPECT_EQ(payload, "written before Notify");
  notifier.join();
}

TEST(NotificationTest, TimedWaitsAndPollingReportTheState) {
  Notification ready;
  int payload = 0;
  EXPECT_FALSE(ready.HasBeenNotified());
  EXPECT_FALSE(ready.WaitForNotificationWithTimeout(absl::Milliseconds(5)));
  EXPECT_FALSE(ready.WaitForNotificationWithDeadline(absl::Now() + absl::Milliseconds(5)));
  std::thread notifier([&] {
    payload = 7;
    ready.Notify();
  });
  while (!ready.HasBeenNotified()) std::this_thread::yield();
  EXPECT_EQ(payload, 7);
  EXPECT_TRUE(ready.WaitForNotificationWithTimeout(absl::Milliseconds(5)));
  EXPECT_TRUE(ready.WaitForNotificationWithDeadline(absl::InfinitePast()));
  notifier.join();
}

// The waiter owns the notification and may destroy it as soon as its wait returns.
TEST(NotificationTest, WaiterMayDestroyItOnceNotified) {
  for (int i = 0; i < 100; ++i) {
    auto ready = std::make_unique<Notification>();
    std::thread notifier([n = ready.get()] { n->Notify(); });
    ready->WaitForNotification();
    ready.reset();
    notifier.join();
  }
}

}  // namespace
}  // namespace psched::sync
