#include "scheduler/device_timeline.h"

#include <algorithm>

namespace psched::scheduler {

double DeviceTimeline::EarliestStart(double ready, double duration) const {
  // Ends are sorted too (disjoint intervals): skip everything that ends by `ready`.
  auto it =
      std::upper_bound(busy_.begin(), busy_.end(), ready,
                       [](double t, const std::pair<double, double>& b) { return t < b.second; });
  double candidate = ready;
  for (; it != busy_.end(); ++it) {
    if (candidate + duration <= it->first) return candidate;
    candidate = std::max(candidate, it->second);
  }
  return candidate;
}

int DeviceTimeline::Insert(double start, double end) {
  auto it =
      std::upper_bound(busy_.begin(), busy_.end(), start,
                       [](double t, const std::pair<double, double>& b) { return t < b.first; });
  const int position = static_cast<int>(it - busy_.begin());
  if (it == busy_.end()) max_gap_ = std::max(max_gap_, start - AvailableAt());
  busy_.insert(it, {start, end});
  return position;
}

void DeviceTimeline::Erase(int position) {
  busy_.erase(busy_.begin() + position);
  if (position == static_cast<int>(busy_.size())) return;  // the gap before it is now trailing
  double previous_end = 0;
  max_gap_ = 0;
  for (const auto& [start, end] : busy_) {
    max_gap_ = std::max(max_gap_, start - previous_end);
    previous_end = end;
  }
}

}  // namespace psched::scheduler
