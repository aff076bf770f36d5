// Parking a thread on a 32-bit word until another thread changes it (Linux futex), for the
// co-execution runtime's dependency counters: a waiter spins briefly, then parks instead of
// burning a core that an oversubscribed machine needs for the work being waited for.
//
// FutexWait returns when *word != expected on entry, when woken, or spuriously: callers loop
// on their own condition. FutexWake wakes every thread parked on `word`. Both work on any
// word of this process's memory (host or fine-grained SVM). Thread-safe.
#pragma once

#include <cstdint>

namespace psched::executor {

void FutexWait(int32_t* word, int32_t expected);
// FutexWait that also returns once `timeout_ns` (> 0) has passed.
void FutexWaitFor(int32_t* word, int32_t expected, int64_t timeout_ns);
void FutexWakeAll(int32_t* word);

// One pause instruction (x86 `pause`, ARM `yield`): the body of a polite spin loop.
inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

}  // namespace psched::executor
