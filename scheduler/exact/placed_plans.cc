#include "scheduler/exact/placed_plans.h"

#include <algorithm>
#include <limits>
#include <set>

#include "absl/strings/str_cat.h"

namespace psched::scheduler::exact {
namespace {

// Too many plans to list: the caller falls back or reports it.
absl::Status TooMany(const StageInstance& instance, int local, int64_t limit) {
  return absl::ResourceExhaustedError(
      absl::StrCat("exact: op ", instance.op(local), " (", instance.problem().op_name(instance.op(local)),
                   ") has more than ", limit, " placed plans"));
}

}  // namespace

absl::StatusOr<std::vector<PlacedPlan>> EnumeratePlacedPlans(const StageInstance& instance,
                                                             int local, int64_t limit) {
  const int D = instance.num_devices();
  const int K = instance.max_parts();
  std::vector<PlacedPlan> out;
  for (int ax = 0; ax < static_cast<int>(instance.space(local).size()); ++ax) {
    const OpAxis& a = instance.space(local)[static_cast<size_t>(ax)];
    std::set<std::vector<int64_t>> seen;
    PlacedPlan p;
    p.axis = ax;
    p.work.assign(static_cast<size_t>(D), 0);
    p.last.assign(static_cast<size_t>(D), false);
    p.slot.assign(static_cast<size_t>(D), -1);
    auto emit = [&]() -> absl::Status {
      if (!seen.insert(p.work).second) return absl::OkStatus();
      if (static_cast<int64_t>(out.size()) >= limit) return TooMany(instance, local, limit);
      out.push_back(p);
      return absl::OkStatus();
    };
    if (!a.grid()) {
      // Injective maps of slots to devices.
      const int slots = static_cast<int>(a.fixed.size());
      std::vector<int> device_of(static_cast<size_t>(slots), 0);
      auto rec = [&](auto&& self, int q, uint32_t used) -> absl::Status {
        if (q == slots) return emit();
        for (int d = 0; d < D; ++d) {
          if (used >> d & 1u) continue;
          p.work[static_cast<size_t>(d)] = a.fixed[static_cast<size_t>(q)];
          p.slot[static_cast<size_t>(d)] = q;
          if (absl::Status s = self(self, q + 1, used | 1u << d); !s.ok()) return s;
          p.work[static_cast<size_t>(d)] = 0;
          p.slot[static_cast<size_t>(d)] = -1;
        }
        return absl::OkStatus();
      };
      if (absl::Status s = rec(rec, 0, 0); !s.ok()) return s;
      continue;
    }
    // Compositions of `units` over the devices with 2..K non-zero parts; the last unit in
    // each non-zero part in turn when the grid clips.
    std::vector<int64_t> units(static_cast<size_t>(D), 0);
    auto rec = [&](auto&& self, int d, int64_t left, int parts) -> absl::Status {
      if (d == D - 1) {
        units[static_cast<size_t>(d)] = left;
        const int total_parts = parts + (left > 0 ? 1 : 0);
        if (total_parts < 2 || total_parts > K) return absl::OkStatus();
        // Without clipping every part is whole units: one plan (holder -1).
        for (int holder = a.clip == 0 ? -1 : 0; holder < D; ++holder) {
          if (holder >= 0 && units[static_cast<size_t>(holder)] == 0) continue;
          for (int e = 0; e < D; ++e) {
            const int64_t k = units[static_cast<size_t>(e)];
            p.last[static_cast<size_t>(e)] = e == holder;
            p.work[static_cast<size_t>(e)] = k == 0 ? 0 : a.Work(k, p.last[static_cast<size_t>(e)]);
          }
          if (absl::Status s = emit(); !s.ok()) return s;
          if (holder < 0) break;
        }
        return absl::OkStatus();
      }
      for (int64_t k = 0; k <= left; ++k) {
        units[static_cast<size_t>(d)] = k;
        if (absl::Status s = self(self, d + 1, left - k, parts + (k > 0 ? 1 : 0)); !s.ok()) return s;
      }
      return absl::OkStatus();
    };
    if (absl::Status s = rec(rec, 0, a.units, 0); !s.ok()) return s;
  }
  return out;
}

double OrderTimer::Time(const std::vector<const PlacedPlan*>& plans,
                        const std::vector<std::vector<int>>& orders) {
  const int n = instance_.num_ops();
  const int D = instance_.num_devices();
  const size_t stride = static_cast<size_t>(D);
  starts_.resize(static_cast<size_t>(n));
  for (auto& row : starts_) row.assign(stride, 0.0);
  end_.assign(static_cast<size_t>(n) * stride, -1.0);
  remaining_.assign(static_cast<size_t>(n), 0);
  size_t total = 0;
  for (int d = 0; d < D; ++d) {
    for (int l : orders[static_cast<size_t>(d)]) ++remaining_[static_cast<size_t>(l)];
    total += orders[static_cast<size_t>(d)].size();
  }
  position_.assign(stride, 0);
  size_t done = 0;
  double makespan = 0;
  bool progress = true;
  while (done < total && progress) {
    progress = false;
    for (int d = 0; d < D; ++d) {
      const std::vector<int>& order = orders[static_cast<size_t>(d)];
      size_t& at = position_[static_cast<size_t>(d)];
      if (at >= order.size()) continue;
      const int l = order[at];
      double ready = at == 0 ? 0.0 : end_[static_cast<size_t>(order[at - 1]) * stride + static_cast<size_t>(d)];
      ready = std::max(ready, instance_.ExternalReady(l, d));
      const auto preds = instance_.preds(l);
      const auto transfer = instance_.pred_transfer(l);
      bool inputs = true;
      for (size_t k = 0; k < preds.size() && inputs; ++k) {
        const int p = preds[k];
        inputs = remaining_[static_cast<size_t>(p)] == 0;
        for (int e = 0; e < D && inputs; ++e) {
          const double pe = end_[static_cast<size_t>(p) * stride + static_cast<size_t>(e)];
          if (pe >= 0) ready = std::max(ready, pe + instance_.EdgeCost(transfer[k], e, d));
        }
      }
      if (!inputs) continue;
      const PlacedPlan& plan = *plans[static_cast<size_t>(l)];
      const double duration = instance_.Duration(l, plan.axis, plan.work[static_cast<size_t>(d)], d);
      const double start = instance_.Fit(d, ready, duration);
      starts_[static_cast<size_t>(l)][static_cast<size_t>(d)] = start;
      end_[static_cast<size_t>(l) * stride + static_cast<size_t>(d)] = start + duration;
      makespan = std::max(makespan, start + duration);
      --remaining_[static_cast<size_t>(l)];
      ++at;
      ++done;
      progress = true;
    }
  }
  return done == total ? makespan : std::numeric_limits<double>::infinity();
}

StageSolution SolutionFromPlacedPlans(const StageInstance& instance,
                                      const std::vector<const PlacedPlan*>& plans,
                                      const std::vector<std::vector<double>>& starts) {
  StageSolution sol;
  sol.makespan_us = 0;
  const int D = instance.num_devices();
  for (int l = 0; l < instance.num_ops(); ++l) {
    const PlacedPlan& p = *plans[static_cast<size_t>(l)];
    const OpAxis& a = instance.space(l)[static_cast<size_t>(p.axis)];
    // Devices in slot order.
    std::vector<int> order;
    for (int d = 0; d < D; ++d) {
      if (p.work[static_cast<size_t>(d)] > 0) order.push_back(d);
    }
    if (a.grid()) {
      std::stable_sort(order.begin(), order.end(), [&](int x, int y) {
        return !p.last[static_cast<size_t>(x)] && p.last[static_cast<size_t>(y)];
      });
    } else {
      std::sort(order.begin(), order.end(), [&](int x, int y) {
        return p.slot[static_cast<size_t>(x)] < p.slot[static_cast<size_t>(y)];
      });
    }
    PartitionPlan plan;
    plan.axis = a.axis;
    plan.work.clear();
    int64_t begin = 0;
    for (size_t q = 0; q < order.size(); ++q) {
      const int d = order[q];
      const int64_t w = p.work[static_cast<size_t>(d)];
      const double start = starts[static_cast<size_t>(l)][static_cast<size_t>(d)];
      const double end = start + instance.Duration(l, p.axis, w, d);
      sol.subtasks.push_back(ScheduledSubtask{instance.op(l), static_cast<int>(q), d, a.axis, begin,
                                              begin + w, start, end});
      sol.makespan_us = std::max(sol.makespan_us, end);
      plan.work.push_back(w);
      begin += w;
    }
    sol.plans.push_back(plan.work.size() <= 1 ? PartitionPlan::None() : plan);
  }
  std::stable_sort(sol.subtasks.begin(), sol.subtasks.end(),
            [](const ScheduledSubtask& x, const ScheduledSubtask& y) { return x.start_us < y.start_us; });
  return sol;
}

}  // namespace psched::scheduler::exact
