#include "calibration/run_costs/fit_run_costs.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <vector>

#include "executor/runtime/coexecution_runtime.h"
#include "predictor/error_summary.h"
#include "predictor/host_model/host_latency_model.h"

namespace psched::calibration {
namespace {

// Below this sum of squared overlap shares the probes beside other devices hardly overlapped
// them, and the co-run factor stays 1; it is kept within [kMinCoRunFactor, kMaxCoRunFactor].
constexpr double kMinOverlapSquares = 1e-3;
constexpr double kMinCoRunFactor = 0.5;
constexpr double kMaxCoRunFactor = 3;

// 0 for none.
double Median(std::vector<double> v) { return v.empty() ? 0 : predictor::Median(std::move(v)); }

// The partial-sum combine of one cin-split op in a run: its slice that ended last (an index
// into the run's timings), which adds the others' partial sums into the output, and how many
// elements it added (output elements x the other slices).
struct Combine {
  size_t last = 0;
  double elements = 0;
};

// Every cin-split op of `timings` whose slices all ran (2 or more).
std::vector<Combine> Combines(const model::Graph& graph,
                              std::span<const executor::runtime::SubtaskTiming> timings) {
  std::vector<int> slices(graph.ops.size(), 0);
  std::vector<size_t> last(graph.ops.size(), 0);
  for (size_t i = 0; i < timings.size(); ++i) {
    const executor::runtime::PlanStep& step = timings[i].step;
    if (step.slice.axis != model::SplitAxis::kInputChannels) continue;
    const auto op = static_cast<size_t>(step.op);
    if (slices[op]++ == 0 || timings[i].end_ns > timings[last[op]].end_ns) last[op] = i;
  }
  std::vector<Combine> out;
  for (size_t op = 0; op < slices.size(); ++op) {
    if (slices[op] < 2) continue;
    const auto elements =
        static_cast<double>(graph.output_shape(static_cast<model::OpId>(op)).Elements());
    out.push_back({.last = last[op], .elements = elements * (slices[op] - 1)});
  }
  return out;
}

// Per subtask of `timings`: the combine its device pays after it at `partial_sum_ns` per
// element added (0 for all but the last slices of cin-split ops).
std::vector<double> CombineUs(const model::Graph& graph,
                              std::span<const executor::runtime::SubtaskTiming> timings,
                              std::span<const double> partial_sum_ns) {
  std::vector<double> out(timings.size(), 0.0);
  for (const Combine& c : Combines(graph, timings)) {
    out[c.last] = c.elements * partial_sum_ns[static_cast<size_t>(timings[c.last].device)] / 1e3;
  }
  return out;
}

// Per device, nanoseconds per element added by the last slices' combines in the multi-device
// probes: each combine's time is what its slice took beyond its prediction times the measured /
// predicted ratio of the op's other slices in the same run (they ran beside it, on the same
// inputs: what is left is the combine, not the co-run slowdown the factors hold); the median
// over every combine of every run, >= 0, and 0 with fewer than RunCosts::kMinCombines. Writes
// how many combines each device had to `counts`.
std::vector<double> FitPartialSumNs(std::span<const ProbeResult* const> multi, size_t num_devices,
                                    std::vector<int>& counts) {
  std::vector<std::vector<double>> per_element(num_devices);
  for (const ProbeResult* r : multi) {
    for (const auto& timings : r->timings) {
      const std::vector<Combine> combines = Combines(*r->graph, timings);
      if (combines.empty()) continue;
      const std::vector<std::optional<double>> predicted =
          PredictedDurationsUs(r->schedule, timings);
      auto duration_us = [&](size_t i) {
        return static_cast<double>(timings[i].end_ns - timings[i].start_ns) / 1e3;
      };
      for (const Combine& c : combines) {
        const executor::runtime::SubtaskTiming& last = timings[c.last];
        double measured_others = 0, predicted_others = 0;
        for (size_t i = 0; i < timings.size(); ++i) {
          const executor::runtime::PlanStep& step = timings[i].step;
          if (i == c.last || step.op != last.step.op || !predicted[i].has_value()) continue;
          measured_others += duration_us(i);
          predicted_others += *predicted[i];
        }
        if (!predicted[c.last].has_value() || predicted_others <= 0 || c.elements <= 0) continue;
        const double extra_us =
            duration_us(c.last) - *predicted[c.last] * measured_others / predicted_others;
        per_element[static_cast<size_t>(last.device)].push_back(extra_us * 1e3 / c.elements);
      }
    }
  }
  std::vector<double> ns(num_devices, 0.0);
  counts.assign(num_devices, 0);
  for (size_t d = 0; d < num_devices; ++d) {
    counts[d] = static_cast<int>(per_element[d].size());
    if (counts[d] >= calibration::RunCosts::kMinCombines) {
      ns[d] = std::max(0.0, Median(std::move(per_element[d])));
    }
  }
  return ns;
}

// `timings` in the order they ran, each lasting what the fitted model predicts for it: the
// schedule's prediction times its device's in-run factor, times 1 + (co-run factor - 1) x the
// share of it during which another device ran (as measured; `co_run` empty: no co-run factor),
// plus the device's cold start on its first subtask of the run and `combine_us` (CombineUs, per
// subtask; empty: none). A subtask the schedule lacks keeps its measured duration.
std::vector<executor::runtime::SubtaskTiming> AsPredicted(
    const scheduler::Schedule& schedule, std::span<const executor::runtime::SubtaskTiming> timings,
    std::span<const double> in_run, std::span<const double> cold_us,
    std::span<const double> combine_us = {}, std::span<const double> co_run = {}) {
  const std::vector<std::optional<double>> predicted = PredictedDurationsUs(schedule, timings);
  const std::vector<double> overlap =
      co_run.empty() ? std::vector<double>(timings.size(), 0.0) : MeasuredOverlapFractions(timings);
  std::vector<executor::runtime::SubtaskTiming> out(timings.begin(), timings.end());
  std::vector<int64_t> first_start(in_run.size(), std::numeric_limits<int64_t>::max());
  for (const executor::runtime::SubtaskTiming& t : out) {
    int64_t& first = first_start[static_cast<size_t>(t.device)];
    first = std::min(first, t.start_ns);
  }
  for (size_t i = 0; i < out.size(); ++i) {
    if (!predicted[i].has_value()) continue;
    executor::runtime::SubtaskTiming& t = out[i];
    const auto d = static_cast<size_t>(t.device);
    double us = *predicted[i] * in_run[d];
    if (!co_run.empty()) us *= 1 + (co_run[d] - 1) * overlap[i];
    if (t.start_ns == first_start[d]) us += cold_us[d];
    if (!combine_us.empty()) us += combine_us[i];
    t.end_ns = t.start_ns + static_cast<int64_t>(std::llround(us * 1e3));
  }
  return out;
}

// Fits measured = factor * predicted + cold over one device's probes (each the summed subtask
// time of its median run), minimising the squared log ratios so that every plan counts alike.
// The cold start is what a run pays once on the device whatever its length (its first kernels
// after the idle pause), so it shows only between plans of different lengths: with fewer than
// three probes or the longest under twice the shortest it stays 0 and the factor is the
// geometric mean of the ratios. It is at most half the shortest probe.
struct DeviceRunFit {
  double factor = 1;
  double cold_us = 0;
};
DeviceRunFit FitDeviceRun(std::span<const double> measured, std::span<const double> predicted) {
  auto cost = [&](double factor, double cold) {
    double sum = 0;
    for (size_t p = 0; p < measured.size(); ++p) {
      const double r = std::log(measured[p] / (factor * predicted[p] + cold));
      sum += r * r;
    }
    return sum;
  };
  // The best factor for a cold start: golden-section search over log(factor) in [-1, 1].
  auto best_factor = [&](double cold) {
    double lo = -1, hi = 1;
    const double g = 0.5 * (std::sqrt(5.0) - 1);
    for (int i = 0; i < 60; ++i) {
      const double a = hi - g * (hi - lo), b = lo + g * (hi - lo);
      if (cost(std::exp(a), cold) < cost(std::exp(b), cold)) {
        hi = b;
      } else {
        lo = a;
      }
    }
    return std::exp(0.5 * (lo + hi));
  };
  DeviceRunFit fit;
  double log_sum = 0;
  for (size_t p = 0; p < measured.size(); ++p) log_sum += std::log(measured[p] / predicted[p]);
  fit.factor = std::exp(log_sum / static_cast<double>(measured.size()));
  const auto [shortest, longest] = std::minmax_element(predicted.begin(), predicted.end());
  if (measured.size() < 3 || *longest < 2 * *shortest) return fit;
  const double max_cold = 0.5 * *std::min_element(measured.begin(), measured.end());
  double best = cost(fit.factor, 0);
  constexpr int kSteps = 200;
  for (int i = 1; i <= kSteps; ++i) {
    const double cold = max_cold * i / kSteps;
    const double factor = best_factor(cold);
    if (const double c = cost(factor, cold); c < best) {
      best = c;
      fit = {.factor = factor, .cold_us = cold};
    }
  }
  return fit;
}

}  // namespace

calibration::RunCosts FitRunCosts(std::span<const ProbeResult> results,
                                  std::span<const std::string> device_names,
                                  const std::vector<bool>& sync_devices) {
  calibration::RunCosts costs;
  costs.probes = static_cast<int>(results.size());
  const size_t num_devices = device_names.size();
  // Per device: the median run's summed subtask time, measured and predicted, of every probe
  // that ran subtasks on it, whether that probe used other devices too, and the median run's
  // share of the predicted time that overlapped another device's work.
  std::vector<std::vector<double>> measured(num_devices), predicted(num_devices);
  std::vector<std::vector<bool>> co_running(num_devices);
  std::vector<std::vector<double>> overlapped(num_devices);
  std::vector<double> overheads;
  // Per device: the probes' gaps between subtasks (median run of each), summed, and how many;
  // [1] with a sync kernel between (run_breakdown.h).
  std::vector<std::array<double, 2>> gap_sum_us(num_devices, {0, 0}),
      gap_count(num_devices, {0, 0});
  std::vector<const ProbeResult*> multi;
  for (const ProbeResult& r : results) {
    if (r.devices_used >= 2 && !r.breakdowns.empty()) multi.push_back(&r);
  }
  // The combines first: the factors below are fitted to what the subtasks took beyond them.
  std::vector<int> combines;
  const std::vector<double> partial_sum_ns = FitPartialSumNs(multi, num_devices, combines);
  // Per probe and timed run, each subtask's combine at the fitted cost.
  std::vector<std::vector<std::vector<double>>> subtask_combine_us(results.size());
  auto index_of = [&](const ProbeResult& r) { return static_cast<size_t>(&r - results.data()); };
  for (const ProbeResult& r : results) {
    costs.runs = std::max(costs.runs, static_cast<int>(r.breakdowns.size()));
    std::vector<std::vector<double>>& run_combine_us = subtask_combine_us[index_of(r)];
    // Per timed run, what each device paid in combines.
    std::vector<std::vector<double>> device_combine_us(r.breakdowns.size(),
                                                       std::vector<double>(num_devices, 0.0));
    for (size_t i = 0; i < r.timings.size(); ++i) {
      run_combine_us.push_back(CombineUs(*r.graph, r.timings[i], partial_sum_ns));
      for (size_t k = 0; k < run_combine_us[i].size() && i < device_combine_us.size(); ++k) {
        device_combine_us[i][static_cast<size_t>(r.timings[i][k].device)] += run_combine_us[i][k];
      }
    }
    for (size_t d = 0; d < num_devices; ++d) {
      std::vector<double> m, p, share;
      for (size_t i = 0; i < r.breakdowns.size(); ++i) {
        const RunBreakdown& b = r.breakdowns[i];
        if (d < b.measured_kernel_us.size()) {
          m.push_back(b.measured_kernel_us[d]);
          p.push_back(b.predicted_kernel_us[d] + device_combine_us[i][d]);
          if (d < b.predicted_overlapped_us.size() && b.predicted_kernel_us[d] > 0) {
            share.push_back(b.predicted_overlapped_us[d] / b.predicted_kernel_us[d]);
          }
        }
      }
      const double mm = Median(std::move(m)), pm = Median(std::move(p));
      if (mm <= 0 || pm <= 0) continue;
      measured[d].push_back(mm);
      predicted[d].push_back(pm);
      co_running[d].push_back(r.devices_used >= 2);
      overlapped[d].push_back(Median(std::move(share)));
    }
    for (const RunBreakdown& b : r.breakdowns) {
      overheads.push_back(b.first_start_us + b.wall_us - b.trace_end_us);
    }
    // Gaps from plans on two devices or more, the only ones RetimeByWaits charges them in.
    if (r.devices_used >= 2 && !r.breakdowns.empty()) {
      const RunBreakdown median = MedianBreakdown(r.breakdowns);
      for (size_t d = 0; d < num_devices && d < median.gaps.size(); ++d) {
        for (size_t k = 0; k < 2; ++k) {
          gap_sum_us[d][k] += median.gap_us[d][k];
          gap_count[d][k] += median.gaps[d][k];
        }
      }
    }
  }
  costs.run_overhead_us = Median(std::move(overheads));
  std::vector<double> factor(num_devices, 1.0), cold_us(num_devices, 0.0), co_run(num_devices, 1.0);
  // The mean gap of each kind; 0 where the probes had none.
  std::vector<std::array<double, 2>> gap_us(num_devices, {0, 0});
  for (size_t d = 0; d < num_devices; ++d) {
    for (size_t k = 0; k < 2; ++k) {
      if (gap_count[d][k] > 0) gap_us[d][k] = gap_sum_us[d][k] / gap_count[d][k];
    }
  }
  for (size_t d = 0; d < num_devices; ++d) {
    if (measured[d].empty()) continue;
    // The cold start over every plan on the device (the more plans, the steadier); then, when
    // it ran plans both alone and beside other devices, the factor from the plans alone (the
    // geometric mean of what is left after the cold start) and the co-run factor from the
    // others: each of them took x = (measured - cold) / (factor x predicted) = 1 + g x s, s the
    // share of its predicted time that overlapped another device's work, and g is their least
    // squares fit. A HEFT plan whose devices take turns pays little of it, a partition-only
    // plan all of it; one factor over whole plans overcharged the first and undercharged the
    // second.
    DeviceRunFit fit = FitDeviceRun(measured[d], predicted[d]);
    double alone_log_sum = 0;
    int alone = 0;
    for (size_t p = 0; p < measured[d].size(); ++p) {
      if (co_running[d][p]) continue;
      alone_log_sum += std::log((measured[d][p] - fit.cold_us) / predicted[d][p]);
      ++alone;
    }
    const bool beside_others =
        std::find(co_running[d].begin(), co_running[d].end(), true) != co_running[d].end();
    if (alone > 0 && beside_others) {
      fit.factor = std::exp(alone_log_sum / alone);
      double sum_sx = 0, sum_ss = 0;
      for (size_t p = 0; p < measured[d].size(); ++p) {
        if (!co_running[d][p]) continue;
        const double x = (measured[d][p] - fit.cold_us) / (fit.factor * predicted[d][p]);
        const double s = overlapped[d][p];
        sum_sx += s * (x - 1);
        sum_ss += s * s;
      }
      if (sum_ss > kMinOverlapSquares) {
        co_run[d] = std::clamp(1 + sum_sx / sum_ss, kMinCoRunFactor, kMaxCoRunFactor);
      }
    }
    factor[d] = fit.factor;
    cold_us[d] = fit.cold_us;
    costs.in_run.push_back(
        {.device = device_names[d],
         .measured_us = std::accumulate(measured[d].begin(), measured[d].end(), 0.0),
         .predicted_us = std::accumulate(predicted[d].begin(), predicted[d].end(), 0.0),
         .factor = fit.factor,
         .cold_us = fit.cold_us,
         .co_run_factor = co_run[d],
         .partial_sum_ns = partial_sum_ns[d],
         .combines = combines[d],
         .gap_us = gap_us[d][0],
         .gaps = static_cast<int>(gap_count[d][0]),
         .synced_gap_us = gap_us[d][1],
         .synced_gaps = static_cast<int>(gap_count[d][1])});
  }
  // Per multi-device probe, its median measured span, and its timed runs with each subtask
  // lasting what the planners see (the factor alone; they charge no combine, so the sync cost
  // holds it) and what a plan's prediction uses (with the co-run factor over its overlapped
  // share and the combines).
  std::vector<double> spans;
  using Runs = std::vector<std::vector<executor::runtime::SubtaskTiming>>;
  std::vector<Runs> as_planned, as_predicted;
  for (const ProbeResult* probe : multi) {
    const ProbeResult& r = *probe;
    const std::vector<std::vector<double>>& run_combine_us = subtask_combine_us[index_of(r)];
    std::vector<double> v;
    for (const RunBreakdown& b : r.breakdowns) v.push_back(b.span_us());
    spans.push_back(Median(std::move(v)));
    costs.multi_device_measured_us += spans.back();
    as_planned.emplace_back();
    as_predicted.emplace_back();
    for (size_t i = 0; i < r.timings.size(); ++i) {
      as_planned.back().push_back(AsPredicted(r.schedule, r.timings[i], factor, cold_us));
      as_predicted.back().push_back(
          AsPredicted(r.schedule, r.timings[i], factor, cold_us, run_combine_us[i], co_run));
    }
  }
  // The median replay of each probe's runs with `sync` between devices.
  auto replayed_with = [&](const std::vector<Runs>& runs, const SyncCost& sync,
                           std::span<const std::array<double, 2>> gaps = {}) {
    std::vector<double> out;
    for (size_t i = 0; i < multi.size(); ++i) {
      std::vector<double> v;
      for (const auto& timings : runs[i]) {
        v.push_back(ReplayUs(*multi[i]->graph, timings, sync, gaps));
      }
      out.push_back(Median(std::move(v)));
    }
    return out;
  };
  auto syncs = [&](int from, int to) {
    return sync_devices[static_cast<size_t>(from)] && sync_devices[static_cast<size_t>(to)];
  };
  auto replayed = [&](double c) {
    return replayed_with(as_planned,
                         [&](int from, int to, double) { return syncs(from, to) ? c : 0.0; });
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
  // The hand-offs by wait: per ordered pair of sync devices, the median delay of the probes'
  // waits (every timed run) by whether the waiter had been idle past the runtime's spin.
  constexpr double kWindowUs = executor::runtime::CoExecutionRuntime::kSpinNs / 1e3;
  const size_t pairs = num_devices * num_devices;
  std::vector<std::vector<double>> spinning(pairs), parked(pairs);
  for (const ProbeResult* r : multi) {
    for (const RunBreakdown& b : r->breakdowns) {
      for (const CrossDelay& x : b.cross_delays) {
        const size_t pair =
            static_cast<size_t>(x.from_device) * num_devices + static_cast<size_t>(x.to_device);
        (x.idle_us < kWindowUs ? spinning : parked)[pair].push_back(x.delay_us);
      }
    }
  }
  // A kind of wait seen too rarely costs what the pair's waits cost, or with too few of those
  // too, the planners' constant.
  constexpr auto kMinWaits = static_cast<size_t>(calibration::RunCosts::kMinHandOffWaits);
  auto hand_off_us = [&](const std::vector<double>& kind, const std::vector<double>& other) {
    if (kind.size() >= kMinWaits) return Median(kind);
    std::vector<double> all = kind;
    all.insert(all.end(), other.begin(), other.end());
    return all.size() >= kMinWaits ? Median(std::move(all)) : sync_us;
  };
  std::vector<predictor::host_model::HostLatencyModel::Device::HandOff> hand_offs(pairs);
  for (size_t a = 0; a < num_devices; ++a) {
    for (size_t b = 0; b < num_devices; ++b) {
      if (a == b || !syncs(static_cast<int>(a), static_cast<int>(b)) || multi.empty()) continue;
      const size_t pair = a * num_devices + b;
      hand_offs[pair] = {.window_us = kWindowUs,
                         .spinning_us = hand_off_us(spinning[pair], parked[pair]),
                         .parked_us = hand_off_us(parked[pair], spinning[pair])};
      const auto& h = hand_offs[pair];
      costs.sync.push_back({.from = device_names[a],
                            .to = device_names[b],
                            .us = sync_us,
                            .window_us = h.window_us,
                            .spinning_us = h.spinning_us,
                            .parked_us = h.parked_us,
                            .spinning_waits = static_cast<int>(spinning[pair].size()),
                            .parked_waits = static_cast<int>(parked[pair].size())});
    }
  }
  // What the probes take replayed as a plan's latency is predicted (scheduler::RetimeByWaits).
  for (double r : replayed_with(
           as_predicted,
           [&](int from, int to, double idle_us) {
             const size_t pair = static_cast<size_t>(from) * num_devices + static_cast<size_t>(to);
             return idle_us <= 0 ? 0.0 : hand_offs[pair].CostUs(idle_us);
           },
           gap_us)) {
    costs.multi_device_hand_off_replay_us += r;
  }
  return costs;
}

}  // namespace psched::calibration
