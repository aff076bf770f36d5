#include "executor/cpu/cpu_threadpool.h"

#include <pthreadpool.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <set>
#include <thread>

#include "absl/strings/str_cat.h"
#include "sync/tsan.h"

namespace psched::executor::cpu {
namespace {

// What each pool thread does once: pin itself to its core, then wait until every thread has
// pinned itself. The wait is what makes the mapping exact: pthreadpool hands item i of an
// n-item call to thread i first and a thread only steals another's item after finishing its
// own, which no thread does before all n have started theirs.
struct PinTask {
  std::span<const int> cores;
  std::vector<pthread_t> threads;  // by index, for moving them later
  std::atomic<int> arrived{0};
  std::atomic<int> failed_errno{0};
};

// 0, or the error number.
int PinTo(pthread_t thread, int core) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  return pthread_setaffinity_np(thread, sizeof(set), &set);
}

void PinOne(PinTask& task, size_t index) {
  task.threads[index] = pthread_self();
  if (const int err = PinTo(pthread_self(), task.cores[index]); err != 0) {
    task.failed_errno.store(err);
  }
  task.arrived.fetch_add(1);
  while (task.arrived.load() < static_cast<int>(task.cores.size())) std::this_thread::yield();
}

// Two addresses, so that calls of fn are ordered after the dispatch and before the return
// but not with each other.
struct ParallelForCall {
  absl::FunctionRef<void(size_t)> fn;
  char dispatched;
  char finished;
};

void RunOne(void* context, size_t index) {
  auto* call = static_cast<ParallelForCall*>(context);
  sync::HappensAfter(&call->dispatched);
  call->fn(index);
  sync::HappensBefore(&call->finished);
}

void Nothing(void*, size_t) {}

}  // namespace

void ParallelFor(pthreadpool_t pool, size_t range, absl::FunctionRef<void(size_t)> fn) {
  ParallelForCall call{fn, 0, 0};
  sync::HappensBefore(&call.dispatched);
  pthreadpool_parallelize_1d(pool, RunOne, &call, range, 0);
  sync::HappensAfter(&call.finished);
}

absl::StatusOr<std::unique_ptr<CpuThreadpool>> CpuThreadpool::Create(int threads,
                                                                     std::span<const int> cores) {
  if (threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("threadpool: threads must be >= 1, got ", threads));
  }
  if (threads == 1) return std::unique_ptr<CpuThreadpool>(new CpuThreadpool(nullptr, 1));
  const std::set<int> distinct(cores.begin(), cores.end());
  const bool pin = static_cast<int>(cores.size()) == threads && distinct.size() == cores.size();
  for (int core : pin ? cores : std::span<const int>()) {
    if (core < 0 || core >= CPU_SETSIZE) {
      return absl::InvalidArgumentError(
          absl::StrCat("threadpool: core id ", core, " is out of range"));
    }
  }
  pthreadpool_t pool = pthreadpool_create(static_cast<size_t>(threads));
  if (pool == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot create an XNNPACK threadpool of ", threads, " threads"));
  }
  std::unique_ptr<CpuThreadpool> result(new CpuThreadpool(pool, threads));
  if (static_cast<int>(pthreadpool_get_threads_count(pool)) != threads) {
    return absl::ResourceExhaustedError(absl::StrCat("the XNNPACK threadpool started ",
                                                     pthreadpool_get_threads_count(pool), " of ",
                                                     threads, " threads"));
  }
  if (pin) {
    PinTask task{.cores = cores, .threads = std::vector<pthread_t>(cores.size())};
    ParallelFor(pool, cores.size(), [&task](size_t i) { PinOne(task, i); });
    if (const int err = task.failed_errno.load(); err != 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("threadpool: cannot pin its threads to their cores: ", std::strerror(err)));
    }
    result->thread_cores_.assign(cores.begin(), cores.end());
    result->threads_by_index_ = std::move(task.threads);
  }
  return result;
}

bool CpuThreadpool::MoveThreadZeroTo(int core) {
  if (thread_cores_.empty()) return false;
  if (thread_cores_[0] == core) return true;
  const auto it = std::find(thread_cores_.begin() + 1, thread_cores_.end(), core);
  if (it == thread_cores_.end()) return false;
  const auto i = static_cast<size_t>(it - thread_cores_.begin());
  if (PinTo(threads_by_index_[i], thread_cores_[0]) != 0) return false;
  std::swap(thread_cores_[0], thread_cores_[i]);
  return true;
}

absl::StatusOr<std::unique_ptr<PinnedWorker>> StartPoolWorker(
    std::vector<int> cores, const std::unique_ptr<CpuThreadpool>* pool) {
  return PinnedWorker::Start(
      std::move(cores),
      [pool] {
        if (*pool != nullptr) (*pool)->Park();
      },
      [pool](int core) { return *pool != nullptr && (*pool)->MoveThreadZeroTo(core); });
}

void CpuThreadpool::Park() {
  // One item per thread so that every thread takes part and, with the flag, sleeps after it.
  if (pool_ != nullptr) {
    pthreadpool_parallelize_1d(pool_, Nothing, nullptr, static_cast<size_t>(threads_),
                               PTHREADPOOL_FLAG_YIELD_WORKERS);
  }
}

CpuThreadpool::~CpuThreadpool() {
  if (pool_ != nullptr) pthreadpool_destroy(pool_);
}

}  // namespace psched::executor::cpu
