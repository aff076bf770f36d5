// The busy intervals of one device, for insertion-based list scheduling (HEFT's policy:
// a task may fill an idle gap between already scheduled tasks if it fits entirely).
//
// Intervals are half-open [start, end), disjoint and sorted. Insert/Erase return and take
// positions so a tentative placement (lookahead) can be undone in LIFO order. Reuses its
// capacity across Clear. Not thread-safe.
#pragma once

#include <algorithm>
#include <utility>
#include <vector>

namespace psched::scheduler {

class DeviceTimeline {
 public:
  void Clear() {
    busy_.clear();
    max_gap_ = 0;
  }
  // The earliest start >= ready of an interval of `duration` that overlaps nothing: the
  // first gap that fits, else the end of the last interval.
  double EarliestStart(double ready, double duration) const;
  // REQUIRES: [start, end) overlaps no interval. Returns its position.
  int Insert(double start, double end);
  // Adds an interval after every existing one; false (and nothing added) when it would
  // start before the last one ends. O(1): for loading an already ordered device.
  bool Append(double start, double end) {
    if (!busy_.empty() && start < busy_.back().second) return false;
    max_gap_ = std::max(max_gap_, start - AvailableAt());
    busy_.emplace_back(start, end);
    return true;
  }
  void Erase(int position);
  // End of the last busy interval; 0 when idle.
  double AvailableAt() const { return busy_.empty() ? 0.0 : busy_.back().second; }
  int size() const { return static_cast<int>(busy_.size()); }

 private:
  std::vector<std::pair<double, double>> busy_;
  // An upper bound on every idle gap before the last interval (the leading gap from 0
  // included), so a task longer than this fills no gap and goes after the last interval.
  // Inserting into a gap only shrinks gaps; adding at the end or erasing in the middle
  // can grow one, and updates it.
  double max_gap_ = 0;
};

}  // namespace psched::scheduler
