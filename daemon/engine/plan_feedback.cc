#include "daemon/engine/plan_feedback.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

// The median of the finite values; NaN when there is none.
double Median(std::vector<double> values) {
  std::erase_if(values, [](double v) { return !std::isfinite(v); });
  if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 == 1 ? values[n / 2] : 0.5 * (values[n / 2 - 1] + values[n / 2]);
}

}  // namespace

// The last runs of one plan, in rings of `capacity` runs.
struct PlanFeedback::Window {
  std::shared_ptr<const ReadyPlan> plan;
  // The subtasks of the first recorded run (measured_us unused), their predicted
  // [start, end] that later runs' traces are matched by, and each one's device (an index
  // into `devices`).
  std::vector<MeasuredSubtask> layout;
  std::vector<std::pair<double, double>> predicted;
  std::vector<int> device_of;
  size_t devices = 0;
  // Rings of capacity x layout.size() measured durations and capacity x devices last ends
  // (NaN: not measured in that run).
  std::vector<double> durations;
  std::vector<double> device_ends;
  size_t capacity = 0;
  std::vector<double> makespans;  // capacity
  int64_t runs = 0;
  int64_t since_evaluation = 0;

  size_t filled() const { return std::min(static_cast<size_t>(runs), capacity); }
  double MedianMakespan() const {
    return Median({makespans.begin(), makespans.begin() + static_cast<ptrdiff_t>(filled())});
  }
};

struct PlanFeedback::Slot {
  Phase phase = Phase::kMeasuring;
  std::shared_ptr<const ReadyPlan> served;
  std::shared_ptr<const LatencyCorrection> correction;  // served was planned with; null: none
  std::shared_ptr<const ReadyPlan> candidate;           // on trial
  std::shared_ptr<const LatencyCorrection> candidate_correction;
  std::vector<MeasuredSubtask> measured;  // kReplanning: what the replan corrects by
  int corrections = 0;
};

PlanFeedback::PlanFeedback(FeedbackOptions options, Replanner replanner, Server server)
    : options_(options), replanner_(std::move(replanner)), server_(std::move(server)) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

PlanFeedback::~PlanFeedback() { Stop(); }

void PlanFeedback::Stop() {
  {
    sync::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (worker_.joinable()) worker_.join();
}

PlanFeedback::Window& PlanFeedback::WindowOf(const std::shared_ptr<const ReadyPlan>& plan) {
  auto it = windows_.find(plan.get());
  if (it != windows_.end()) return *it->second;
  if (windows_.size() >= kMaxWindows) {
    windows_.clear();
    slots_.clear();
    ++generation_;
  }
  auto window = std::make_unique<Window>();
  window->plan = plan;
  window->capacity = static_cast<size_t>(options_.window > 0 ? options_.window : 16);
  window->makespans.assign(window->capacity, std::numeric_limits<double>::quiet_NaN());
  return *windows_.emplace(plan.get(), std::move(window)).first->second;
}

void PlanFeedback::Lay(Window& w, const std::vector<SubtaskTimingInfo>& trace) {
  std::map<std::string, int> devices;
  for (const SubtaskTimingInfo& t : trace) {
    auto [it, added] = devices.try_emplace(t.device, static_cast<int>(devices.size()));
    w.device_of.push_back(it->second);
    w.layout.push_back({t.op, t.device, t.strategy, t.work_begin, t.work_end, 0,
                        t.predicted_end_us - t.predicted_start_us});
    w.predicted.push_back({t.predicted_start_us, t.predicted_end_us});
  }
  w.devices = devices.size();
  w.durations.assign(w.capacity * w.layout.size(), std::numeric_limits<double>::quiet_NaN());
  w.device_ends.assign(w.capacity * w.devices, std::numeric_limits<double>::quiet_NaN());
}

void PlanFeedback::Record(const std::shared_ptr<const ReadyPlan>& plan, const RunOutput& run) {
  sync::MutexLock lock(&mu_);
  Window& w = WindowOf(plan);
  if (w.runs == 0) Lay(w, run.trace);
  const size_t slot = static_cast<size_t>(w.runs) % w.capacity;
  w.makespans[slot] = run.execute_us;
  const size_t n = w.layout.size();
  const bool aligned = run.trace.size() == n;
  double* ends = w.device_ends.data() + slot * w.devices;
  std::fill(ends, ends + w.devices, aligned ? 0.0 : std::numeric_limits<double>::quiet_NaN());
  for (size_t i = 0; i < n; ++i) {
    double& d = w.durations[slot * n + i];
    d = std::numeric_limits<double>::quiet_NaN();
    if (!aligned) continue;
    const SubtaskTimingInfo& t = run.trace[i];
    double& end = ends[static_cast<size_t>(w.device_of[i])];
    if (t.predicted_start_us == w.predicted[i].first &&
        t.predicted_end_us == w.predicted[i].second) {
      d = t.end_us - t.start_us;
      end = std::max(end, t.end_us);
    } else {
      end = std::numeric_limits<double>::quiet_NaN();  // a device with a gap says nothing
    }
  }
  ++w.runs;
  if (options_.window > 0 && ++w.since_evaluation >= options_.window) {
    w.since_evaluation = 0;
    Evaluate(plan, w);
  }
}

void PlanFeedback::RecordFailure(const std::shared_ptr<const ReadyPlan>& plan) {
  sync::MutexLock lock(&mu_);
  auto it = slots_.find(plan->slot);
  if (it == slots_.end() || it->second.phase != Phase::kTrial || it->second.candidate != plan) {
    return;
  }
  spdlog::warn("the replanned {} plan of {} failed to run; serving the previous plan again",
               plan->output.scheduler, plan->key.model_id);
  Conclude(it->second, it->second.served, it->second.correction);
}

void PlanFeedback::Evaluate(const std::shared_ptr<const ReadyPlan>& plan, const Window& window) {
  auto [it, inserted] = slots_.try_emplace(plan->slot);
  Slot& slot = it->second;
  const bool own_key = plan->key.Joined() == plan->slot;
  if (plan != slot.served && plan != slot.candidate) {
    // Served in place of what feedback knew of (refreshed, reloaded, first seen): measure it
    // from here on; a trial it replaced is over.
    if (!own_key || slot.phase == Phase::kReplanning) return;
    slot.phase = Phase::kMeasuring;
    slot.served = plan;
    slot.correction = nullptr;
    slot.candidate = nullptr;
    slot.candidate_correction = nullptr;
  }
  const double median = window.MedianMakespan();
  if (slot.phase == Phase::kTrial && plan == slot.candidate) {
    auto served = windows_.find(slot.served.get());
    const double before = served != windows_.end() ? served->second->MedianMakespan()
                                                   : slot.served->output.makespan_us;
    const bool better = !(median > options_.tie * before);
    spdlog::info("replanned {} plan of {}: measured {:.1f} us against {:.1f} us; serving the {}",
                 plan->output.scheduler, plan->key.model_id, median, before,
                 better ? "new plan" : "previous plan");
    if (better) {
      Conclude(slot, slot.candidate, slot.candidate_correction);
    } else {
      Conclude(slot, slot.served, slot.correction);
    }
    return;
  }
  if (slot.phase != Phase::kMeasuring || plan != slot.served) return;
  const double predicted = plan->output.makespan_us;
  if (!(predicted > 0) || !std::isfinite(median)) return;
  const double ratio = median / predicted;
  if (ratio <= options_.tolerance && ratio >= 1 / options_.tolerance) return;
  if (slot.corrections >= options_.max_corrections || stopping_) return;
  spdlog::info("{} plan of {}: measured {:.1f} us, predicted {:.1f} us (x{:.2f}); replanning",
               plan->output.scheduler, plan->key.model_id, median, predicted, ratio);
  slot.phase = Phase::kReplanning;
  slot.measured = Measure(*plan, window).subtasks;  // the window that asked, not later runs
  pending_.push_back(plan->slot);
}

void PlanFeedback::Conclude(Slot& slot, const std::shared_ptr<const ReadyPlan>& winner,
                            const std::shared_ptr<const LatencyCorrection>& correction) {
  // Copies first: `winner` and `correction` may be the fields reset below.
  std::shared_ptr<const ReadyPlan> plan = winner;
  std::shared_ptr<const LatencyCorrection> used = correction;
  slot.served = plan;
  slot.correction = std::move(used);
  slot.candidate = nullptr;
  slot.candidate_correction = nullptr;
  slot.phase = Phase::kMeasuring;
  ++slot.corrections;
  server_(plan);
}

std::optional<PlanMeasurement> PlanFeedback::Measured(const ReadyPlan& plan) const {
  sync::MutexLock lock(&mu_);
  auto it = windows_.find(&plan);
  if (it == windows_.end()) return std::nullopt;
  return Measure(plan, *it->second);
}

std::optional<double> PlanFeedback::MedianMakespanUs(const ReadyPlan& plan) const {
  sync::MutexLock lock(&mu_);
  auto it = windows_.find(&plan);
  if (it == windows_.end()) return std::nullopt;
  return it->second->MedianMakespan();
}

PlanMeasurement PlanFeedback::Measure(const ReadyPlan& plan, const Window& w) {
  PlanMeasurement out;
  out.runs = w.runs;
  out.window_runs = static_cast<int64_t>(w.filled());
  out.median_makespan_us = w.MedianMakespan();
  out.predicted_makespan_us = plan.output.makespan_us;
  // Each device's measured time, to its last subtask's end, is shared among its subtasks in
  // proportion to their measured durations: what the plan left out (dispatch, waiting for
  // another device) is charged to the subtasks of the device that paid for it.
  const size_t n = w.layout.size();
  std::vector<double> values;
  auto window_median = [&](const std::vector<double>& ring, size_t stride, size_t i) {
    values.clear();
    for (size_t r = 0; r < w.filled(); ++r) values.push_back(ring[r * stride + i]);
    return Median(values);
  };
  std::vector<double> durations(n);
  std::vector<double> device_sums(w.devices, 0.0);
  for (size_t i = 0; i < n; ++i) {
    durations[i] = window_median(w.durations, n, i);
    if (std::isfinite(durations[i]))
      device_sums[static_cast<size_t>(w.device_of[i])] += durations[i];
  }
  // The run's time outside every subtask (starting the devices, collecting the outputs) is
  // shared the same way: each device's time is scaled so the latest one is the makespan.
  std::vector<double> ends(w.devices);
  double latest = 0;
  for (size_t d = 0; d < w.devices; ++d) {
    ends[d] = window_median(w.device_ends, w.devices, d);
    if (std::isfinite(ends[d])) latest = std::max(latest, ends[d]);
  }
  const double outside = latest > 0 && std::isfinite(out.median_makespan_us)
                             ? std::max(1.0, out.median_makespan_us / latest)
                             : 1.0;
  for (size_t i = 0; i < n; ++i) {
    const size_t device = static_cast<size_t>(w.device_of[i]);
    if (!std::isfinite(durations[i]) || !std::isfinite(ends[device]) ||
        !(device_sums[device] > 0)) {
      continue;
    }
    MeasuredSubtask subtask = w.layout[i];
    subtask.measured_us = durations[i] * ends[device] * outside / device_sums[device];
    out.subtasks.push_back(std::move(subtask));
  }
  return out;
}

void PlanFeedback::Forget(const std::string& model_id) {
  sync::MutexLock lock(&mu_);
  ++generation_;
  if (model_id.empty()) {
    windows_.clear();
    slots_.clear();
    return;
  }
  std::erase_if(windows_, [&](const auto& w) { return w.second->plan->key.model_id == model_id; });
  std::erase_if(slots_, [&](const auto& s) {
    return s.second.served != nullptr && s.second.served->key.model_id == model_id;
  });
}

void PlanFeedback::WorkerLoop() {
  while (true) {
    std::string key;
    std::shared_ptr<const ReadyPlan> served;
    std::shared_ptr<const LatencyCorrection> correction;
    std::vector<MeasuredSubtask> measured;
    uint64_t generation = 0;
    {
      sync::MutexLock lock(&mu_);
      mu_.Await(sync::Condition(
          +[](PlanFeedback* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->mu_) {
            return self->stopping_ || !self->pending_.empty();
          },
          this));
      if (stopping_) return;
      key = std::move(pending_.front());
      pending_.pop_front();
      auto it = slots_.find(key);
      if (it == slots_.end() || it->second.phase != Phase::kReplanning) continue;
      served = it->second.served;
      correction = it->second.correction;
      measured = std::move(it->second.measured);
      generation = generation_;
    }
    auto cancelled = [this] {
      sync::MutexLock lock(&mu_);
      return stopping_;
    };
    absl::StatusOr<Candidate> candidate =
        replanner_(*served, correction.get(), measured, cancelled);
    sync::MutexLock lock(&mu_);
    auto it = slots_.find(key);
    if (it == slots_.end() || generation != generation_ || stopping_) continue;  // forgotten
    Slot& slot = it->second;
    if (!candidate.ok()) {
      spdlog::warn("replanning the {} plan of {} with measured times failed: {}",
                   served->output.scheduler, served->key.model_id,
                   std::string(candidate.status().message()));
      slot.phase = Phase::kMeasuring;
      slot.corrections = options_.max_corrections;  // no retry storm; Forget starts over
      continue;
    }
    slot.candidate = candidate->plan;
    slot.candidate_correction = candidate->correction;
    slot.phase = Phase::kTrial;
    server_(slot.candidate);
  }
}

}  // namespace psched::daemon
