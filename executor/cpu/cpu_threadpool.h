// CpuThreadpool: the XNNPACK threadpool (pthreadpool) of a CPU device that is a core cluster,
// one thread per core, each thread pinned to its own core.
//
// The thread that creates the pool is its thread 0 (pthreadpool runs a share of every
// parallel call on its caller), so Create must run on the thread that will run the kernels -
// a device's PinnedWorker. Given one core per thread, it pins that thread to cores[0] and the
// pool's own threads to cores[1..]: each XNNPACK call waits for its slowest thread, and pinned
// threads cannot be stacked on one core by the operating system while another core idles.
// Otherwise every thread keeps the creating thread's affinity.
//
// After a parallel call pthreadpool's threads spin for the next one for about 15 ms (measured
// here), which saves a wake-up per op within a run but, after the run, holds the cluster's
// cores while the device idles: with more runnable threads than cores (pschedd's gRPC
// threads and clients beside a busy machine) that collapsed throughput 20x, each spinner
// keeping a core for a whole scheduler slice. Park() ends the spin once a device's queue is
// empty (PinnedWorker's idle hook).
//
// Ownership: owns the pool; destroy it after every kernel created with get(). Thread-safety:
// get() and Park() may be used from the creating thread only (pthreadpool serializes
// parallel calls).
//
// ParallelFor is how psched's own code runs on a pool's threads.
#pragma once

#include <pthread.h>

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "executor/common/pinned_worker.h"

typedef struct pthreadpool* pthreadpool_t;

namespace psched::executor::cpu {

class CpuThreadpool {
 public:
  // `threads` >= 1 threads; `cores` with exactly `threads` distinct ids pins them one per core,
  // any other list leaves the affinity alone. One thread gives a pool whose get() is null
  // (kernels run on the caller alone, XNNPACK's cheapest path) and pins nothing.
  // kInvalidArgument for threads < 1 or a core that cannot be pinned to, kResourceExhausted
  // when the threads cannot be started.
  static absl::StatusOr<std::unique_ptr<CpuThreadpool>> Create(int threads,
                                                               std::span<const int> cores);
  ~CpuThreadpool();
  CpuThreadpool(const CpuThreadpool&) = delete;
  CpuThreadpool& operator=(const CpuThreadpool&) = delete;

  pthreadpool_t get() const { return pool_; }
  // Makes `core` the core of the pool's thread 0 - the thread that calls it, which the caller
  // pins there - by moving the thread pinned to `core` to thread 0's former core. Lets a
  // caller that is on any of the pool's cores run its kernels where it is (PinnedWorker's
  // take_core). True when `core` is now thread 0's; false for a pool that pins nothing or a
  // core it does not have. REQUIRES: no parallel call in flight; one caller at a time.
  bool MoveThreadZeroTo(int core);
  // Puts the pool's threads to sleep now instead of letting them spin; the next parallel call
  // wakes them (a futex wake). No-op for one thread.
  void Park();
  int threads() const { return threads_; }

 private:
  CpuThreadpool(pthreadpool_t pool, int threads) : pool_(pool), threads_(threads) {}

  pthreadpool_t pool_;
  int threads_;
  // When pinned: each thread's core and, from index 1, the pool's own threads.
  std::vector<int> thread_cores_;
  std::vector<pthread_t> threads_by_index_;
};

// The pinned worker of a device or executor whose kernels run on `*pool` (created later, on
// the worker, and owned by the caller, which outlives the worker): between runs its idle hook
// parks the pool's threads instead of letting them spin out the cores, and a caller on
// another of `cores` may take its place (PinnedWorker's take_core: MoveThreadZeroTo).
absl::StatusOr<std::unique_ptr<PinnedWorker>> StartPoolWorker(
    std::vector<int> cores, const std::unique_ptr<CpuThreadpool>* pool);

// Runs fn(i) for every i in [0, range) on `pool`'s threads, the caller's among them (on the
// caller alone when `pool` is null), and returns when every call has. pthreadpool's hand-offs
// are invisible to ThreadSanitizer, so a TSan build is told here that the caller's work before
// ParallelFor happens before every fn(i), and every fn(i) before ParallelFor returns; two
// calls of fn are not ordered with each other.
void ParallelFor(pthreadpool_t pool, size_t range, absl::FunctionRef<void(size_t)> fn);

}  // namespace psched::executor::cpu
