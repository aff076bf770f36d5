#include "executor/common/futex.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <climits>
#include <ctime>

namespace psched::executor {

void FutexWait(int32_t* word, int32_t expected) {
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, nullptr, nullptr, 0);
}

void FutexWaitFor(int32_t* word, int32_t expected, int64_t timeout_ns) {
  const timespec timeout{.tv_sec = static_cast<time_t>(timeout_ns / 1000000000),
                         .tv_nsec = static_cast<long>(timeout_ns % 1000000000)};
  syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, &timeout, nullptr, 0);
}

void FutexWakeAll(int32_t* word) {
  syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace psched::executor
