#include "scheduler/co_run_overlap.h"

#include <algorithm>
#include <utility>

namespace psched::scheduler {
namespace {

// Sorted, disjoint [start, end) pairs covering the non-empty intervals given.
std::vector<std::pair<double, double>> Union(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<std::pair<double, double>> merged;
  for (const auto& [start, end] : spans) {
    if (!merged.empty() && start <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, end);
    } else {
      merged.emplace_back(start, end);
    }
  }
  return merged;
}

// Length of [start, end) covered by `busy` (sorted, disjoint).
double Covered(const std::vector<std::pair<double, double>>& busy, double start, double end) {
  // The first busy span that ends after `start`.
  auto it =
      std::upper_bound(busy.begin(), busy.end(), start,
                       [](double t, const std::pair<double, double>& s) { return t < s.second; });
  double covered = 0;
  for (; it != busy.end() && it->first < end; ++it) {
    covered += std::min(end, it->second) - std::max(start, it->first);
  }
  return covered;
}

}  // namespace

std::vector<double> OverlapFractions(std::span<const BusyInterval> intervals) {
  int num_devices = 0;
  for (const BusyInterval& i : intervals) num_devices = std::max(num_devices, i.device + 1);
  // Per device: the union of every other device's non-empty intervals.
  std::vector<std::vector<std::pair<double, double>>> others(static_cast<size_t>(num_devices));
  for (int d = 0; d < num_devices; ++d) {
    std::vector<std::pair<double, double>> spans;
    for (const BusyInterval& i : intervals) {
      if (i.device != d && i.end > i.start) spans.emplace_back(i.start, i.end);
    }
    others[static_cast<size_t>(d)] = Union(std::move(spans));
  }
  std::vector<double> fractions(intervals.size(), 0.0);
  for (size_t k = 0; k < intervals.size(); ++k) {
    const BusyInterval& i = intervals[k];
    if (i.end <= i.start) continue;
    const double covered = Covered(others[static_cast<size_t>(i.device)], i.start, i.end);
    fractions[k] = std::clamp(covered / (i.end - i.start), 0.0, 1.0);
  }
  return fractions;
}

}  // namespace psched::scheduler
