#include "executor/run_calibration/fit_run_costs.h"

#include <algorithm>
#include <vector>

namespace psched::executor::run_calibration {
namespace {

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t mid = v.size() / 2;
  return v.size() % 2 == 1 ? v[mid] : 0.5 * (v[mid - 1] + v[mid]);
}

}  // namespace

calibration::RunCosts FitRunCosts(std::span<const ProbeResult> results,
                                  std::span<const std::string> device_names,
                                  const std::vector<bool>& sync_devices) {
  calibration::RunCosts costs;
  costs.probes = static_cast<int>(results.size());
  const size_t num_devices = device_names.size();
  std::vector<double> measured(num_devices, 0), predicted(num_devices, 0);
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
      measured[d] += Median(std::move(m));
      predicted[d] += Median(std::move(p));
    }
    for (const RunBreakdown& b : r.breakdowns) {
      overheads.push_back(b.first_start_us + b.wall_us - b.trace_end_us);
    }
    if (r.devices_used >= 2 && !r.breakdowns.empty()) multi.push_back(&r);
  }
  costs.run_overhead_us = Median(std::move(overheads));
  for (size_t d = 0; d < num_devices; ++d) {
    if (predicted[d] <= 0 || measured[d] <= 0) continue;
    costs.in_run.push_back({.device = device_names[d],
                            .measured_us = measured[d],
                            .predicted_us = predicted[d],
                            .factor = measured[d] / predicted[d]});
  }

  // Summed median replay of the multi-device probes with `c` between sync devices.
  auto replayed = [&](double c) {
    const SyncCost sync = [&](int from, int to) {
      return sync_devices[static_cast<size_t>(from)] && sync_devices[static_cast<size_t>(to)] ? c
                                                                                              : 0.0;
    };
    double sum = 0;
    for (const ProbeResult* r : multi) {
      std::vector<double> spans;
      for (const auto& timings : r->timings) spans.push_back(ReplayUs(*r->graph, timings, sync));
      sum += Median(std::move(spans));
    }
    return sum;
  };
  for (const ProbeResult* r : multi) {
    std::vector<double> spans;
    for (const RunBreakdown& b : r->breakdowns) spans.push_back(b.span_us());
    costs.multi_device_measured_us += Median(std::move(spans));
  }
  costs.multi_device_replay_us = replayed(0);
  double sync_us = 0;
  if (!multi.empty() && costs.multi_device_replay_us < costs.multi_device_measured_us) {
    double lo = 0, hi = kMaxSyncUs;
    if (replayed(hi) <= costs.multi_device_measured_us) {
      lo = hi;
    } else {
      // replayed() does not decrease as c grows.
      for (int i = 0; i < 50; ++i) {
        const double mid = 0.5 * (lo + hi);
        (replayed(mid) < costs.multi_device_measured_us ? lo : hi) = mid;
      }
    }
    sync_us = lo;
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
