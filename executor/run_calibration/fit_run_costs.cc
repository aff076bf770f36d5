#include "executor/run_calibration/fit_run_costs.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

namespace psched::executor::run_calibration {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

// `timings` in the order they ran, each lasting what the fitted model predicts for it: the
// schedule's prediction times its device's in-run factor. A subtask the schedule lacks keeps its
// measured duration.
std::vector<runtime::SubtaskTiming> AsPredicted(const scheduler::Schedule& schedule,
                                                std::span<const runtime::SubtaskTiming> timings,
                                                std::span<const double> in_run) {
  const std::vector<std::optional<double>> predicted = PredictedDurationsUs(schedule, timings);
  std::vector<runtime::SubtaskTiming> out(timings.begin(), timings.end());
  for (size_t i = 0; i < out.size(); ++i) {
    if (!predicted[i].has_value()) continue;
    runtime::SubtaskTiming& t = out[i];
    const double us = *predicted[i] * in_run[static_cast<size_t>(t.device)];
    t.end_ns = t.start_ns + static_cast<int64_t>(std::llround(us * 1e3));
  }
  return out;
}

}  // namespace

calibration::RunCosts FitRunCosts(std::span<const ProbeResult> results,
                                  std::span<const std::string> device_names,
                                  const std::vector<bool>& sync_devices) {
  calibration::RunCosts costs;
  costs.probes = static_cast<int>(results.size());
  const size_t num_devices = device_names.size();
  // Per device: the summed medians (reported) and log(measured / predicted) of every probe that
  // ran subtasks on it.
  std::vector<double> measured(num_devices, 0), predicted(num_devices, 0), log_sum(num_devices, 0);
  std::vector<int> counted(num_devices, 0);
  std::vector<double> overheads;
  std::vector<const ProbeResult*> multi;
  for (const ProbeResult& r : results) {
    costs.runs = std::max(costs.runs, static_cast<int>(r.breakdowns.size()));
    for (size_t d = 0; d < num_devices; ++d) {
      std::vector<double> m, p;
      for (const RunBreakdown& b : r.breakdowns) {
        if (d < b.measured_kernel_us.size()) {
          m.push_back(b.measured_kernel_us[d]);
          p.push_back(b.predicted_kernel_us[d]);
        }
      }
      const double mm = Median(std::move(m)), pm = Median(std::move(p));
      if (mm <= 0 || pm <= 0) continue;
      measured[d] += mm;
      predicted[d] += pm;
      log_sum[d] += std::log(mm / pm);
      ++counted[d];
    }
    for (const RunBreakdown& b : r.breakdowns) {
      overheads.push_back(b.first_start_us + b.wall_us - b.trace_end_us);
    }
    if (r.devices_used >= 2 && !r.breakdowns.empty()) multi.push_back(&r);
  }
  costs.run_overhead_us = Median(std::move(overheads));
  std::vector<double> factor(num_devices, 1.0);
  for (size_t d = 0; d < num_devices; ++d) {
    if (counted[d] == 0) continue;
    factor[d] = std::exp(log_sum[d] / counted[d]);
    costs.in_run.push_back({.device = device_names[d],
                            .measured_us = measured[d],
                            .predicted_us = predicted[d],
                            .factor = factor[d]});
  }

  // Per multi-device probe, its median measured span and median replay, with its predicted
  // subtask times, with `c` between sync devices.
  std::vector<double> spans;
  std::vector<std::vector<std::vector<runtime::SubtaskTiming>>> as_predicted;
  for (const ProbeResult* r : multi) {
    std::vector<double> v;
    for (const RunBreakdown& b : r->breakdowns) v.push_back(b.span_us());
    spans.push_back(Median(std::move(v)));
    costs.multi_device_measured_us += spans.back();
    as_predicted.emplace_back();
    for (const auto& timings : r->timings) {
      as_predicted.back().push_back(AsPredicted(r->schedule, timings, factor));
    }
  }
  auto replayed = [&](double c) {
    const SyncCost sync = [&](int from, int to) {
      return sync_devices[static_cast<size_t>(from)] && sync_devices[static_cast<size_t>(to)] ? c
                                                                                              : 0.0;
    };
    std::vector<double> out;
    for (size_t i = 0; i < multi.size(); ++i) {
      std::vector<double> v;
      for (const auto& timings : as_predicted[i]) {
        v.push_back(ReplayUs(*multi[i]->graph, timings, sync));
      }
      out.push_back(Median(std::move(v)));
    }
    return out;
  };
  // Mean log(replayed / measured) over the probes: every plan counts alike, whatever its length.
  auto mean_log_ratio = [&](double c) {
    const std::vector<double> r = replayed(c);
    double sum = 0;
    for (size_t i = 0; i < r.size(); ++i) sum += std::log(std::max(r[i], 1e-9) / spans[i]);
    return sum / static_cast<double>(r.size());
  };
  double sync_us = 0;
  if (!multi.empty()) {
    for (double r : replayed(0)) costs.multi_device_replay_us += r;
    if (mean_log_ratio(0) < 0) {
      double lo = 0, hi = kMaxSyncUs;
      if (mean_log_ratio(hi) <= 0) {
        lo = hi;
      } else {
        // The replays do not shorten as c grows.
        for (int i = 0; i < 50; ++i) {
          const double mid = 0.5 * (lo + hi);
          (mean_log_ratio(mid) < 0 ? lo : hi) = mid;
        }
      }
      sync_us = lo;
    }
  }
  for (size_t a = 0; a < num_devices; ++a) {
    for (size_t b = 0; b < num_devices; ++b) {
      if (a == b || !sync_devices[a] || !sync_devices[b] || multi.empty()) continue;
      costs.sync.push_back({.from = device_names[a], .to = device_names[b], .us = sync_us});
    }
  }
  return costs;
}

}  // namespace psched::executor::run_calibration
