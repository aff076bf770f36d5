// PinnedWorker: one thread pinned to a set of CPU cores that runs submitted jobs in order.
//
// Each CPU logical device gets one: its kernels are created and run on that thread, so the
// XNNPACK threadpool it creates inherits the pinning. Call blocks until the job has run on
// the worker; Post queues a job without waiting (jobs run in submission order; Drain waits
// for all of them).
//
// Waiting for work: after a job the worker spins up to kIdleSpin watching for the next one
// (a run that follows the previous one within the spin then costs no wake-up), then runs the
// optional idle hook (a CPU device parks its threadpool there) and sleeps on a condition
// variable. The sleep is untimed on purpose: a timed wait wakes through the timer path, which
// costs several times an untimed wake-up by notify.
//
// A caller that would post a job and wait for it may run it itself instead (TryRunHere) when
// that is the same thing: the worker is idle and the caller is on one of the worker's cores. It
// saves the hand-off, which costs two wake-ups of an idle core per run (the worker's, then the
// waiting caller's), each tens of microseconds. Jobs still run one at a time and in order:
// jobs posted meanwhile wait for the caller's, and a spinning worker stops spinning so that it
// does not share the core with it.
//
// A worker whose jobs fan out to helper threads on its other cores (a CPU cluster device's
// threadpool pins the worker to the first core and one helper to each other core) can let a
// caller on any of `cores` take its place: the `take_core` hook moves the helper off the
// caller's core (to the worker's), and the worker's thread moves to the caller's core. Where
// a caller lands after a sleep is up to the kernel; without this half of all runs paid both
// wake-ups.
//
// Thread-safe: any thread may submit. The destructor finishes queued jobs and joins.
#pragma once

#include <pthread.h>

#include <atomic>
#include <deque>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "sync/mutex.h"

namespace psched::executor {

class PinnedWorker {
 public:
  // Starts the thread and pins it to `cores` (CPU ids; empty: no pinning). Fails if a core
  // id is negative or not usable by this process.
  // How long the worker watches for a next job before it runs the idle hook and sleeps.
  static constexpr absl::Duration kIdleSpin = absl::Microseconds(250);

  // `when_idle`, if set, runs on the worker each time it is about to sleep for lack of work,
  // and on a caller right after a job it ran in the worker's place (TryRunHere).
  // `take_core`, if set, is how TryRunHere frees core `core` of `cores` for a caller there
  // while the worker's thread is pinned elsewhere: it runs with the worker idle, must leave
  // `core` to the caller (and, after, to the worker's thread) and says whether it could.
  static absl::StatusOr<std::unique_ptr<PinnedWorker>> Start(
      std::vector<int> cores, std::function<void()> when_idle = nullptr,
      std::function<bool(int core)> take_core = nullptr);
  ~PinnedWorker();
  PinnedWorker(const PinnedWorker&) = delete;
  PinnedWorker& operator=(const PinnedWorker&) = delete;

  // Runs `job` on the worker and returns its status.
  absl::Status Call(const std::function<absl::Status()>& job);
  void Post(std::function<void()> job);
  void Drain();

  // Whether the calling thread is on a core the worker may run on now, or on one of `cores`
  // when a take_core hook can free it (cheap; a hint for choosing which worker's job to run
  // here).
  bool CallerOnItsCores() const;
  // Runs `job` on the calling thread in the worker's place when the worker has nothing queued
  // or running and the caller is on one of the worker's cores (or on one of `cores` that the
  // take_core hook frees; the worker's thread then moves there): the caller is pinned to the
  // worker's cores for the job and gets its own affinity back after. The idle hook then runs on
  // the caller, at once (waking the worker to run it after its idle spin would take the core
  // the caller is on). False, without running `job`, otherwise. REQUIRES: not called from the
  // worker; the idle hook may run on any thread.
  bool TryRunHere(const std::function<void()>& job);

  const std::vector<int>& cores() const { return cores_; }

 private:
  PinnedWorker(std::vector<int> cores, std::function<void()> when_idle,
               std::function<bool(int)> take_core)
      : cores_(std::move(cores)),
        when_idle_(std::move(when_idle)),
        take_core_(std::move(take_core)) {}
  void Loop();
  enum class Spin { kWork, kIdle, kCallerRuns };
  // Spins up to kIdleSpin: kWork as soon as a job the worker has not taken was posted,
  // kCallerRuns as soon as a caller runs a job in its place (TryRunHere), else kIdle.
  Spin SpinForWork() const;
  // Where the calling thread may run the worker's job: kWorkerCore when on a core the worker
  // may run on now (written to `worker_set`), kTakeableCore when on another of `cores_` that
  // take_core_ may free (its id in `cpu`).
  enum class CallerCore { kNo, kWorkerCore, kTakeableCore };
  CallerCore WhereCallerIs(cpu_set_t& worker_set, int& cpu) const;

  const std::vector<int> cores_;
  const std::function<void()> when_idle_;
  const std::function<bool(int)> take_core_;
  sync::Mutex mu_;
  sync::CondVar work_;  // a job was queued, or stopping_ set
  sync::CondVar done_;  // finished_ grew
  std::deque<std::function<void()>> jobs_ ABSL_GUARDED_BY(mu_);
  int64_t submitted_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<int64_t> posted_{0};  // submitted_, readable without mu_ (SpinForWork)
  int64_t taken_ = 0;               // jobs the worker took; worker thread only
  int64_t finished_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  // A TryRunHere job is running. Written under mu_ (the worker waits on it with work_), read
  // without it by SpinForWork.
  std::atomic<bool> caller_runs_{false};
  std::thread thread_;
  pthread_t native_{};  // thread_'s, set by Start before the worker is handed out
};

}  // namespace psched::executor
