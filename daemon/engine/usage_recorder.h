// daemon::UsageRecorder: request statistics (plan cache hits, inferences per model) counted
// in memory and written to the cache::Store in one transaction per flush, so no request
// waits on a SQLite write. A background thread flushes every `interval`; readers of the
// statistics call Flush() first, so they never see counts older than their own request.
// Counts of a model removed before a flush are dropped by the store (nothing to count for).
//
// Thread-safety: every method is thread-safe. Ownership: borrows the store, which must
// outlive the recorder; the destructor stops the thread and flushes what is left.
#pragma once

#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "cache/store.h"
#include "sync/mutex.h"

namespace psched::daemon {

class UsageRecorder {
 public:
  UsageRecorder(cache::Store* store, absl::Duration interval);
  ~UsageRecorder();
  UsageRecorder(const UsageRecorder&) = delete;
  UsageRecorder& operator=(const UsageRecorder&) = delete;

  // A cached plan served from memory (the store counts the hits it serves itself).
  void PlanHit(const cache::PlanKey& key);
  void Inference(const std::string& model_id, double latency_us);
  // Writes what was counted so far; a failed write is logged and its counts dropped (they
  // are statistics, and a full disk must not grow the daemon's memory).
  void Flush();

 private:
  void FlushLoop();

  cache::Store* const store_;
  const absl::Duration interval_;
  // Serialises flushes, so counts reach the store in the order they were taken.
  sync::Mutex flush_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  sync::Mutex mu_;
  std::map<std::string, cache::UsageBatch::PlanHits> plan_hits_ ABSL_GUARDED_BY(mu_);
  std::map<std::string, cache::UsageRecord> models_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace psched::daemon
