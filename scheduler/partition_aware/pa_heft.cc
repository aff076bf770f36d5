#include "scheduler/partition_aware/pa_heft.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <utility>
#include <vector>

#include "scheduler/partition_aware/candidate_plans.h"
#include "scheduler/partition_aware/placement_state.h"

namespace psched::scheduler::partition_aware {
namespace {

struct Choice {
  PartitionPlan plan;
  std::vector<int> devices;
  std::vector<double> starts;
  double finish = std::numeric_limits<double>::infinity();
};

}  // namespace

absl::StatusOr<Schedule> PaHeftScheduler::Plan(const Problem& problem,
                                               const SchedulerOptions& options) const {
  const int n = problem.num_ops();
  const int devices = problem.num_devices();
  const int max_active = PlanSlots(problem);
  std::vector<double> cost(static_cast<size_t>(n));
  std::array<model::SplitAxis, 3> axes;
  for (OpId op = 0; op < n; ++op) {
    if (max_active >= 2 && SplitAxes(problem, op, axes) > 0) {
      cost[static_cast<size_t>(op)] = MinLocalLatencyPlan(problem, op).local_cost_us;
    } else {
      double sum = 0;
      for (int d = 0; d < devices; ++d) sum += problem.LatencyUs(op, model::SplitAxis::kNone, 1, d);
      cost[static_cast<size_t>(op)] = sum / devices;
    }
  }
  std::vector<double> rank(static_cast<size_t>(n));
  for (OpId op = n - 1; op >= 0; --op) {
    const auto succs = problem.succs(op);
    const auto transfer = problem.succ_transfer_us(op);
    double tail = 0;
    for (size_t k = 0; k < succs.size(); ++k) {
      tail = std::max(tail, problem.MeanTransferUs(transfer[k]) + rank[static_cast<size_t>(succs[k])]);
    }
    rank[static_cast<size_t>(op)] = cost[static_cast<size_t>(op)] + tail;
  }

  PlacementState state(problem);
  std::vector<int> missing(static_cast<size_t>(n));
  std::priority_queue<std::pair<double, int>> ready;  // (rank, -op)
  for (OpId op = 0; op < n; ++op) {
    missing[static_cast<size_t>(op)] = static_cast<int>(problem.preds(op).size());
    if (missing[static_cast<size_t>(op)] == 0) ready.emplace(rank[static_cast<size_t>(op)], -op);
  }
  std::vector<double> data_ready(static_cast<size_t>(devices));
  std::vector<double> offsets(static_cast<size_t>(devices));
  std::vector<int64_t> work(static_cast<size_t>(devices));
  Choice best, candidate;
  while (!ready.empty()) {
    const OpId op = -ready.top().second;
    ready.pop();
    for (int d = 0; d < devices; ++d) data_ready[static_cast<size_t>(d)] = state.DataReady(op, d);
    best.finish = std::numeric_limits<double>::infinity();
    for (int d = 0; d < devices; ++d) {
      const double w = problem.LatencyUs(op, model::SplitAxis::kNone, 1, d);
      const double start = state.timeline(d).EarliestStart(data_ready[static_cast<size_t>(d)], w);
      if (start + w < best.finish) {
        best.plan = PartitionPlan::None();
        best.devices.assign(1, d);
        best.starts.assign(1, start);
        best.finish = start + w;
      }
    }
    const int num_axes = max_active >= 2 ? SplitAxes(problem, op, axes) : 0;
    for (int k = 0; k < num_axes; ++k) {
      const model::SplitAxis axis = axes[static_cast<size_t>(k)];
      for (int variant = 0; variant < 2; ++variant) {
        for (int d = 0; d < devices; ++d) {
          offsets[static_cast<size_t>(d)] =
              variant == 0 ? std::max(data_ready[static_cast<size_t>(d)], state.timeline(d).AvailableAt())
                           : data_ready[static_cast<size_t>(d)];
        }
        MinMaxDivision(
            problem.WorkSize(op, axis), problem.alignment(axis), max_active, offsets,
            [&](int slot, int64_t w) { return problem.LatencyUs(op, axis, w, slot); }, work);
        candidate.plan.axis = axis;
        candidate.plan.work.clear();
        candidate.devices.clear();
        candidate.starts.clear();
        candidate.finish = 0;
        for (int d = 0; d < devices; ++d) {
          const int64_t u = work[static_cast<size_t>(d)];
          if (u == 0) continue;
          const double w = problem.LatencyUs(op, axis, u, d);
          const double start = state.timeline(d).EarliestStart(data_ready[static_cast<size_t>(d)], w);
          candidate.plan.work.push_back(u);
          candidate.devices.push_back(d);
          candidate.starts.push_back(start);
          candidate.finish = std::max(candidate.finish, start + w);
        }
        // One active slot is the unpartitioned op, already covered on every device.
        if (candidate.plan.work.size() >= 2 && candidate.finish < best.finish) std::swap(best, candidate);
      }
    }
    state.PlaceOp(op, best.plan, best.devices, best.starts);
    for (OpId s : problem.succs(op)) {
      if (--missing[static_cast<size_t>(s)] == 0) ready.emplace(rank[static_cast<size_t>(s)], -s);
    }
  }
  return std::move(state.schedule());
}

}  // namespace psched::scheduler::partition_aware
