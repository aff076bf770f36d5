// sync::Notification: absl::Notification that ThreadSanitizer can see.
//
// A one-shot event: Notify() once; any number of threads wait for it. Everything the
// notifying thread did before Notify() happens before what a waiter does after its wait
// returns true (or HasBeenNotified() returns true). Debian's libabsl is not built with
// -fsanitize=thread, so in a TSan build that order is told to TSan here (sync/tsan.h);
// otherwise this only forwards, inline.
//
// Thread-safety: as absl::Notification: Notify() at most once; the rest from any thread.
#pragma once

#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "sync/tsan.h"

namespace psched::sync {

class Notification {
 public:
  Notification() = default;
  Notification(const Notification&) = delete;
  Notification& operator=(const Notification&) = delete;

  // A waiter may destroy the notification as soon as it is notified: nothing here touches
  // `this` after absl's Notify.
  void Notify() {
    HappensBefore(this);
    notification_.Notify();
  }
  bool HasBeenNotified() const { return Seen(notification_.HasBeenNotified()); }
  void WaitForNotification() const {
    notification_.WaitForNotification();
    Seen(true);
  }
  bool WaitForNotificationWithTimeout(absl::Duration timeout) const {
    return Seen(notification_.WaitForNotificationWithTimeout(timeout));
  }
  bool WaitForNotificationWithDeadline(absl::Time deadline) const {
    return Seen(notification_.WaitForNotificationWithDeadline(deadline));
  }

 private:
  bool Seen(bool notified) const {
    if (notified) HappensAfter(this);
    return notified;
  }

  absl::Notification notification_;
};

}  // namespace psched::sync
