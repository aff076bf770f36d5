#include "scheduler/exact/brute_force.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "scheduler/exact/placed_plans.h"

namespace psched::scheduler::exact {
namespace {

double Factorial(int k) {
  double f = 1;
  for (int i = 2; i <= k; ++i) f *= i;
  return f;
}

}  // namespace

absl::StatusOr<StageSolution> SolveBruteForce(const StageInstance& instance, int64_t limit) {
  const int n = instance.num_ops();
  const int D = instance.num_devices();
  std::vector<std::vector<PlacedPlan>> plans(static_cast<size_t>(n));
  double combinations = 1;
  for (int l = 0; l < n; ++l) {
    absl::StatusOr<std::vector<PlacedPlan>> p = EnumeratePlacedPlans(instance, l, limit);
    if (!p.ok()) return p.status();
    plans[static_cast<size_t>(l)] = *std::move(p);
    combinations *= static_cast<double>(plans[static_cast<size_t>(l)].size());
  }
  // The exact number of device orders over all combinations (a cheap first pass).
  {
    double orders = 0;
    std::vector<size_t> c(static_cast<size_t>(n), 0);
    while (combinations * 1.0 <= static_cast<double>(limit)) {
      std::vector<int> count(static_cast<size_t>(D), 0);
      for (int l = 0; l < n; ++l) {
        const PlacedPlan& p = plans[static_cast<size_t>(l)][c[static_cast<size_t>(l)]];
        for (int d = 0; d < D; ++d) count[static_cast<size_t>(d)] += p.work[static_cast<size_t>(d)] > 0 ? 1 : 0;
      }
      double product = 1;
      for (int k : count) product *= Factorial(k);
      orders += product;
      if (orders > static_cast<double>(limit)) break;
      int l = 0;
      while (l < n && ++c[static_cast<size_t>(l)] == plans[static_cast<size_t>(l)].size()) {
        c[static_cast<size_t>(l)] = 0;
        ++l;
      }
      if (l == n) break;
    }
    if (combinations > static_cast<double>(limit) || orders > static_cast<double>(limit)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          "brute force: ", combinations, " plan combinations of ", n,
          " ops and their subtask orders exceed the limit of ", limit));
    }
  }

  StageSolution best;
  std::vector<size_t> choice(static_cast<size_t>(n), 0);
  std::vector<const PlacedPlan*> chosen(static_cast<size_t>(n), nullptr);
  std::vector<std::vector<int>> orders(static_cast<size_t>(D));
  OrderTimer timer(instance);
  // Every permutation of every device's ops (odometer over next_permutation).
  auto all_orders = [&]() {
    for (auto& order : orders) std::sort(order.begin(), order.end());
    while (true) {
      const double makespan = timer.Time(chosen, orders);
      if (makespan < best.makespan_us) best = SolutionFromPlacedPlans(instance, chosen, timer.starts());
      int d = 0;
      while (d < D && !std::next_permutation(orders[static_cast<size_t>(d)].begin(),
                                             orders[static_cast<size_t>(d)].end())) {
        ++d;
      }
      if (d == D) return;
    }
  };

  while (true) {
    for (auto& order : orders) order.clear();
    for (int l = 0; l < n; ++l) {
      chosen[static_cast<size_t>(l)] = &plans[static_cast<size_t>(l)][choice[static_cast<size_t>(l)]];
      for (int d = 0; d < D; ++d) {
        if (chosen[static_cast<size_t>(l)]->work[static_cast<size_t>(d)] > 0) orders[static_cast<size_t>(d)].push_back(l);
      }
    }
    all_orders();
    int l = 0;
    while (l < n && ++choice[static_cast<size_t>(l)] == plans[static_cast<size_t>(l)].size()) {
      choice[static_cast<size_t>(l)] = 0;
      ++l;
    }
    if (l == n) break;
  }
  if (n == 0) best.makespan_us = 0;
  return best;
}

}  // namespace psched::scheduler::exact
