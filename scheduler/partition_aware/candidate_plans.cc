#include "scheduler/partition_aware/candidate_plans.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace psched::scheduler::partition_aware {
namespace {

constexpr int kMaxSlots = 8;
constexpr double kInf = std::numeric_limits<double>::infinity();

// Number of nondecreasing sequences of `length` values drawn from `points` grid points.
double Sequences(double points, int length) {
  double n = 1;
  for (int k = 1; k <= length; ++k) n = n * (points + k - 1) / k;
  return n;
}

// Exhaustive search over nondecreasing cut sequences, cut k drawn from candidates[k].
class CutSearch {
 public:
  CutSearch(int64_t total, int64_t alignment, int max_active, std::span<const double> offsets,
            absl::FunctionRef<double(int, int64_t)> cost)
      : total_(total), alignment_(alignment), max_active_(max_active), offsets_(offsets),
        cost_(cost), slots_(static_cast<int>(offsets.size())) {}

  // Tries every sequence over `candidates` (one ascending list per inner cut).
  void Run(const std::vector<std::vector<int64_t>>& candidates) {
    candidates_ = &candidates;
    Recurse(0, 0, 0, -kInf, 0);
  }

  double best() const { return best_; }
  const std::array<int64_t, kMaxSlots>& best_cuts() const { return best_cuts_; }
  int64_t Position(int64_t cut) const { return std::min(cut * alignment_, total_); }

 private:
  void Recurse(int k, int64_t prev_cut, int64_t prev_pos, double running, int active) {
    if (k == slots_ - 1) {
      const int64_t w = total_ - prev_pos;
      double m = running;
      if (w > 0) {
        if (active + 1 > max_active_) return;
        m = std::max(m, offsets_[static_cast<size_t>(k)] + cost_(k, w));
      }
      if (m < best_) {
        best_ = m;
        best_cuts_ = cuts_;
      }
      return;
    }
    for (int64_t c : (*candidates_)[static_cast<size_t>(k)]) {
      if (c < prev_cut) continue;
      const int64_t pos = Position(c);
      const int64_t w = pos - prev_pos;
      double m = running;
      int a = active;
      if (w > 0) {
        if (++a > max_active_) continue;
        m = std::max(m, offsets_[static_cast<size_t>(k)] + cost_(k, w));
      }
      if (m >= best_) continue;  // every extension keeps at least this maximum
      cuts_[static_cast<size_t>(k)] = c;
      Recurse(k + 1, c, pos, m, a);
    }
  }

  int64_t total_;
  int64_t alignment_;
  int max_active_;
  std::span<const double> offsets_;
  absl::FunctionRef<double(int, int64_t)> cost_;
  int slots_;
  const std::vector<std::vector<int64_t>>* candidates_ = nullptr;
  std::array<int64_t, kMaxSlots> cuts_{};
  std::array<int64_t, kMaxSlots> best_cuts_{};
  double best_ = kInf;
};

// Grid points lo, lo + step, ... below hi, then hi.
std::vector<int64_t> Grid(int64_t lo, int64_t hi, int64_t step) {
  std::vector<int64_t> g;
  for (int64_t c = lo; c < hi; c += step) g.push_back(c);
  g.push_back(hi);
  return g;
}

PlacedPlan FromDivision(model::SplitAxis axis, std::span<const int64_t> work,
                        std::span<const int> devices, double cost) {
  PlacedPlan out;
  out.local_cost_us = cost;
  out.plan.axis = axis;
  out.plan.work.clear();
  for (size_t q = 0; q < work.size(); ++q) {
    if (work[q] == 0) continue;
    out.plan.work.push_back(work[q]);
    out.devices.push_back(devices[q]);
  }
  if (out.plan.work.size() == 1) out.plan = PartitionPlan::None();
  return out;
}

// Devices with a kernel for the parts of `op` split along `axis`.
int CapableDevices(const Problem& problem, OpId op, model::SplitAxis axis) {
  int n = 0;
  for (int d = 0; d < problem.num_devices(); ++d) n += problem.DeviceRuns(op, d, axis) ? 1 : 0;
  return n;
}

PlacedPlan BestUnpartitioned(const Problem& problem, OpId op) {
  int best = 0;
  for (int d = 1; d < problem.num_devices(); ++d) {
    if (problem.LatencyUs(op, model::SplitAxis::kNone, 1, d) <
        problem.LatencyUs(op, model::SplitAxis::kNone, 1, best)) {
      best = d;
    }
  }
  return PlacedPlan{PartitionPlan::None(), {best},
                    problem.LatencyUs(op, model::SplitAxis::kNone, 1, best)};
}

}  // namespace

int SplitAxes(const Problem& problem, OpId op, std::array<model::SplitAxis, 3>& axes) {
  int n = 0;
  for (model::SplitAxis a : model::kAllSplitAxes) {
    if (a != model::SplitAxis::kNone && problem.WorkSize(op, a) > 0) axes[static_cast<size_t>(n++)] = a;
  }
  return n;
}

int PlanSlots(const Problem& problem) {
  return std::min(problem.max_splits(), problem.num_devices());
}

double MinMaxDivision(int64_t total, int64_t alignment, int max_active,
                      std::span<const double> offsets,
                      absl::FunctionRef<double(int slot, int64_t work)> cost,
                      std::span<int64_t> work) {
  const int slots = static_cast<int>(offsets.size());
  const int64_t units = (total + alignment - 1) / alignment;
  CutSearch search(total, alignment, max_active, offsets, cost);
  const int inner = slots - 1;
  std::vector<std::vector<int64_t>> candidates(static_cast<size_t>(inner));
  if (inner > 0) {
    // The coarsest step whose full grid fits the budget.
    int64_t step = 1;
    while (Sequences(static_cast<double>(units / step + 2), inner) >
           static_cast<double>(kExhaustiveBudget)) {
      ++step;
    }
    for (auto& c : candidates) c = Grid(0, units, step);
    search.Run(candidates);
    const int64_t per_dim =
        std::max<int64_t>(3, static_cast<int64_t>(std::floor(
                                 std::pow(static_cast<double>(kExhaustiveBudget), 1.0 / inner))));
    while (step > 1) {
      const int64_t finer = std::max<int64_t>(1, (2 * step + per_dim - 2) / (per_dim - 1));
      const auto cuts = search.best_cuts();
      for (int k = 0; k < inner; ++k) {
        const int64_t c = cuts[static_cast<size_t>(k)];
        candidates[static_cast<size_t>(k)] =
            Grid(std::max<int64_t>(0, c - step), std::min(units, c + step), finer);
      }
      search.Run(candidates);
      step = finer;
    }
  } else {
    search.Run(candidates);
  }
  int64_t prev = 0;
  const auto cuts = search.best_cuts();
  for (int k = 0; k < slots; ++k) {
    const int64_t pos = k < inner ? search.Position(cuts[static_cast<size_t>(k)]) : total;
    work[static_cast<size_t>(k)] = pos - prev;
    prev = pos;
  }
  return search.best();
}

double OspdLocalCostUs(const Problem& problem, OpId op, const PartitionPlan& plan,
                       std::span<const int> devices) {
  double worst = 0;
  for (size_t q = 0; q < plan.work.size(); ++q) {
    if (plan.work[q] == 0) continue;
    worst = std::max(worst, problem.LatencyUs(op, plan.axis, plan.work[q], devices[q]));
  }
  return worst;
}

PlacedPlan MinLocalLatencyPlan(const Problem& problem, OpId op) {
  PlacedPlan best = BestUnpartitioned(problem, op);
  const int devices = problem.num_devices();
  const int max_active = PlanSlots(problem);
  if (max_active < 2) return best;
  std::array<model::SplitAxis, 3> axes;
  const int num_axes = SplitAxes(problem, op, axes);
  std::vector<double> offsets(static_cast<size_t>(devices), 0.0);
  std::vector<int64_t> work(static_cast<size_t>(devices));
  std::vector<int> identity(static_cast<size_t>(devices));
  std::iota(identity.begin(), identity.end(), 0);
  for (int k = 0; k < num_axes; ++k) {
    const model::SplitAxis axis = axes[static_cast<size_t>(k)];
    const double cost = MinMaxDivision(
        problem.WorkSize(op, axis), problem.alignment(axis), max_active, offsets,
        [&](int slot, int64_t w) { return problem.LatencyUs(op, axis, w, slot); }, work);
    if (cost < best.local_cost_us) {
      PlacedPlan candidate = FromDivision(axis, work, identity, cost);
      if (candidate.plan.ActiveSubtasks() >= 2) best = std::move(candidate);
    }
  }
  return best;
}

PlacedPlan EqualSizePlan(const Problem& problem, OpId op) {
  PlacedPlan best = BestUnpartitioned(problem, op);
  const int slots = PlanSlots(problem);
  if (slots < 2) return best;
  std::vector<int> by_speed(static_cast<size_t>(problem.num_devices()));
  std::iota(by_speed.begin(), by_speed.end(), 0);
  std::stable_sort(by_speed.begin(), by_speed.end(), [&](int a, int b) {
    return problem.LatencyUs(op, model::SplitAxis::kNone, 1, a) <
           problem.LatencyUs(op, model::SplitAxis::kNone, 1, b);
  });
  std::array<model::SplitAxis, 3> axes;
  const int num_axes = SplitAxes(problem, op, axes);
  std::vector<int> devices;
  std::vector<int64_t> work;
  for (int k = 0; k < num_axes; ++k) {
    const model::SplitAxis axis = axes[static_cast<size_t>(k)];
    // The fastest devices that have a kernel for the split (all of them but for CPU-only splits).
    devices.clear();
    for (int d : by_speed) {
      if (static_cast<int>(devices.size()) < slots && problem.DeviceRuns(op, d, axis)) {
        devices.push_back(d);
      }
    }
    const int parts = static_cast<int>(devices.size());
    if (parts < 2) continue;
    const int64_t total = problem.WorkSize(op, axis);
    work.assign(static_cast<size_t>(parts), 0);
    for (int q = 0; q < parts; ++q) {
      work[static_cast<size_t>(q)] = total / parts + (q < total % parts ? 1 : 0);
    }
    double cost = 0;
    for (int q = 0; q < parts; ++q) {
      if (work[static_cast<size_t>(q)] > 0) {
        cost = std::max(cost, problem.LatencyUs(op, axis, work[static_cast<size_t>(q)],
                                                devices[static_cast<size_t>(q)]));
      }
    }
    if (cost < best.local_cost_us) {
      PlacedPlan candidate = FromDivision(axis, work, devices, cost);
      if (candidate.plan.ActiveSubtasks() >= 2) best = std::move(candidate);
    }
  }
  return best;
}

void PlanSampler::Sample(const Problem& problem, OpId op, std::mt19937_64& rng, PartitionPlan& out) {
  std::array<model::SplitAxis, 3> axes;
  const int num_axes = SplitAxes(problem, op, axes);
  const int slots = slots_ > 0 ? std::min(slots_, PlanSlots(problem)) : PlanSlots(problem);
  const int choice =
      num_axes == 0 || slots < 2
          ? 0
          : static_cast<int>(std::uniform_int_distribution<int>(0, num_axes)(rng));
  if (choice == 0) {
    out.axis = model::SplitAxis::kNone;
    out.work.assign(1, 1);
    return;
  }
  const model::SplitAxis axis = axes[static_cast<size_t>(choice - 1)];
  // Parts run on distinct devices: no more than the devices with a kernel for the split (the
  // CPU-only splits, device_capability.h), so that no drawn plan is infeasible for that reason.
  const int k = std::min(slots, CapableDevices(problem, op, axis));
  if (k < 2) {
    out.axis = model::SplitAxis::kNone;
    out.work.assign(1, 1);
    return;
  }
  const int64_t total = problem.WorkSize(op, axis);
  const int64_t alignment = alignment_ > 0 ? alignment_ : problem.alignment(axis);
  const int64_t units = (total + alignment - 1) / alignment;
  // Stars and bars: K - 1 distinct bar positions among N + K - 1 places give a uniform
  // composition of N units into K ordered (possibly empty) parts.
  const int64_t places = units + k - 1;
  picks_.clear();
  std::uniform_int_distribution<int64_t> place(0, places - 1);
  while (static_cast<int>(picks_.size()) < k - 1) {
    const int64_t p = place(rng);
    if (std::find(picks_.begin(), picks_.end(), p) == picks_.end()) picks_.push_back(p);
  }
  std::sort(picks_.begin(), picks_.end());
  out.axis = axis;
  out.work.clear();
  int64_t prev_pos = 0;
  int64_t prev_bar = -1;
  int64_t cum_units = 0;
  for (int q = 0; q < k; ++q) {
    const int64_t bar = q < k - 1 ? picks_[static_cast<size_t>(q)] : places;
    cum_units += bar - prev_bar - 1;
    prev_bar = bar;
    const int64_t pos = std::min(cum_units * alignment, total);
    out.work.push_back(pos - prev_pos);
    prev_pos = pos;
  }
  Canonicalize(out);
}

void Canonicalize(PartitionPlan& plan) {
  plan.work.erase(std::remove(plan.work.begin(), plan.work.end(), int64_t{0}), plan.work.end());
  if (plan.work.size() <= 1) {
    plan.axis = model::SplitAxis::kNone;
    plan.work.assign(1, 1);
  }
}

}  // namespace psched::scheduler::partition_aware
