// Telling ThreadSanitizer about ordering it cannot see.
//
// TSan only sees synchronisation in code it instrumented and in the libc calls it intercepts.
// psched hands data between threads through Debian's prebuilt libabsl (sync/mutex.h and
// sync/notification.h annotate those) and libpthreadpool (executor/cpu/cpu_threadpool.h's
// ParallelFor); these helpers are what both use. In a build without TSan every function
// here is an empty inline function, so they cost nothing.
//
// HappensBefore(p) then HappensAfter(p) on another thread: everything the first thread did
// before HappensBefore is ordered, for TSan, before everything the second does after
// HappensAfter. Only call them where real synchronisation (a release/acquire pair inside the
// uninstrumented library) already gives that order; they tell, they do not synchronise.
#pragma once

#include "absl/base/config.h"

#ifdef ABSL_HAVE_THREAD_SANITIZER
#include <sanitizer/tsan_interface.h>
#endif

namespace psched::sync {

#ifdef ABSL_HAVE_THREAD_SANITIZER
inline constexpr bool kTsan = true;

inline void HappensBefore(const void* p) { __tsan_release(const_cast<void*>(p)); }
inline void HappensAfter(const void* p) { __tsan_acquire(const_cast<void*>(p)); }
#else
inline constexpr bool kTsan = false;

inline void HappensBefore(const void*) {}
inline void HappensAfter(const void*) {}
#endif

}  // namespace psched::sync
