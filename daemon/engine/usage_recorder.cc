#include "daemon/engine/usage_recorder.h"

#include <utility>

#include "spdlog/spdlog.h"

namespace psched::daemon {

UsageRecorder::UsageRecorder(cache::Store* store, absl::Duration interval)
    : store_(store), interval_(interval), thread_([this] { FlushLoop(); }) {}

UsageRecorder::~UsageRecorder() {
  {
    sync::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
  Flush();
}

void UsageRecorder::PlanHit(const cache::PlanKey& key) {
  std::string name = key.Joined();
  sync::MutexLock lock(&mu_);
  auto [it, inserted] = plan_hits_.try_emplace(std::move(name));
  if (inserted) it->second.key = key;
  ++it->second.hits;
}

void UsageRecorder::Inference(const std::string& model_id, double latency_us) {
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  sync::MutexLock lock(&mu_);
  cache::UsageRecord& usage = models_[model_id];
  usage.model_id = model_id;
  ++usage.inferences;
  usage.total_latency_us += latency_us;
  usage.last_unix_s = now;
}

void UsageRecorder::Flush() {
  sync::MutexLock flush_lock(&flush_mu_);
  cache::UsageBatch batch;
  {
    sync::MutexLock lock(&mu_);
    for (auto& [name, hits] : plan_hits_) batch.plan_hits.push_back(std::move(hits));
    for (auto& [id, usage] : models_) batch.models.push_back(std::move(usage));
    plan_hits_.clear();
    models_.clear();
  }
  if (absl::Status status = store_->RecordUsage(batch); !status.ok()) {
    spdlog::warn("usage statistics of {} plans and {} models not recorded: {}",
                 batch.plan_hits.size(), batch.models.size(), std::string(status.message()));
  }
}

void UsageRecorder::FlushLoop() {
  while (true) {
    {
      sync::MutexLock lock(&mu_);
      mu_.AwaitWithTimeout(sync::Condition(&stopping_), interval_);
      if (stopping_) return;
    }
    Flush();
  }
}

}  // namespace psched::daemon
