#include "scheduler/exact/stage_instance.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/str_cat.h"
#include "scheduler/partition_aware/candidate_plans.h"

namespace psched::scheduler::exact {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

OpAxis FixedAxis(const PartitionPlan& plan, const Problem& problem, OpId op) {
  OpAxis a;
  a.axis = plan.axis;
  a.total = problem.WorkSize(op, plan.axis);
  a.units = a.total;
  for (int64_t w : plan.work) {
    if (w > 0) a.fixed.push_back(w);
  }
  return a;
}

// The least duration of a fixed-plan op whose slots may take any device: each slot on its
// own fastest device after that device's offset (a relaxation of distinct devices).
double FixedBound(const StageInstance& instance, int local, int axis,
                  std::span<const double> offsets) {
  const OpAxis& a = instance.space(local)[static_cast<size_t>(axis)];
  double worst = 0;
  for (size_t q = 0; q < a.fixed.size(); ++q) {
    double best = kInf;
    for (int d = 0; d < instance.num_devices(); ++d) {
      best = std::min(best, offsets[static_cast<size_t>(d)] + instance.FixedDuration(local, axis, static_cast<int>(q), d));
    }
    worst = std::max(worst, best);
  }
  return worst;
}

}  // namespace

std::string_view ExactSpaceName(ExactSpace space) {
  switch (space) {
    case ExactSpace::kJoint: return "joint";
    case ExactSpace::kScheduleOnly: return "schedule-only";
    case ExactSpace::kExpandedLocal: return "expanded-local";
    case ExactSpace::kExpandedEqual: return "expanded-equal";
  }
  return "joint";
}

std::vector<OpSpace> BuildOpSpaces(const Problem& problem, std::span<const OpId> ops,
                                   ExactSpace space) {
  std::vector<OpSpace> out;
  out.reserve(ops.size());
  for (OpId op : ops) {
    OpSpace s;
    switch (space) {
      case ExactSpace::kScheduleOnly:
        s.push_back(FixedAxis(PartitionPlan::None(), problem, op));
        break;
      case ExactSpace::kExpandedLocal:
        s.push_back(FixedAxis(partition_aware::MinLocalLatencyPlan(problem, op).plan, problem, op));
        break;
      case ExactSpace::kExpandedEqual:
        s.push_back(FixedAxis(partition_aware::EqualSizePlan(problem, op).plan, problem, op));
        break;
      case ExactSpace::kJoint: {
        s.push_back(FixedAxis(PartitionPlan::None(), problem, op));
        std::array<model::SplitAxis, 3> axes;
        const int n = partition_aware::PlanSlots(problem) >= 2
                          ? partition_aware::SplitAxes(problem, op, axes)
                          : 0;
        for (int k = 0; k < n; ++k) {
          OpAxis a;
          a.axis = axes[static_cast<size_t>(k)];
          a.total = problem.WorkSize(op, a.axis);
          a.alignment = problem.alignment(a.axis);
          a.units = (a.total + a.alignment - 1) / a.alignment;
          a.clip = a.units * a.alignment - a.total;
          // One unit cannot be split: such an axis only repeats the unpartitioned op.
          if (a.units >= 2) s.push_back(std::move(a));
        }
        break;
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

absl::StatusOr<StageInstance> StageInstance::Build(const Problem& problem, std::span<const OpId> ops,
                                                   const Schedule& fixed,
                                                   std::vector<OpSpace> spaces) {
  if (problem.num_devices() > kMaxExactDevices) {
    return absl::InvalidArgumentError(absl::StrCat("exact: ", problem.num_devices(),
                                                   " devices; at most ", kMaxExactDevices,
                                                   " are supported"));
  }
  if (spaces.size() != ops.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("exact: ", spaces.size(), " op spaces for ", ops.size(), " ops"));
  }
  StageInstance s;
  s.problem_ = &problem;
  s.devices_ = problem.num_devices();
  s.max_parts_ = std::max(1, partition_aware::PlanSlots(problem));
  s.ops_.assign(ops.begin(), ops.end());
  s.spaces_ = std::move(spaces);
  const size_t n = s.ops_.size();
  const size_t D = static_cast<size_t>(s.devices_);
  std::vector<int> local(static_cast<size_t>(problem.num_ops()), -1);
  for (size_t l = 0; l < n; ++l) {
    if (l > 0 && s.ops_[l] <= s.ops_[l - 1]) {
      return absl::InvalidArgumentError("exact: stage ops must be ascending and distinct");
    }
    local[static_cast<size_t>(s.ops_[l])] = static_cast<int>(l);
  }

  // Spaces must describe plans the validator accepts.
  for (size_t l = 0; l < n; ++l) {
    const OpId op = s.ops_[l];
    if (s.spaces_[l].empty()) {
      return absl::InvalidArgumentError(absl::StrCat("exact: op ", op, " (", problem.op_name(op),
                                                     ") has no candidate plan"));
    }
    for (const OpAxis& a : s.spaces_[l]) {
      const int64_t u = problem.WorkSize(op, a.axis);
      int64_t sum = 0;
      for (int64_t w : a.fixed) sum += w;
      const bool bad_total = u <= 0 || a.total != u || (!a.grid() && sum != u) ||
                             (a.grid() && (a.alignment < 1 || a.units * a.alignment - a.clip != u ||
                                           a.clip < 0 || a.clip >= a.alignment));
      if (bad_total || static_cast<int>(a.fixed.size()) > s.max_parts_) {
        return absl::InvalidArgumentError(absl::StrCat(
            "exact: op ", op, " (", problem.op_name(op), "): candidate plans along ",
            std::string(model::SplitAxisName(a.axis)), " do not divide its work ", u, " into at most ",
            s.max_parts_, " parts"));
      }
    }
  }

  // Inputs from earlier stages, per device.
  std::vector<double> fixed_end(static_cast<size_t>(problem.num_ops()) * D, -1.0);
  for (const ScheduledSubtask& t : fixed.subtasks()) {
    double& e = fixed_end[static_cast<size_t>(t.op) * D + static_cast<size_t>(t.device)];
    e = std::max(e, t.end_us);
  }
  s.external_ready_.assign(n * D, 0.0);
  s.pred_begin_.assign(1, 0);
  std::vector<std::vector<int>> succs(n);
  double earliest = kInf;
  for (size_t l = 0; l < n; ++l) {
    const auto preds = problem.preds(s.ops_[l]);
    const auto transfer = problem.pred_transfer_us(s.ops_[l]);
    for (size_t k = 0; k < preds.size(); ++k) {
      const int pl = local[static_cast<size_t>(preds[k])];
      if (pl >= 0) {
        s.pred_.push_back(pl);
        s.pred_transfer_.push_back(transfer[k]);
        succs[static_cast<size_t>(pl)].push_back(static_cast<int>(l));
        continue;
      }
      for (size_t e = 0; e < D; ++e) {
        const double end = fixed_end[static_cast<size_t>(preds[k]) * D + e];
        if (end < 0) continue;
        for (size_t d = 0; d < D; ++d) {
          double& r = s.external_ready_[l * D + d];
          r = std::max(r, end + problem.EdgeCostUs(transfer[k], static_cast<int>(e),
                                                   static_cast<int>(d)));
        }
      }
    }
    // Only entry ops (no input inside the stage) can start first.
    const bool entry = s.pred_.size() == static_cast<size_t>(s.pred_begin_.back());
    s.pred_begin_.push_back(static_cast<int>(s.pred_.size()));
    if (!entry) continue;
    for (size_t d = 0; d < D; ++d) earliest = std::min(earliest, s.external_ready_[l * D + d]);
  }
  s.succ_begin_.assign(1, 0);
  for (size_t l = 0; l < n; ++l) {
    s.succ_.insert(s.succ_.end(), succs[l].begin(), succs[l].end());
    s.succ_begin_.push_back(static_cast<int>(s.succ_.size()));
  }
  s.ancestor_.assign(n * n, false);
  for (size_t l = 0; l < n; ++l) {
    for (int p : s.preds(static_cast<int>(l))) {
      s.ancestor_[l * n + static_cast<size_t>(p)] = true;
      for (size_t a = 0; a < n; ++a) {
        if (s.ancestor_[static_cast<size_t>(p) * n + a]) s.ancestor_[l * n + a] = true;
      }
    }
  }

  s.busy_.assign(D, {});
  for (const ScheduledSubtask& t : fixed.subtasks()) {
    if (t.end_us > earliest || (t.end_us == earliest && t.start_us == t.end_us)) {
      s.busy_[static_cast<size_t>(t.device)].push_back({t.start_us, t.end_us});
    }
  }
  for (auto& b : s.busy_) {
    std::sort(b.begin(), b.end(), [](const BusyInterval& x, const BusyInterval& y) {
      return x.begin != y.begin ? x.begin < y.begin : x.end < y.end;
    });
  }

  // Relaxation tables of every grid axis; every latency the solvers may read is checked.
  s.axis_begin_.assign(1, 0);
  for (size_t l = 0; l < n; ++l) {
    s.axis_begin_.push_back(s.axis_begin_.back() + static_cast<int>(s.spaces_[l].size()));
  }
  const size_t rows = static_cast<size_t>(s.axis_begin_.back());
  s.unit_rate_.assign(rows * D, 0.0);
  s.min_part_.assign(rows * D, {});
  s.fixed_duration_.assign(rows * D, {});
  auto check = [&](double v, size_t l, const OpAxis& a, int64_t w, size_t d) -> absl::Status {
    if (std::isfinite(v) && v >= 0) return absl::OkStatus();
    return absl::InvalidArgumentError(absl::StrCat(
        "exact: op ", s.ops_[l], " (", problem.op_name(s.ops_[l]), ") along ",
        std::string(model::SplitAxisName(a.axis)), ", work ", w, " on device ", d, ": latency ", v,
        " is not a finite value >= 0"));
  };
  for (size_t l = 0; l < n; ++l) {
    for (size_t ax = 0; ax < s.spaces_[l].size(); ++ax) {
      const OpAxis& a = s.spaces_[l][ax];
      for (size_t d = 0; d < D; ++d) {
        const size_t row = s.RateIndex(static_cast<int>(l), static_cast<int>(ax), static_cast<int>(d));
        if (!a.grid()) {
          for (int64_t w : a.fixed) {
            const double v = problem.LatencyUs(s.ops_[l], a.axis, w, static_cast<int>(d));
            if (absl::Status st = check(v, l, a, w, d); !st.ok()) return st;
            s.fixed_duration_[row].push_back(v);
          }
          continue;
        }
        std::vector<double>& part = s.min_part_[row];
        part.assign(static_cast<size_t>(a.units), kInf);
        double rate = kInf;
        for (int64_t k = 1; k <= a.units; ++k) {
          for (bool last : {false, true}) {
            if (last && a.clip == 0) continue;
            if (!last && k == a.units && a.clip > 0) continue;  // all units: holds the last
            const int64_t w = a.Work(k, last);
            const double v = problem.LatencyUs(s.ops_[l], a.axis, w, static_cast<int>(d));
            if (absl::Status st = check(v, l, a, w, d); !st.ok()) return st;
            part[static_cast<size_t>(k - 1)] = std::min(part[static_cast<size_t>(k - 1)], v);
            rate = std::min(rate, v / static_cast<double>(k));
          }
        }
        for (int64_t k = a.units - 1; k >= 1; --k) {
          part[static_cast<size_t>(k - 1)] =
              std::min(part[static_cast<size_t>(k - 1)], part[static_cast<size_t>(k)]);
        }
        s.unit_rate_[row] = rate;
      }
    }
  }

  // Static tails, from the least duration of each op with every device free at 0.
  const std::vector<double> zero(D, 0.0);
  const uint32_t all = D >= 32 ? ~0u : (1u << D) - 1u;
  s.min_body_.assign(n, kInf);
  for (size_t l = 0; l < n; ++l) {
    for (size_t ax = 0; ax < s.spaces_[l].size(); ++ax) {
      const OpAxis& a = s.spaces_[l][ax];
      const double body =
          a.grid() ? RelaxedDivisionBound(s, static_cast<int>(l), static_cast<int>(ax), a.units, all, zero)
                   : FixedBound(s, static_cast<int>(l), static_cast<int>(ax), zero);
      s.min_body_[l] = std::min(s.min_body_[l], body);
    }
  }
  s.tail_.assign(n, 0.0);
  for (size_t l = n; l-- > 0;) {
    for (int succ : s.succs(static_cast<int>(l))) {
      s.tail_[l] = std::max(s.tail_[l], s.min_body_[static_cast<size_t>(succ)] +
                                            s.tail_[static_cast<size_t>(succ)]);
    }
  }
  return s;
}

double StageInstance::Fit(int device, double lower, double duration) const {
  double t = lower;
  for (const BusyInterval& b : busy_[static_cast<size_t>(device)]) {
    if (b.end <= t) continue;
    // Fits before b; an instant subtask must not sit at b's start (it would sort after b).
    if (t + duration <= b.begin && (duration > 0 || t < b.begin)) break;
    t = b.end;
  }
  return t;
}

double StageInstance::MinPartDuration(int local, int axis, int device, int64_t k) const {
  if (k <= 0) return 0.0;
  const std::vector<double>& part = min_part_[RateIndex(local, axis, device)];
  return part[static_cast<size_t>(std::min<int64_t>(k, static_cast<int64_t>(part.size())) - 1)];
}

int64_t StageInstance::MaxUnitsWithin(int local, int axis, int device, double budget) const {
  const std::vector<double>& part = min_part_[RateIndex(local, axis, device)];
  return static_cast<int64_t>(std::upper_bound(part.begin(), part.end(), budget) - part.begin());
}

double RelaxedDivisionBound(const StageInstance& instance, int local, int axis, int64_t units,
                            uint32_t mask, std::span<const double> offsets) {
  if (units <= 0) return 0.0;
  // The least T with sum_d MaxUnitsWithin(T - offset_d) >= units is the units-th smallest
  // value of the union of the sorted sequences offset_d + MinPartDuration(d, k), k >= 1:
  // found by discarding, from the sequence whose step-th next value is least, that many
  // values (each round keeps the answer, O(D log units) rounds).
  const int D = instance.num_devices();
  int64_t taken[kMaxExactDevices] = {};
  int64_t length[kMaxExactDevices] = {};
  bool any = false;
  for (int d = 0; d < D; ++d) {
    length[d] = (mask >> d & 1u) ? instance.MaxPartUnits(local, axis) : 0;
    any |= length[d] > 0;
  }
  if (!any) return kInf;
  auto value = [&](int d, int64_t k) {  // the k-th value (1-based) of sequence d
    return offsets[static_cast<size_t>(d)] + instance.MinPartDuration(local, axis, d, k);
  };
  int64_t k = units;
  while (true) {
    int live = 0;
    for (int d = 0; d < D; ++d) live += taken[d] < length[d] ? 1 : 0;
    const int64_t step = k / std::max(1, live);
    if (step == 0) break;
    int best = -1;
    double best_value = kInf;
    int64_t best_take = 0;
    for (int d = 0; d < D; ++d) {
      if (taken[d] >= length[d]) continue;
      const int64_t t = std::min(step, length[d] - taken[d]);
      const double v = value(d, taken[d] + t);
      if (v < best_value) {
        best_value = v;
        best = d;
        best_take = t;
      }
    }
    taken[best] += best_take;
    k -= best_take;
    if (k == 0) return best_value;
  }
  // Fewer than `live` values left to pass: merge them one by one.
  double last = kInf;
  for (; k > 0; --k) {
    int best = -1;
    double best_value = kInf;
    for (int d = 0; d < D; ++d) {
      if (taken[d] < length[d] && value(d, taken[d] + 1) < best_value) {
        best_value = value(d, taken[d] + 1);
        best = d;
      }
    }
    if (best < 0) return kInf;
    ++taken[best];
    last = best_value;
  }
  return last;
}

}  // namespace psched::scheduler::exact
