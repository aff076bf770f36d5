#include "scheduler/partition_aware/placement_state.h"

#include <algorithm>

namespace psched::scheduler::partition_aware {

PlacementState::PlacementState(const Problem& problem)
    : problem_(problem),
      timelines_(static_cast<size_t>(problem.num_devices())),
      placed_end_(static_cast<size_t>(problem.num_ops()) * static_cast<size_t>(problem.num_devices()), -1.0),
      schedule_(problem.num_ops(), problem.num_devices()) {}

double PlacementState::DataReady(OpId op, int device) const {
  const auto preds = problem_.preds(op);
  const auto transfer = problem_.pred_transfer_us(op);
  const int devices = problem_.num_devices();
  double ready = 0;
  for (size_t k = 0; k < preds.size(); ++k) {
    for (int d = 0; d < devices; ++d) {
      const double end = placed_end_[static_cast<size_t>(preds[k]) * static_cast<size_t>(devices) +
                                     static_cast<size_t>(d)];
      if (end >= 0) ready = std::max(ready, end + problem_.EdgeCostUs(transfer[k], d, device));
    }
  }
  return ready;
}

void PlacementState::PlaceOp(OpId op, const PartitionPlan& plan, const std::vector<int>& devices,
                             const std::vector<double>& starts) {
  schedule_.SetPlan(op, plan);
  int64_t begin = 0;
  for (size_t q = 0; q < plan.work.size(); ++q) {
    const int64_t w = plan.work[q];
    if (w == 0) continue;
    const int d = devices[q];
    const double end = starts[q] + problem_.LatencyUs(op, plan.axis, w, d);
    timelines_[static_cast<size_t>(d)].Insert(starts[q], end);
    placed_end_[static_cast<size_t>(op) * static_cast<size_t>(problem_.num_devices()) +
                static_cast<size_t>(d)] = end;
    schedule_.Add(ScheduledSubtask{op, static_cast<int>(q), d, plan.axis, begin, begin + w, starts[q], end});
    begin += w;
  }
}

}  // namespace psched::scheduler::partition_aware
