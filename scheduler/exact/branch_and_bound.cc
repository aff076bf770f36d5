#include "scheduler/exact/branch_and_bound.h"

#include <algorithm>
#include <chrono>
#include <functional>
#include <cstring>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace psched::scheduler::exact {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A new incumbent must beat the old one by more than float noise.
bool Better(double candidate, double incumbent) {
  if (incumbent == kInf) return candidate < kInf;
  return candidate < incumbent - 1e-9 * std::max(1.0, incumbent);
}

struct OpState {
  int8_t status = 0;  // 0: nothing placed, 1: some subtasks placed, 2: complete
  int8_t axis = -1;
  int8_t parts = 0;
  bool last_used = false;  // grid: the part holding the last unit is placed (or clip == 0)
  uint32_t devices = 0;
  uint32_t slots_left = 0;  // fixed plan: slots not yet placed
  int64_t units_left = 0;   // grid
  double end_max = 0;
};

// One candidate next subtask.
struct Child {
  int local = 0;
  int axis = 0;
  int device = 0;
  int slot = -1;  // fixed plan slot; -1 for a grid part
  int64_t units = 0;
  bool last = false;
  int64_t work = 0;
  double start = 0;
  double end = 0;
  double lb = 0;
};

// A placed subtask with what it overwrote.
struct Item {
  Child c;
  OpState old_op;
  double old_tail = 0;
  double old_last_start = 0;
  int old_last_local = -1;
  int old_last_device = -1;
  double old_max_end = 0;
  double old_end_on = -1;
};

// The grid part sizes of one (op, axis, device, last) choice not yet tried, from the
// balancing size outward.
struct Generator {
  int local = 0;
  int axis = 0;
  int device = 0;
  bool last = false;
  int64_t lo = 1, hi = 1, center = 1;
  int64_t step = 0;  // sizes so far: center -+ 1, center -+ 2, ... (the centre is tried first)

  // The next size, or -1 when every size has been produced.
  int64_t Next() {
    const int64_t reach = std::max(center - lo, hi - center);
    while (1 + step / 2 <= reach) {
      const int64_t k = center + (step % 2 == 0 ? -1 : 1) * (1 + step / 2);
      ++step;
      if (k >= lo && k <= hi) return k;
    }
    return -1;
  }
};

struct Frame {
  size_t child_begin = 0, child_end = 0, next = 0;
  size_t gen_begin = 0, gen_end = 0, gen_next = 0;
  double lb = 0;
  bool has_item = false;
  bool cut = false;  // the deadline passed while its children were generated
};

class Solver {
 public:
  Solver(const StageInstance& in, const SolveLimits& limits)
      : in_(in),
        limits_(limits),
        n_(in.num_ops()),
        D_(in.num_devices()),
        ops_(static_cast<size_t>(n_)),
        end_on_(static_cast<size_t>(n_) * static_cast<size_t>(D_), -1.0),
        tail_(static_cast<size_t>(D_), 0.0),
        heads_(static_cast<size_t>(n_) * static_cast<size_t>(D_), 0.0),
        relative_heads_(static_cast<size_t>(n_) * static_cast<size_t>(D_), -1.0),
        relative_bound_(static_cast<size_t>(n_), 0.0),
        completion_(static_cast<size_t>(n_), 0.0) {
    edges_free_ = in.problem().EdgesFree();
    ChooseLambdas();
  }

  double RootBound() { return NodeBound(/*strong=*/true); }

  StageResult Run(const StageSolution* warm) {
    const auto begin = std::chrono::steady_clock::now();
    deadline_ = begin + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(std::max(0.0, limits_.time_limit_s)));
    StageResult result;
    if (warm != nullptr && warm->found()) {
      best_ = *warm;
      ub_ = warm->makespan_us;
    }
    const double root = NodeBound(/*strong=*/true);
    StopReason stop = StopReason::kOptimal;
    double open_bound = kInf;
    if (n_ > 0 && Better(root, ub_)) {
      frames_.push_back(Frame{});
      Expand(frames_.back(), root);
      stop = Search();
      open_bound = OpenBound();
    } else if (n_ == 0) {
      best_.makespan_us = 0;
      ub_ = 0;
    }
    result.best = best_;
    result.nodes = nodes_;
    result.stop = stop;
    result.lower_bound_us =
        stop == StopReason::kOptimal ? ub_ : std::max(root, std::min(ub_, open_bound));
    if (stop == StopReason::kOptimal && !best_.found()) result.lower_bound_us = root;
    result.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    return result;
  }

 private:
  const OpAxis& Axis(int l, int axis) const { return in_.space(l)[static_cast<size_t>(axis)]; }
  double& EndOn(int l, int d) {
    return end_on_[static_cast<size_t>(l) * static_cast<size_t>(D_) + static_cast<size_t>(d)];
  }
  double EndOn(int l, int d) const {
    return end_on_[static_cast<size_t>(l) * static_cast<size_t>(D_) + static_cast<size_t>(d)];
  }
  double& Head(int l, int d) {
    return heads_[static_cast<size_t>(l) * static_cast<size_t>(D_) + static_cast<size_t>(d)];
  }
  uint32_t AllDevices() const { return D_ >= 32 ? ~0u : (1u << D_) - 1u; }

  bool PredsComplete(int l) const {
    for (int p : in_.preds(l)) {
      if (ops_[static_cast<size_t>(p)].status != 2) return false;
    }
    return true;
  }

  // When op l's inputs are ready on device d (REQUIRES: its preds complete).
  double Ready(int l, int d) const {
    double r = in_.ExternalReady(l, d);
    const auto preds = in_.preds(l);
    const auto transfer = in_.pred_transfer(l);
    for (size_t k = 0; k < preds.size(); ++k) {
      const int p = preds[k];
      if (edges_free_) {
        r = std::max(r, ops_[static_cast<size_t>(p)].end_max);
        continue;
      }
      for (int e = 0; e < D_; ++e) {
        const double end = EndOn(p, e);
        if (end >= 0) r = std::max(r, end + in_.EdgeCost(transfer[k], e, d));
      }
    }
    return r;
  }

  bool AfterLast(double start, int l, int d) const {
    if (start != last_start_) return start > last_start_;
    if (l != last_local_) return l > last_local_;
    return d > last_device_;
  }

  void Apply(const Child& c) {
    Item it;
    it.c = c;
    OpState& s = ops_[static_cast<size_t>(c.local)];
    it.old_op = s;
    it.old_tail = tail_[static_cast<size_t>(c.device)];
    it.old_last_start = last_start_;
    it.old_last_local = last_local_;
    it.old_last_device = last_device_;
    it.old_max_end = max_end_;
    it.old_end_on = EndOn(c.local, c.device);
    const OpAxis& a = Axis(c.local, c.axis);
    if (s.status == 0) {
      s.axis = static_cast<int8_t>(c.axis);
      s.status = 1;
      if (a.grid()) {
        s.units_left = a.units;
        s.last_used = a.clip == 0;
      } else {
        s.slots_left = (1u << a.fixed.size()) - 1u;
      }
    }
    s.parts = static_cast<int8_t>(s.parts + 1);
    s.devices |= 1u << c.device;
    if (a.grid()) {
      s.units_left -= c.units;
      s.last_used = s.last_used || c.last;
      if (s.units_left == 0) s.status = 2;
    } else {
      s.slots_left &= ~(1u << c.slot);
      if (s.slots_left == 0) s.status = 2;
    }
    s.end_max = std::max(s.end_max, c.end);
    EndOn(c.local, c.device) = c.end;
    tail_[static_cast<size_t>(c.device)] = c.end;
    last_start_ = c.start;
    last_local_ = c.local;
    last_device_ = c.device;
    max_end_ = std::max(max_end_, c.end);
    sum_starts_ += c.start;
    if (s.status == 2) ++complete_;
    items_.push_back(it);
  }

  void Undo() {
    const Item& it = items_.back();
    const Child& c = it.c;
    OpState& s = ops_[static_cast<size_t>(c.local)];
    if (s.status == 2) --complete_;
    s = it.old_op;
    EndOn(c.local, c.device) = it.old_end_on;
    tail_[static_cast<size_t>(c.device)] = it.old_tail;
    last_start_ = it.old_last_start;
    last_local_ = it.old_last_local;
    last_device_ = it.old_last_device;
    max_end_ = it.old_max_end;
    sum_starts_ -= c.start;
    items_.pop_back();
  }

  // Least completion of an unfinished op given per-device heads (relaxations only).
  double CompletionBound(int l, const double* head) {
    const OpState& s = ops_[static_cast<size_t>(l)];
    const std::span<const double> offsets(head, static_cast<size_t>(D_));
    if (s.status == 0) {
      // The bound moves with a common shift of the heads: cache it per op by the heads
      // relative to the least one (all equal is the static MinBody).
      const double low = *std::min_element(head, head + D_);
      double* rel = &relative_heads_[static_cast<size_t>(l) * static_cast<size_t>(D_)];
      bool same = true;
      for (int d = 0; d < D_; ++d) same &= head[d] - low == rel[d];
      if (same) return low + relative_bound_[static_cast<size_t>(l)];
      bool flat = true;
      for (int d = 0; d < D_; ++d) flat &= head[d] == low;
      double best = flat ? low + in_.MinBody(l) : kInf;
      for (int ax = 0; ax < static_cast<int>(in_.space(l).size()); ++ax) {
        const OpAxis& a = Axis(l, ax);
        if (flat) break;
        best = std::min(best, a.grid() ? RelaxedDivisionBound(in_, l, ax, a.units, AllDevices(), offsets)
                                       : FixedSlotsBound(l, ax, (1u << a.fixed.size()) - 1u, AllDevices(), head));
      }
      for (int d = 0; d < D_; ++d) rel[d] = head[d] - low;
      relative_bound_[static_cast<size_t>(l)] = best - low;
      return best;
    }
    const OpAxis& a = Axis(l, s.axis);
    const uint32_t free = AllDevices() & ~s.devices;
    const double rest = a.grid() ? RelaxedDivisionBound(in_, l, s.axis, s.units_left, free, offsets)
                                 : FixedSlotsBound(l, s.axis, s.slots_left, free, head);
    return std::max(s.end_max, rest);
  }

  // Each remaining slot on its best device among `mask` (distinctness relaxed).
  double FixedSlotsBound(int l, int axis, uint32_t slots, uint32_t mask, const double* head) const {
    const OpAxis& a = Axis(l, axis);
    double worst = 0;
    for (size_t q = 0; q < a.fixed.size(); ++q) {
      if ((slots >> q & 1u) == 0) continue;
      double best = kInf;
      for (int d = 0; d < D_; ++d) {
        if ((mask >> d & 1u) == 0) continue;
        best = std::min(best, head[d] + in_.FixedDuration(l, axis, static_cast<int>(q), d));
      }
      worst = std::max(worst, best);
    }
    return worst;
  }

  // Weighted least work of what op l has left, weights lambda over devices, when the op
  // must finish by `deadline` - its own tail included - given its per-device heads: a
  // subtask may only use a device where it can start at its head and still finish in
  // time. +infinity when some part fits nowhere.
  double Energy(int l, const std::vector<double>& lambda, double deadline, const double* head) const {
    const OpState& s = ops_[static_cast<size_t>(l)];
    const double slack = deadline - in_.Tail(l);
    auto axis_energy = [&](int ax, uint32_t mask, int64_t units, uint32_t slots) {
      const OpAxis& a = Axis(l, ax);
      if (a.grid()) {
        double rate = kInf;
        for (int d = 0; d < D_; ++d) {
          if ((mask >> d & 1u) && head[d] + in_.MinPartDuration(l, ax, d, 1) <= slack) {
            rate = std::min(rate, lambda[static_cast<size_t>(d)] * in_.MinUnitDuration(l, ax, d));
          }
        }
        return rate * static_cast<double>(units);
      }
      double sum = 0;
      for (size_t q = 0; q < a.fixed.size(); ++q) {
        if ((slots >> q & 1u) == 0) continue;
        double best = kInf;
        for (int d = 0; d < D_; ++d) {
          if ((mask >> d & 1u) == 0) continue;
          const double duration = in_.FixedDuration(l, ax, static_cast<int>(q), d);
          if (head[d] + duration <= slack) best = std::min(best, lambda[static_cast<size_t>(d)] * duration);
        }
        sum += best;
      }
      return sum;
    };
    if (s.status == 0) {
      double best = kInf;
      for (int ax = 0; ax < static_cast<int>(in_.space(l).size()); ++ax) {
        const OpAxis& a = Axis(l, ax);
        best = std::min(best, axis_energy(ax, AllDevices(), a.units, (1u << a.fixed.size()) - 1u));
      }
      return best;
    }
    return axis_energy(s.axis, AllDevices() & ~s.devices, s.units_left, s.slots_left);
  }

  // By how much the weighted least work of the unfinished ops, each restricted to devices
  // where it can still finish by `t`, exceeds sum_d lambda_d (t - available_d); > 0 proves
  // that no completion of the node finishes by t. Uses the heads of the last NodeBound.
  double ShortOf(const std::vector<double>& lambda, double t) const {
    double base = 0;
    for (int d = 0; d < D_; ++d) base += lambda[static_cast<size_t>(d)] * available_[d];
    double work = 0;
    for (int l = 0; l < n_ && work < kInf; ++l) {
      if (ops_[static_cast<size_t>(l)].status != 2) {
        work += Energy(l, lambda, t, &heads_[static_cast<size_t>(l) * static_cast<size_t>(D_)]);
      }
    }
    return work - (t - base);
  }

  // The load bound without deadlines: sum_d lambda_d available_d + the weighted least work.
  double FreeLoad(const std::vector<double>& lambda) const {
    double v = 0;
    for (int d = 0; d < D_; ++d) v += lambda[static_cast<size_t>(d)] * available_[d];
    for (int l = 0; l < n_; ++l) {
      if (ops_[static_cast<size_t>(l)].status != 2) {
        v += Energy(l, lambda, kInf, &heads_[static_cast<size_t>(l) * static_cast<size_t>(D_)]);
      }
    }
    return v;
  }

  // The Lagrangian load bound for weights lambda: the least t that ShortOf does not rule
  // out, searched above `lb` (returned when it is not ruled out).
  double LoadBound(const std::vector<double>& lambda, double lb) const {
    double lo = lb;
    if (ShortOf(lambda, lo) <= 0) return lo;
    double hi = ub_ < kInf ? ub_ : 2 * lo + 1;
    while (ShortOf(lambda, hi) > 0) {
      if (ub_ < kInf && hi >= ub_) return hi;  // nothing finishes by the incumbent
      hi = 2 * hi + 1;
    }
    for (int it = 0; it < 30 && hi - lo > 1e-7 * std::max(1.0, hi); ++it) {
      const double mid = 0.5 * (lo + hi);
      (ShortOf(lambda, mid) > 0 ? lo : hi) = mid;
    }
    return lo;
  }

  // True when the load bounds prove that no completion of the node finishes by `t`.
  // REQUIRES: NodeBound was last called on this node.
  bool RuledOut(double t) {
    for (const std::vector<double>& lambda : lambdas_) {
      if (ShortOf(lambda, t) > 0) return true;
    }
    return OneDeviceRulesOut(t);
  }

  // The one-machine relaxation (Jackson's preemptive schedule): the unstarted whole-op
  // subtasks that can only finish by t on device d - every other device would start them
  // too late - must fit on d, preemptively, between their heads and t minus their tails.
  // EDF over release dates decides that exactly for the preemptive relaxation.
  bool OneDeviceRulesOut(double t) {
    for (int d = 0; d < D_; ++d) {
      jobs_.clear();
      for (int l = 0; l < n_; ++l) {
        const OpState& s = ops_[static_cast<size_t>(l)];
        if (s.status != 0 || in_.space(l).size() != 1 || Axis(l, 0).fixed.size() != 1) continue;
        const double* head = &heads_[static_cast<size_t>(l) * static_cast<size_t>(D_)];
        const double due = t - in_.Tail(l);
        bool elsewhere = false;
        for (int e = 0; e < D_ && !elsewhere; ++e) {
          elsewhere = e != d && head[e] + in_.FixedDuration(l, 0, 0, e) <= due;
        }
        if (elsewhere) continue;
        jobs_.push_back({head[d], in_.FixedDuration(l, 0, 0, d), due});
      }
      if (jobs_.empty()) continue;
      std::sort(jobs_.begin(), jobs_.end(), [](const Job& a, const Job& b) { return a.release < b.release; });
      // Preemptive EDF: `pending` holds (due, remaining work) of released jobs.
      pending_.clear();
      double now = available_[d];
      size_t next = 0;
      while (next < jobs_.size() || !pending_.empty()) {
        if (pending_.empty()) now = std::max(now, jobs_[next].release);
        while (next < jobs_.size() && jobs_[next].release <= now) {
          pending_.push_back({jobs_[next].due, jobs_[next].work});
          std::push_heap(pending_.begin(), pending_.end(), std::greater<>());
          ++next;
        }
        std::pop_heap(pending_.begin(), pending_.end(), std::greater<>());
        auto [due, work] = pending_.back();
        pending_.pop_back();
        const double until = next < jobs_.size() ? std::min(now + work, jobs_[next].release) : now + work;
        work -= until - now;
        now = until;
        if (work > 1e-9) {
          pending_.push_back({due, work});
          std::push_heap(pending_.begin(), pending_.end(), std::greater<>());
        } else if (now > due + 1e-9 * std::max(1.0, due)) {
          return true;
        }
      }
    }
    return false;
  }

  // A lower bound on the stage objective of every completion of the current node.
  // The path bound and the deadline-free load bounds; `strong` adds every load bound with
  // deadlines, searched to its least value (costly: for the root and reports).
  double NodeBound(bool strong = false) {
    double lb = std::max(max_end_, last_start_);
    for (int l = 0; l < n_; ++l) {
      const OpState& s = ops_[static_cast<size_t>(l)];
      if (s.status == 2) {
        completion_[static_cast<size_t>(l)] = s.end_max;
        continue;
      }
      double* head = &Head(l, 0);
      for (int d = 0; d < D_; ++d) {
        head[d] = std::max({tail_[static_cast<size_t>(d)], last_start_, in_.ExternalReady(l, d)});
      }
      const auto preds = in_.preds(l);
      const auto transfer = in_.pred_transfer(l);
      for (size_t k = 0; k < preds.size(); ++k) {
        const int p = preds[k];
        if (ops_[static_cast<size_t>(p)].status == 2 && !edges_free_) {
          for (int d = 0; d < D_; ++d) {
            for (int e = 0; e < D_; ++e) {
              const double end = EndOn(p, e);
              if (end >= 0) head[d] = std::max(head[d], end + in_.EdgeCost(transfer[k], e, d));
            }
          }
        } else {
          const double c = completion_[static_cast<size_t>(p)];
          for (int d = 0; d < D_; ++d) head[d] = std::max(head[d], c);
        }
      }
      const double c = CompletionBound(l, head);
      completion_[static_cast<size_t>(l)] = c;
      lb = std::max(lb, c + in_.Tail(l));
    }
    // Device d takes no new work before the least head any unfinished op has on it (heads
    // include its tail and the current start); capped at the path bound, which T exceeds
    // even when d gets nothing more.
    for (int d = 0; d < D_; ++d) {
      double first = kInf;
      for (int l = 0; l < n_; ++l) {
        if (ops_[static_cast<size_t>(l)].status != 2) first = std::min(first, Head(l, d));
      }
      available_[d] = std::max({tail_[static_cast<size_t>(d)], last_start_, std::min(first, lb)});
    }
    for (size_t k = 0; k < lambdas_.size(); ++k) {
      if (strong) {
        lb = std::max(lb, LoadBound(lambdas_[k], lb));
      } else if (k < weighted_lambdas_) {
        lb = std::max(lb, FreeLoad(lambdas_[k]));
      }
    }
    return lb;
  }

  // Weights of the load bound: uniform plus the best of a grid over the simplex at the root.
  void ChooseLambdas() {
    lambdas_.assign(1, std::vector<double>(static_cast<size_t>(D_), 1.0 / D_));
    weighted_lambdas_ = 1;
    if (D_ < 2 || D_ > 4 || n_ == 0) return;
    NodeBound();  // the root's heads and device availability
    const int steps = D_ == 2 ? 40 : D_ == 3 ? 20 : 8;
    std::vector<int> c(static_cast<size_t>(D_), 0);
    std::vector<double> best;
    double best_v = -kInf;
    // Enumerate compositions of `steps` into D parts.
    auto evaluate = [&]() {
      std::vector<double> lambda(static_cast<size_t>(D_));
      for (int d = 0; d < D_; ++d) lambda[static_cast<size_t>(d)] = static_cast<double>(c[static_cast<size_t>(d)]) / steps;
      const double v = FreeLoad(lambda);
      if (v > best_v) {
        best_v = v;
        best = lambda;
      }
    };
    auto rec = [&](auto&& self, int d, int left) -> void {
      if (d == D_ - 1) {
        c[static_cast<size_t>(d)] = left;
        evaluate();
        return;
      }
      for (int k = 0; k <= left; ++k) {
        c[static_cast<size_t>(d)] = k;
        self(self, d + 1, left - k);
      }
    };
    rec(rec, 0, steps);
    if (!best.empty() && best != lambdas_[0]) lambdas_.push_back(best);
    weighted_lambdas_ = lambdas_.size();
    // Single devices and pairs: with deadlines these bound the work that only fits there.
    for (int d = 0; d < D_; ++d) {
      std::vector<double> unit(static_cast<size_t>(D_), 0.0);
      unit[static_cast<size_t>(d)] = 1;
      lambdas_.push_back(unit);
      for (int e = d + 1; e < D_ && D_ > 2; ++e) {
        std::vector<double> pair(static_cast<size_t>(D_), 0.0);
        pair[static_cast<size_t>(d)] = pair[static_cast<size_t>(e)] = 0.5;
        lambdas_.push_back(pair);
      }
    }
  }

  // Appends child `c` (start/end filled) to the pool when its bound beats the incumbent.
  void Evaluate(Child c) {
    if (expired_ || ((++evaluations_ & 15) == 0 && std::chrono::steady_clock::now() >= deadline_)) {
      expired_ = true;
      return;
    }
    Apply(c);
    c.lb = NodeBound();
    Undo();
    if (Better(c.lb, ub_)) children_.push_back(c);
  }

  // Builds the child for op l's next subtask on device d; false when it would break the
  // start order.
  bool MakeChild(int l, int axis, int d, int slot, int64_t units, bool last, double ready, Child& c) const {
    const OpAxis& a = Axis(l, axis);
    c.local = l;
    c.axis = axis;
    c.device = d;
    c.slot = slot;
    c.units = units;
    c.last = last;
    c.work = a.grid() ? a.Work(units, last) : a.fixed[static_cast<size_t>(slot)];
    const double duration = a.grid() ? in_.Duration(l, axis, c.work, d) : in_.FixedDuration(l, axis, slot, d);
    c.start = in_.Fit(d, std::max(tail_[static_cast<size_t>(d)], ready), duration);
    c.end = c.start + duration;
    return AfterLast(c.start, l, d);
  }

  // The grid part size that balances op l's finish over the free devices (a guess).
  // Per-device earliest starts of op l's next subtasks (busy intervals ignored).
  void Offsets(int l, std::vector<double>& offsets) const {
    offsets.assign(static_cast<size_t>(D_), 0.0);
    for (int e = 0; e < D_; ++e) {
      offsets[static_cast<size_t>(e)] = std::max({tail_[static_cast<size_t>(e)], last_start_, Ready(l, e)});
    }
  }

  int64_t Center(int l, int axis, int d, int64_t units, uint32_t mask, const std::vector<double>& offsets) const {
    const double t = RelaxedDivisionBound(in_, l, axis, units, mask, offsets);
    return in_.MaxUnitsWithin(l, axis, d, t - offsets[static_cast<size_t>(d)]);
  }

  // Narrows [lo, hi], the sizes of op l's next grid part on device d, to those whose op
  // can still finish before the incumbent: the part itself ends no earlier than
  // offset_d + MinPartDuration(k) (growing with k), and the rest, left - k units on the
  // other free devices, no earlier than its relaxed division (shrinking with k); either
  // plus the op's tail reaching the incumbent rules k out. False when nothing is left.
  bool Narrow(int l, int axis, int d, int64_t left, uint32_t others, const std::vector<double>& offsets,
              int64_t& lo, int64_t& hi) const {
    if (ub_ == kInf) return lo <= hi;
    const double limit = ub_ - 1e-9 * std::max(1.0, ub_) - in_.Tail(l);
    auto part_ok = [&](int64_t k) {
      return offsets[static_cast<size_t>(d)] + in_.MinPartDuration(l, axis, d, k) < limit;
    };
    auto rest_ok = [&](int64_t k) {
      return k == left || RelaxedDivisionBound(in_, l, axis, left - k, others, offsets) < limit;
    };
    // part_ok holds on a prefix of sizes, rest_ok on a suffix.
    int64_t a = lo, b = hi;
    if (!part_ok(lo)) return false;
    while (a < b) {
      const int64_t mid = a + (b - a + 1) / 2;
      (part_ok(mid) ? a : b) = part_ok(mid) ? mid : mid - 1;
    }
    const int64_t part_hi = a;
    a = lo;
    b = part_hi;
    if (!rest_ok(part_hi)) return false;
    while (a < b) {
      const int64_t mid = a + (b - a) / 2;
      if (rest_ok(mid)) {
        b = mid;
      } else {
        a = mid + 1;
      }
    }
    lo = a;
    hi = part_hi;
    return lo <= hi;
  }

  void Expand(Frame& f, double lb) {
    f.lb = lb;
    f.child_begin = children_.size();
    f.gen_begin = generators_.size();
    for (int l = 0; l < n_; ++l) {
      const OpState& s = ops_[static_cast<size_t>(l)];
      if (s.status == 2 || !PredsComplete(l)) continue;
      double ready[kMaxExactDevices];
      for (int d = 0; d < D_; ++d) ready[d] = Ready(l, d);
      const int first_axis = s.status == 0 ? 0 : s.axis;
      const int last_axis = s.status == 0 ? static_cast<int>(in_.space(l).size()) - 1 : s.axis;
      for (int ax = first_axis; ax <= last_axis; ++ax) {
        const OpAxis& a = Axis(l, ax);
        const uint32_t free = AllDevices() & ~s.devices;
        const int free_count = __builtin_popcount(free);
        for (int d = 0; d < D_; ++d) {
          if ((free >> d & 1u) == 0) continue;
          Child c;
          if (!a.grid()) {
            const uint32_t slots = s.status == 0 ? (1u << a.fixed.size()) - 1u : s.slots_left;
            for (size_t q = 0; q < a.fixed.size(); ++q) {
              if ((slots >> q & 1u) == 0) continue;
              bool repeat = false;  // equal works in two slots are one choice
              for (size_t r = 0; r < q; ++r) repeat |= (slots >> r & 1u) && a.fixed[r] == a.fixed[q];
              if (repeat) continue;
              if (MakeChild(l, ax, d, static_cast<int>(q), 0, false, ready[d], c)) Evaluate(c);
            }
            continue;
          }
          const int64_t left = s.status == 0 ? a.units : s.units_left;
          const bool last_used = s.status == 0 ? a.clip == 0 : s.last_used;
          const int parts = s.status == 0 ? 0 : s.parts;
          // This part must complete the op when no further part can follow it.
          const bool must_complete = parts + 1 >= in_.max_parts() || free_count <= 1;
          if (s.status == 0 && must_complete) continue;  // a split needs two parts
          for (bool last : {false, true}) {
            if (last && last_used) continue;
            Generator g;
            g.local = l;
            g.axis = ax;
            g.device = d;
            g.last = last;
            // The completing part holds the last unit; the first part never completes.
            const bool can_complete = s.status == 1 && (last || last_used);
            g.hi = can_complete ? left : left - 1;
            g.lo = must_complete ? left : 1;
            if (must_complete && !can_complete) continue;
            if (g.lo > g.hi) continue;
            Offsets(l, scratch_offsets_);
            if (!Narrow(l, ax, d, left, free & ~(1u << d), scratch_offsets_, g.lo, g.hi)) continue;
            g.center = std::clamp<int64_t>(Center(l, ax, d, left, free, scratch_offsets_), g.lo, g.hi);
            // The balancing size now; every other size later, from the generator.
            if (MakeChild(l, ax, d, -1, g.center, last, ready[d], c)) Evaluate(c);
            if (g.hi > g.lo) generators_.push_back(g);
          }
        }
      }
    }
    f.cut = expired_;
    f.child_end = children_.size();
    f.next = f.child_begin;
    f.gen_end = generators_.size();
    f.gen_next = f.gen_begin;
    std::sort(children_.begin() + static_cast<std::ptrdiff_t>(f.child_begin),
              children_.begin() + static_cast<std::ptrdiff_t>(f.child_end),
              [](const Child& a, const Child& b) {
                if (a.lb != b.lb) return a.lb < b.lb;
                return a.end < b.end;
              });
  }

  // The next untried child of `f` whose bound beats the incumbent; false when none is left.
  bool NextChild(Frame& f, Child& out) {
    while (f.next < f.child_end) {
      const Child& c = children_[f.next++];
      if (Better(c.lb, ub_)) {
        out = c;
        return true;
      }
    }
    while (f.gen_next < f.gen_end) {
      Generator& g = generators_[f.gen_next];
      for (int64_t k = g.Next(); k >= 0; k = g.Next()) {
        if ((++evaluations_ & 15) == 0 && std::chrono::steady_clock::now() >= deadline_) {
          expired_ = true;
          --g.step;  // this size stays open
          return false;
        }
        Child c;
        if (!MakeChild(g.local, g.axis, g.device, -1, k, g.last, Ready(g.local, g.device), c)) continue;
        Apply(c);
        c.lb = NodeBound();
        Undo();
        if (Better(c.lb, ub_)) {
          out = c;
          return true;
        }
      }
      ++f.gen_next;
    }
    return false;
  }

  bool OutOfTime() {
    if (expired_) {
      stop_ = StopReason::kTimeLimit;
      return true;
    }
    if (limits_.node_limit > 0 && nodes_ >= limits_.node_limit) {
      stop_ = StopReason::kNodeLimit;
      return true;
    }
    if ((nodes_ & 63) == 0 && std::chrono::steady_clock::now() >= deadline_) {
      stop_ = StopReason::kTimeLimit;
      return true;
    }
    return false;
  }

  StopReason Search() {
    while (!frames_.empty()) {
      Frame& f = frames_.back();
      Child c;
      if (!NextChild(f, c)) {
        if (f.has_item) Undo();
        children_.resize(f.child_begin);
        generators_.resize(f.gen_begin);
        frames_.pop_back();
        continue;
      }
      ++nodes_;
      if (expired_) {
        stop_ = StopReason::kTimeLimit;
        return stop_;
      }
      if (OutOfTime()) return stop_;
      Apply(c);
      if (complete_ == n_) {
        if (Better(max_end_, ub_)) Record();
        Undo();
        continue;
      }
      NodeBound();
      if ((ub_ < kInf && RuledOut(ub_ - 1e-9 * std::max(1.0, ub_))) || Dominated()) {
        Undo();
        continue;
      }
      frames_.push_back(Frame{});
      frames_.back().has_item = true;
      Expand(frames_.back(), c.lb);
    }
    return StopReason::kOptimal;
  }

  // The least bound over the untried children of the open frames.
  double OpenBound() const {
    double open = kInf;
    for (const Frame& f : frames_) {
      for (size_t i = f.next; i < f.child_end; ++i) open = std::min(open, children_[i].lb);
      // Children not generated yet (a generator, or an expansion cut by the deadline).
      if (f.gen_next < f.gen_end || f.cut) open = std::min(open, f.lb);
    }
    return open;
  }

  void Record() {
    ub_ = max_end_;
    StageSolution sol;
    sol.makespan_us = max_end_;
    sol.plans.assign(static_cast<size_t>(n_), PartitionPlan::None());
    std::vector<std::vector<size_t>> parts(static_cast<size_t>(n_));  // item indices per op
    for (size_t i = 0; i < items_.size(); ++i) parts[static_cast<size_t>(items_[i].c.local)].push_back(i);
    std::vector<int> slot(items_.size(), 0);
    std::vector<int64_t> begin(items_.size(), 0);
    for (int l = 0; l < n_; ++l) {
      std::vector<size_t>& p = parts[static_cast<size_t>(l)];
      const OpAxis& a = Axis(l, items_[p.front()].c.axis);
      auto child = [&](size_t i) -> const Child& { return items_[i].c; };
      if (a.grid()) {
        // Slot order: by device, the part holding the last unit at the end.
        std::sort(p.begin(), p.end(), [&](size_t x, size_t y) {
          if (child(x).last != child(y).last) return child(y).last;
          return child(x).device < child(y).device;
        });
      } else {
        std::sort(p.begin(), p.end(), [&](size_t x, size_t y) { return child(x).slot < child(y).slot; });
      }
      PartitionPlan plan;
      plan.axis = a.axis;
      plan.work.clear();
      int64_t at = 0;
      for (size_t q = 0; q < p.size(); ++q) {
        slot[p[q]] = a.grid() ? static_cast<int>(q) : child(p[q]).slot;
        begin[p[q]] = at;
        at += child(p[q]).work;
        plan.work.push_back(child(p[q]).work);
      }
      sol.plans[static_cast<size_t>(l)] = plan.work.size() <= 1 ? PartitionPlan::None() : plan;
    }
    // In list order: nondecreasing starts, so instant subtasks keep their place on a device.
    for (size_t i = 0; i < items_.size(); ++i) {
      const Child& c = items_[i].c;
      sol.subtasks.push_back(ScheduledSubtask{in_.op(c.local), slot[i], c.device, Axis(c.local, c.axis).axis,
                                              begin[i], begin[i] + c.work, c.start, c.end});
    }
    best_ = std::move(sol);
  }

  // Dominance (see the header): prunes the node when a stored one with the same placed
  // set dominates it, otherwise stores it.
  bool Dominated() {
    key_.clear();
    const size_t words = (static_cast<size_t>(n_) + 63) / 64;
    key_.resize(words * 8, '\0');
    for (int l = 0; l < n_; ++l) {
      if (ops_[static_cast<size_t>(l)].status == 2) key_[static_cast<size_t>(l) / 8] |= static_cast<char>(1 << (l % 8));
    }
    profile_.clear();
    profile_.push_back(last_start_);
    profile_.push_back(last_local_);
    profile_.push_back(last_device_);
    profile_.push_back(sum_starts_);
    profile_.push_back(max_end_);
    for (int d = 0; d < D_; ++d) profile_.push_back(tail_[static_cast<size_t>(d)]);
    for (int l = 0; l < n_; ++l) {
      const OpState& s = ops_[static_cast<size_t>(l)];
      if (s.status == 1) {
        const int64_t fields[] = {l, s.axis, s.devices, s.units_left, s.last_used, s.slots_left};
        key_.append(reinterpret_cast<const char*>(fields), sizeof(fields));
        for (int d = 0; d < D_; ++d) {
          if (s.devices >> d & 1u) profile_.push_back(EndOn(l, d));
        }
        continue;
      }
      if (s.status != 2) continue;
      bool frontier = false;
      for (int succ : in_.succs(l)) frontier |= ops_[static_cast<size_t>(succ)].status != 2;
      if (!frontier) continue;
      if (edges_free_) {
        profile_.push_back(s.end_max);
      } else {
        for (int d = 0; d < D_; ++d) profile_.push_back(EndOn(l, d));
      }
    }
    auto it = memo_.find(key_);
    const size_t width = profile_.size();
    if (it != memo_.end()) {
      const std::vector<double>& stored = it->second;
      for (size_t base = 0; base + width <= stored.size(); base += width) {
        const double* p = stored.data() + base;
        // Lexicographic on (start, op, device), componentwise on the rest.
        bool lex_le = p[0] < profile_[0] ||
                      (p[0] == profile_[0] && (p[1] < profile_[1] || (p[1] == profile_[1] && p[2] <= profile_[2])));
        if (!lex_le) continue;
        bool le = true;
        for (size_t i = 3; i < width && le; ++i) le = p[i] <= profile_[i];
        if (le) return true;
      }
    }
    const int64_t bytes = static_cast<int64_t>(width * sizeof(double) + (it == memo_.end() ? key_.size() + 64 : 0));
    if (memo_bytes_ + bytes > limits_.memo_bytes) return false;
    std::vector<double>& slot = it == memo_.end() ? memo_[key_] : it->second;
    if (slot.size() >= 32 * width) return false;
    slot.insert(slot.end(), profile_.begin(), profile_.end());
    memo_bytes_ += bytes;
    return false;
  }

  const StageInstance& in_;
  const SolveLimits& limits_;
  const int n_;
  const int D_;
  bool edges_free_ = true;  // no edge costs anything (Problem::EdgesFree)
  std::vector<OpState> ops_;
  std::vector<double> end_on_;
  std::vector<double> tail_;
  std::vector<double> heads_;
  std::vector<double> relative_heads_, relative_bound_;  // CompletionBound's cache
  std::vector<double> completion_;
  struct Job {
    double release, work, due;
  };
  std::vector<Job> jobs_;
  std::vector<std::pair<double, double>> pending_;  // min-heap on (due, remaining work)
  std::vector<std::vector<double>> lambdas_;
  size_t weighted_lambdas_ = 0;  // the first ones spread over every device
  double available_[kMaxExactDevices] = {};
  std::vector<double> scratch_offsets_;
  double last_start_ = -kInf;
  int last_local_ = -1;
  int last_device_ = -1;
  double max_end_ = 0;
  double sum_starts_ = 0;
  int complete_ = 0;
  std::vector<Item> items_;
  std::vector<Frame> frames_;
  std::vector<Child> children_;
  std::vector<Generator> generators_;
  double ub_ = kInf;
  StageSolution best_;
  int64_t nodes_ = 0;
  int64_t evaluations_ = 0;
  bool expired_ = false;  // the deadline passed inside an expansion
  StopReason stop_ = StopReason::kOptimal;
  std::chrono::steady_clock::time_point deadline_;
  absl::flat_hash_map<std::string, std::vector<double>> memo_;
  int64_t memo_bytes_ = 0;
  std::string key_;
  std::vector<double> profile_;
};

}  // namespace

const char* StopReasonName(StopReason reason) {
  switch (reason) {
    case StopReason::kOptimal: return "optimal";
    case StopReason::kTimeLimit: return "time limit";
    case StopReason::kNodeLimit: return "node limit";
    case StopReason::kMemoryLimit: return "memory limit";
  }
  return "?";
}

StageResult SolveBranchAndBound(const StageInstance& instance, const SolveLimits& limits,
                                const StageSolution* warm) {
  Solver solver(instance, limits);
  return solver.Run(warm);
}

double RootLowerBound(const StageInstance& instance) {
  SolveLimits limits;
  Solver solver(instance, limits);
  return solver.RootBound();
}

}  // namespace psched::scheduler::exact
