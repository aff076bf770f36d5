// DependencyCounters: the shared dependency state of the co-execution runtime (paper,
// Appendix A) as seen from the GPU queue - int32 counters that CPU threads and GPU sync kernels
// both update.
//
// Counters count completions upward: a finished subtask adds 1 to the counter of each
// successor, and a successor waits until its counter reaches the number of its predecessors
// (or k * that number in the k-th inference, so no reset is needed between inferences).
//
// With fine-grained SVM + SVM atomics the counters live in SVM and the GPU side is two tiny
// kernels enqueued in the scheduled order: psched_signal (atomic add, release) after a GPU
// subtask, psched_wait (spin, acquire) before a GPU subtask that depends on CPU work.
// Without SVM atomics they live in host memory: a signal is a marker whose completion callback
// adds on the host, and a wait blocks the enqueueing thread on the host (host-side wait).
// A device-side wait may name a release counter: once the host sets it (no host thread will add
// to any counter any more), a wait still short of its target gives up, sets a flag
// (wait_timed_out()) and lets the queue go on, so a lost signal shows up as an error instead
// of a hang - decided by what happened, not by a clock, so a busy machine never fails a wait.
//
// Ownership: must not outlive its OpenClDevice. Thread-safety: Add/Load/WaitAtLeast may be
// called from any thread; Enqueue* from the GPU dispatcher thread only; Reset only while
// nothing is in flight.
#pragma once

#include <CL/cl.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "executor/opencl/opencl_device.h"

namespace psched::executor::opencl {

struct SyncOptions {
  // Spin iterations of one device-side wait before it gives up and flags a timeout; 0: no
  // budget (the default: how long CPU work takes depends on the machine's load, so a budget
  // fails correct runs on a busy machine; waits end through their counter or release word).
  int32_t max_spins = 0;
  // Host-side fallback only: how long EnqueueWait blocks before kDeadlineExceeded.
  absl::Duration host_wait_timeout = absl::Seconds(1);
  // Forces the host-side fallback even where SVM atomics exist (tests, debugging).
  bool force_host_side = false;
};

class DependencyCounters {
 public:
  static absl::StatusOr<std::unique_ptr<DependencyCounters>> Create(OpenClDevice* device,
                                                                    size_t count,
                                                                    SyncOptions options = {});
  ~DependencyCounters();
  DependencyCounters(const DependencyCounters&) = delete;
  DependencyCounters& operator=(const DependencyCounters&) = delete;

  size_t size() const { return count_; }
  // True when signal and wait run as kernels inside the GPU queue (SVM atomics present).
  bool device_side() const { return device_side_; }

  // Host side (CPU subtasks): release-add / acquire-load.
  void Add(size_t index, int32_t delta);
  int32_t Load(size_t index) const;
  // Blocks until counter `index` >= target; kDeadlineExceeded after `timeout`.
  absl::Status WaitAtLeast(size_t index, int32_t target, absl::Duration timeout) const;
  // Zeroes every counter and the timeout flag. REQUIRES: no sync kernel in flight.
  void Reset();
  bool wait_timed_out() const;
  // Returns whether a device-side wait gave up since the last call (or Reset), and clears it.
  bool TakeTimeout();
  // The counters themselves (size() words), for host code that updates them directly.
  int32_t* data() const { return words_; }

  // GPU queue side, in scheduled order. kOutOfRange for a bad index. With `event`, returns the
  // signal's event (the caller releases it), e.g. to wake host threads parked on the counter.
  absl::Status EnqueueSignal(size_t index, int32_t delta = 1, cl_event* event = nullptr);
  // Device-side: enqueues the spin kernel and returns at once; with `release`, the wait gives
  // up (flagging a timeout) if counter `release` becomes non-zero while counter `index` is
  // still below `target`. Host-side: blocks up to SyncOptions::host_wait_timeout.
  absl::Status EnqueueWait(size_t index, int32_t target,
                           std::optional<size_t> release = std::nullopt);

 private:
  DependencyCounters(OpenClDevice* device, size_t count, SyncOptions options)
      : device_(device), count_(count), options_(options) {}
  int32_t* slot(size_t index) const { return words_ + index; }

  OpenClDevice* device_;
  size_t count_;
  SyncOptions options_;
  bool device_side_ = false;
  int32_t* words_ = nullptr;  // count_ counters + the timeout flag
  bool svm_ = false;          // words_ came from clSVMAlloc
  cl_kernel signal_ = nullptr;
  cl_kernel wait_ = nullptr;
};

// Average wall-clock cost, in microseconds, of dispatching one sync kernel and running it to
// completion through `device`'s queue (`iterations` psched_signal launches after a warm-up,
// then clFinish). This is the GPU sync/dispatch overhead the scheduler adds to every GPU
// subtask (the paper's constant 10 us).
absl::StatusOr<double> MeasureDispatchOverheadUs(OpenClDevice* device, int iterations = 200);

}  // namespace psched::executor::opencl
