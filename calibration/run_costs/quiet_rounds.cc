#include "calibration/run_costs/quiet_rounds.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "predictor/error_summary.h"

namespace psched::calibration {

RoundSelection QuietestRounds(std::span<const ProbeResult> results) {
  RoundSelection selection;
  const size_t rounds = results.empty() ? 0 : results.front().breakdowns.size();
  auto all_rounds = [&] {
    selection.kept.resize(rounds);
    std::iota(selection.kept.begin(), selection.kept.end(), 0);
    return selection;
  };
  for (const ProbeResult& r : results) {
    if (r.breakdowns.size() != rounds) return all_rounds();
    for (const RunBreakdown& b : r.breakdowns) {
      if (!(b.wall_us > 0)) return all_rounds();
    }
  }
  std::vector<double> log_sum(rounds, 0.0);
  for (const ProbeResult& r : results) {
    std::vector<double> walls;
    for (const RunBreakdown& b : r.breakdowns) walls.push_back(b.wall_us);
    const double median = predictor::Median(walls);
    for (size_t i = 0; i < rounds; ++i) log_sum[i] += std::log(walls[i] / median);
  }
  for (double s : log_sum) {
    selection.slowness.push_back(std::exp(s / static_cast<double>(results.size())));
  }
  std::vector<int> order(rounds);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return selection.slowness[static_cast<size_t>(a)] < selection.slowness[static_cast<size_t>(b)];
  });
  const size_t keep = (rounds + 1) / 2;
  selection.kept.assign(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep));
  std::sort(selection.kept.begin(), selection.kept.end());
  for (size_t i = 0; i < rounds; ++i) {
    double& slowest = i < keep ? selection.slowest_kept : selection.slowest_dropped;
    slowest = std::max(slowest, selection.slowness[static_cast<size_t>(order[i])]);
  }
  return selection;
}

std::vector<ProbeResult> KeepRounds(std::span<const ProbeResult> results,
                                    std::span<const int> rounds) {
  std::vector<ProbeResult> out;
  for (const ProbeResult& r : results) {
    ProbeResult kept = r;
    kept.timings.clear();
    kept.breakdowns.clear();
    for (int i : rounds) {
      kept.timings.push_back(r.timings[static_cast<size_t>(i)]);
      kept.breakdowns.push_back(r.breakdowns[static_cast<size_t>(i)]);
    }
    out.push_back(std::move(kept));
  }
  return out;
}

}  // namespace psched::calibration
