#include "executor/common/pinned_worker.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "executor/common/futex.h"

namespace psched::executor {

absl::StatusOr<std::unique_ptr<PinnedWorker>> PinnedWorker::Start(
    std::vector<int> cores, std::function<void()> when_idle, std::function<bool(int)> take_core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int core : cores) {
    if (core < 0 || core >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(absl::StrCat("core id ", core, " is out of range"));
    }
    CPU_SET(core, &set);
  }
  std::unique_ptr<PinnedWorker> worker(
      new PinnedWorker(std::move(cores), std::move(when_idle), std::move(take_core)));
  worker->thread_ = std::thread([w = worker.get()] { w->Loop(); });
  worker->native_ = worker->thread_.native_handle();
  if (!worker->cores_.empty()) {
    const int err = pthread_setaffinity_np(worker->thread_.native_handle(), sizeof(set), &set);
    if (err != 0) {
      return absl::InvalidArgumentError(absl::StrCat("cannot pin a worker to cores {",
                                                     absl::StrJoin(worker->cores_, ","),
                                                     "}: ", std::strerror(err)));
    }
  }
  return worker;
}

PinnedWorker::~PinnedWorker() {
  {
    sync::MutexLock lock(&mu_);
    stopping_ = true;
    work_.Signal();
  }
  thread_.join();
}

PinnedWorker::Spin PinnedWorker::SpinForWork() const {
  const absl::Time until = absl::Now() + kIdleSpin;
  for (;;) {
    for (int i = 0; i < 16; ++i) {
      if (posted_.load(std::memory_order_acquire) > taken_) return Spin::kWork;
      if (caller_runs_.load(std::memory_order_relaxed)) return Spin::kCallerRuns;
      CpuRelax();
    }
    if (absl::Now() >= until) return Spin::kIdle;
    sched_yield();  // a runnable thread on this core (the one that will post) goes first
  }
}

void PinnedWorker::Loop() {
  bool ran_since_idle = false;
  for (;;) {
    // While a caller runs a job in its place the worker neither spins beside it nor puts the
    // pool to rest under it: it sleeps until there is a job for it (the caller runs the idle
    // hook itself after its job).
    if (ran_since_idle && SpinForWork() == Spin::kIdle) {
      if (when_idle_) when_idle_();
      ran_since_idle = false;
    }
    std::function<void()> job;
    {
      sync::MutexLock lock(&mu_);
      while ((!stopping_ && jobs_.empty()) || caller_runs_.load()) work_.Wait(&mu_);
      if (jobs_.empty()) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++taken_;
    }
    job();
    ran_since_idle = true;
    sync::MutexLock lock(&mu_);
    ++finished_;
    done_.SignalAll();
  }
}

PinnedWorker::CallerCore PinnedWorker::WhereCallerIs(cpu_set_t& worker_set, int& cpu) const {
  // The worker's affinity now, not cores_: a CPU device's threadpool pins the worker to the
  // first of its cores (cpu::CpuThreadpool), and a caller takes the worker's place there.
  cpu = sched_getcpu();
  if (cpu < 0 || cpu >= CPU_SETSIZE ||
      pthread_getaffinity_np(native_, sizeof(worker_set), &worker_set) != 0) {
    return CallerCore::kNo;
  }
  if (CPU_ISSET(cpu, &worker_set)) return CallerCore::kWorkerCore;
  const bool takeable =
      take_core_ != nullptr && std::find(cores_.begin(), cores_.end(), cpu) != cores_.end();
  return takeable ? CallerCore::kTakeableCore : CallerCore::kNo;
}

bool PinnedWorker::CallerOnItsCores() const {
  cpu_set_t worker_set;
  int cpu;
  return WhereCallerIs(worker_set, cpu) != CallerCore::kNo;
}

bool PinnedWorker::TryRunHere(const std::function<void()>& job) {
  cpu_set_t worker_set, own;
  int cpu;
  const CallerCore where = WhereCallerIs(worker_set, cpu);
  if (where == CallerCore::kNo || pthread_getaffinity_np(pthread_self(), sizeof(own), &own) != 0) {
    return false;
  }
  {
    sync::MutexLock lock(&mu_);
    if (stopping_ || caller_runs_.load() || finished_ != submitted_) return false;
    caller_runs_.store(true);
  }
  bool ok = true;
  if (where == CallerCore::kTakeableCore) {
    // The worker is idle and stays asleep while caller_runs_: its core moves to the caller's.
    CPU_ZERO(&worker_set);
    CPU_SET(cpu, &worker_set);
    ok = take_core_(cpu) && pthread_setaffinity_np(native_, sizeof(worker_set), &worker_set) == 0;
  }
  if (ok) {
    // Pinned like the worker for the job (not more widely than the caller was): kernels that
    // split work with the pool's threads on the other cores must not share a core with one.
    cpu_set_t here;
    CPU_AND(&here, &own, &worker_set);
    const bool pinned = pthread_setaffinity_np(pthread_self(), sizeof(here), &here) == 0;
    job();
    // The caller puts to rest what the job used, at once: waking the worker to do it after its
    // idle spin would cost the caller its core (the worker is pinned where the caller runs, and
    // a woken thread preempts the one that woke it).
    if (when_idle_) when_idle_();
    if (pinned) pthread_setaffinity_np(pthread_self(), sizeof(own), &own);
  }
  sync::MutexLock lock(&mu_);
  caller_runs_.store(false);
  work_.Signal();  // jobs posted meanwhile
  return ok;
}

void PinnedWorker::Post(std::function<void()> job) {
  sync::MutexLock lock(&mu_);
  jobs_.push_back(std::move(job));
  posted_.store(++submitted_, std::memory_order_release);
  work_.Signal();
}

void PinnedWorker::Drain() {
  sync::MutexLock lock(&mu_);
  const int64_t target = submitted_;
  while (finished_ < target) done_.Wait(&mu_);
}

absl::Status PinnedWorker::Call(const std::function<absl::Status()>& job) {
  absl::Status status;
  sync::MutexLock lock(&mu_);
  jobs_.push_back([&] { status = job(); });
  const int64_t ticket = ++submitted_;
  posted_.store(ticket, std::memory_order_release);
  work_.Signal();
  while (finished_ < ticket) done_.Wait(&mu_);
  return status;
}

}  // namespace psched::executor
