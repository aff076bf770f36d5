// sync::Mutex, sync::MutexLock, sync::CondVar: psched's locks. absl::Mutex and absl::CondVar
// that ThreadSanitizer can see.
//
// Debian's libabsl is not built with -fsanitize=thread, so TSan cannot see an absl::Mutex
// being taken or released and would report every access ordered only by one as a race. These
// types forward to the absl ones, inline; in a TSan build they also tell TSan about every
// lock, unlock and wait through its mutex annotations (<sanitizer/tsan_interface.h>), so TSan
// orders accesses by them, checks lock order and reports unlocking a mutex not held. Outside
// TSan the annotations compile to nothing. They carry the clang thread-safety attributes of
// the absl types (stricter on waits: REQUIRES the mutex), so `make check-thread-safety`
// checks every ABSL_GUARDED_BY(mu) on a sync::Mutex.
//
// Use them, not absl's, for every lock in psched: one raw absl::Mutex in a path brings the
// false reports back. Conditions are absl::Condition (sync::Condition).
//
// Thread-safety: as absl::Mutex and absl::CondVar.
#pragma once

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "sync/tsan.h"

namespace psched::sync {

using Condition = absl::Condition;

class ABSL_LOCKABLE Mutex {
 public:
  Mutex() { AnnotateCreate(); }
  ~Mutex() { AnnotateDestroy(); }
  Mutex(const Mutex&) = delete;
  Mutex& operator=(const Mutex&) = delete;

  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() {
    AnnotatePreLock();
    mu_.Lock();
    AnnotatePostLock();
  }
  void Unlock() ABSL_UNLOCK_FUNCTION() {
    AnnotatePreUnlock();
    mu_.Unlock();
    AnnotatePostUnlock();
  }

  // Releases the mutex until `cond` holds, then returns with it held again (the
  // ...WithTimeout/...WithDeadline forms also when time runs out: they return whether `cond`
  // holds). absl evaluates `cond` with the mutex held, on this thread or on whichever thread
  // is releasing the mutex.
  void Await(const Condition& cond) ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    AnnotatePreUnlock();
    mu_.Await(Annotated(cond));
    AnnotateRelockAfterWait();
  }
  bool AwaitWithTimeout(const Condition& cond, absl::Duration timeout)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    AnnotatePreUnlock();
    const bool holds = mu_.AwaitWithTimeout(Annotated(cond), timeout);
    AnnotateRelockAfterWait();
    return holds;
  }
  bool AwaitWithDeadline(const Condition& cond, absl::Time deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(this) {
    AnnotatePreUnlock();
    const bool holds = mu_.AwaitWithDeadline(Annotated(cond), deadline);
    AnnotateRelockAfterWait();
    return holds;
  }

 private:
  friend class CondVar;

#ifdef ABSL_HAVE_THREAD_SANITIZER
  // Between Pre* and Post* TSan ignores this thread's accesses (absl's own, and those of
  // conditions absl evaluates there, unless AnnotatedCondition lets it see them), and treats
  // the mutex as released from PreUnlock on, as absl's own TSan build does.
  void AnnotateCreate() { __tsan_mutex_create(this, 0); }
  void AnnotateDestroy() { __tsan_mutex_destroy(this, 0); }
  void AnnotatePreLock() { __tsan_mutex_pre_lock(this, 0); }
  void AnnotatePostLock() { __tsan_mutex_post_lock(this, 0, 0); }
  void AnnotatePreUnlock() { __tsan_mutex_pre_unlock(this, 0); }
  void AnnotatePostUnlock() { __tsan_mutex_post_unlock(this, 0); }
  // absl released and retook the mutex inside a wait.
  void AnnotateRelockAfterWait() {
    AnnotatePostUnlock();
    AnnotatePreLock();
    AnnotatePostLock();
  }

  // A condition as absl evaluates it: always inside an annotated release of `mu` (this
  // thread's wait, or another thread's Unlock, CondVar::Wait or wait), where TSan ignores
  // accesses and considers the mutex free. The condition runs with the mutex really held, so
  // TSan is told it is taken around the evaluation and released again after, and sees the
  // condition's reads as made under the lock.
  struct AnnotatedCondition {
    Mutex* mu;
    const Condition* cond;

    static bool Eval(const AnnotatedCondition* c) {
      c->mu->AnnotatePostUnlock();
      c->mu->AnnotatePreLock();
      c->mu->AnnotatePostLock();
      const bool holds = c->cond->Eval();
      c->mu->AnnotatePreUnlock();
      return holds;
    }
  };
  // Must live until absl's wait returns: absl keeps a pointer to it.
  class AnnotatedConditionHolder {
   public:
    AnnotatedConditionHolder(Mutex* mu, const Condition* cond)
        : annotated_{mu, cond}, condition_(&AnnotatedCondition::Eval, &annotated_) {}
    AnnotatedConditionHolder(const AnnotatedConditionHolder&) = delete;
    AnnotatedConditionHolder& operator=(const AnnotatedConditionHolder&) = delete;
    operator const Condition&() const { return condition_; }

   private:
    const AnnotatedCondition annotated_;
    const Condition condition_;
  };
  AnnotatedConditionHolder Annotated(const Condition& cond) { return {this, &cond}; }
#else
  void AnnotateCreate() {}
  void AnnotateDestroy() {}
  void AnnotatePreLock() {}
  void AnnotatePostLock() {}
  void AnnotatePreUnlock() {}
  void AnnotatePostUnlock() {}
  void AnnotateRelockAfterWait() {}
  const Condition& Annotated(const Condition& cond) { return cond; }
#endif

  absl::Mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

class CondVar {
 public:
  // Releases `mu`, blocks until signalled (or spuriously), retakes `mu`. Callers loop on
  // their own condition.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    mu->AnnotatePreUnlock();
    cv_.Wait(&mu->mu_);
    mu->AnnotateRelockAfterWait();
  }
  void Signal() { cv_.Signal(); }
  void SignalAll() { cv_.SignalAll(); }

 private:
  absl::CondVar cv_;
};

}  // namespace psched::sync
