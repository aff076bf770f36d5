#include "scheduler/exact/mip_formulation.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <string>
#include <vector>

#include "CbcModel.hpp"
#include "CbcSolver.hpp"
#include "CoinModel.hpp"
#include "OsiClpSolverInterface.hpp"
#include "absl/strings/str_cat.h"
#include "scheduler/exact/placed_plans.h"

namespace psched::scheduler::exact {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// CbcMain1 reports progress through this callback; nothing to do.
int NoCallback(CbcModel*, int) { return 0; }

// Builds the program row by row: term() adds a coefficient, row() closes the row.
class Rows {
 public:
  explicit Rows(CoinModel& model) : model_(model) {}
  int Column(double lo, double up, double objective, bool integer) {
    const int c = columns_++;
    model_.setColumnBounds(c, lo, up);
    model_.setObjective(c, objective);
    if (integer) model_.setInteger(c);
    return c;
  }
  void Term(int column, double value) {
    if (value == 0) return;
    for (size_t i = 0; i < index_.size(); ++i) {
      if (index_[i] == column) {
        value_[i] += value;
        return;
      }
    }
    index_.push_back(column);
    value_.push_back(value);
  }
  void Row(double lo, double up) {
    model_.addRow(static_cast<int>(index_.size()), index_.data(), value_.data(), lo, up);
    index_.clear();
    value_.clear();
  }
  int columns() const { return columns_; }

 private:
  CoinModel& model_;
  int columns_ = 0;
  std::vector<int> index_;
  std::vector<double> value_;
};

}  // namespace

absl::StatusOr<StageResult> SolveMip(const StageInstance& in, const SolveLimits& limits,
                                     const StageSolution* warm, int64_t max_plans) {
  const auto begin = std::chrono::steady_clock::now();
  const int n = in.num_ops();
  const int D = in.num_devices();
  StageResult result;
  if (warm != nullptr && warm->found()) result.best = *warm;
  if (n == 0) {
    result.best.makespan_us = 0;
    return result;
  }
  std::vector<std::vector<PlacedPlan>> plans(static_cast<size_t>(n));
  for (int l = 0; l < n; ++l) {
    absl::StatusOr<std::vector<PlacedPlan>> p = EnumeratePlacedPlans(in, l, max_plans);
    if (!p.ok()) return p.status();
    plans[static_cast<size_t>(l)] = *std::move(p);
  }

  // Big-M: nothing in an optimal (or warm) schedule ends later than this.
  double horizon = 0, first_start = kInf;
  for (int l = 0; l < n; ++l) {
    double longest = 0;
    for (const PlacedPlan& p : plans[static_cast<size_t>(l)]) {
      for (int d = 0; d < D; ++d) {
        if (p.work[static_cast<size_t>(d)] > 0) {
          longest = std::max(longest, in.Duration(l, p.axis, p.work[static_cast<size_t>(d)], d));
        }
      }
    }
    horizon += longest;
    for (double t : in.pred_transfer(l)) horizon += t;
    for (int d = 0; d < D; ++d) {
      horizon = std::max(horizon, in.ExternalReady(l, d) + longest);
      first_start = std::min(first_start, in.ExternalReady(l, d));
    }
  }
  for (int d = 0; d < D; ++d) {
    for (const BusyInterval& b : in.busy(d)) horizon += b.end - b.begin;
    if (!in.busy(d).empty()) horizon = std::max(horizon, in.busy(d).back().end) + horizon;
  }
  double max_ready = 0;
  for (int l = 0; l < n; ++l) {
    for (int d = 0; d < D; ++d) max_ready = std::max(max_ready, in.ExternalReady(l, d));
  }
  horizon += max_ready;
  if (result.best.found()) horizon = std::min(horizon, result.best.makespan_us);
  const double M = 2 * horizon + 1;

  CoinModel model;
  Rows rows(model);
  std::vector<std::vector<int>> x(static_cast<size_t>(n));
  for (int l = 0; l < n; ++l) {
    for (size_t k = 0; k < plans[static_cast<size_t>(l)].size(); ++k) {
      x[static_cast<size_t>(l)].push_back(rows.Column(0, 1, 0, true));
    }
  }
  std::vector<int> start(static_cast<size_t>(n) * static_cast<size_t>(D));
  std::vector<bool> can_use(static_cast<size_t>(n) * static_cast<size_t>(D), false);
  for (int l = 0; l < n; ++l) {
    for (int d = 0; d < D; ++d) {
      start[static_cast<size_t>(l * D + d)] = rows.Column(in.ExternalReady(l, d), M, 0, false);
      for (const PlacedPlan& p : plans[static_cast<size_t>(l)]) {
        if (p.work[static_cast<size_t>(d)] > 0) can_use[static_cast<size_t>(l * D + d)] = true;
      }
    }
  }
  std::vector<int> completion(static_cast<size_t>(n));
  for (int l = 0; l < n; ++l) completion[static_cast<size_t>(l)] = rows.Column(0, M, 0, false);
  const int makespan = rows.Column(0, M, 1, false);

  // y_ld and p_ld as sums over plans, appended with a factor.
  auto active = [&](int l, int d, double factor) {
    for (size_t k = 0; k < plans[static_cast<size_t>(l)].size(); ++k) {
      if (plans[static_cast<size_t>(l)][k].work[static_cast<size_t>(d)] > 0) rows.Term(x[static_cast<size_t>(l)][k], factor);
    }
  };
  auto duration = [&](int l, int d, double factor) {
    for (size_t k = 0; k < plans[static_cast<size_t>(l)].size(); ++k) {
      const PlacedPlan& p = plans[static_cast<size_t>(l)][k];
      const int64_t w = p.work[static_cast<size_t>(d)];
      if (w > 0) rows.Term(x[static_cast<size_t>(l)][k], factor * in.Duration(l, p.axis, w, d));
    }
  };
  auto s = [&](int l, int d) { return start[static_cast<size_t>(l * D + d)]; };

  for (int l = 0; l < n; ++l) {
    for (int c : x[static_cast<size_t>(l)]) rows.Term(c, 1);
    rows.Row(1, 1);
    for (int d = 0; d < D; ++d) {
      if (!can_use[static_cast<size_t>(l * D + d)]) continue;
      // C_l >= s_ld + p_ld - M (1 - y_ld)
      rows.Term(completion[static_cast<size_t>(l)], 1);
      rows.Term(s(l, d), -1);
      duration(l, d, -1);
      active(l, d, -M);
      rows.Row(-M, kInf);
    }
    rows.Term(makespan, 1);
    rows.Term(completion[static_cast<size_t>(l)], -1);
    rows.Row(in.Tail(l), kInf);
    const auto preds = in.preds(l);
    const auto transfer = in.pred_transfer(l);
    for (size_t k = 0; k < preds.size(); ++k) {
      const int p = preds[k];
      for (int d = 0; d < D; ++d) {
        if (!can_use[static_cast<size_t>(l * D + d)]) continue;
        if (in.problem().EdgeFree(transfer[k])) {
          rows.Term(s(l, d), 1);
          rows.Term(completion[static_cast<size_t>(p)], -1);
          rows.Row(0, kInf);
          continue;
        }
        for (int e = 0; e < D; ++e) {
          if (!can_use[static_cast<size_t>(p * D + e)]) continue;
          // s_ld >= s_pe + p_pe + edge(e, d) - M (1 - y_pe)
          rows.Term(s(l, d), 1);
          rows.Term(s(p, e), -1);
          duration(p, e, -1);
          active(p, e, -M);
          rows.Row(in.EdgeCost(transfer[k], e, d) - M, kInf);
        }
      }
    }
  }
  // Load: the active subtasks of a device fit between the first possible start and T.
  for (int d = 0; d < D; ++d) {
    rows.Term(makespan, 1);
    for (int l = 0; l < n; ++l) duration(l, d, -1);
    rows.Row(first_start, kInf);
  }
  // Disjunctions between unrelated ops sharing a device.
  for (int a = 0; a < n; ++a) {
    for (int b = a + 1; b < n; ++b) {
      if (in.ancestor(a, b) || in.ancestor(b, a)) continue;
      for (int d = 0; d < D; ++d) {
        if (!can_use[static_cast<size_t>(a * D + d)] || !can_use[static_cast<size_t>(b * D + d)]) continue;
        const int order = rows.Column(0, 1, 0, true);
        // a first: s_bd >= s_ad + p_ad - M (1 - o) - M (2 - y_ad - y_bd)
        rows.Term(s(b, d), 1);
        rows.Term(s(a, d), -1);
        duration(a, d, -1);
        rows.Term(order, -M);
        active(a, d, -M);
        active(b, d, -M);
        rows.Row(-3 * M, kInf);
        // b first: s_ad >= s_bd + p_bd - M o - M (2 - y_ad - y_bd)
        rows.Term(s(a, d), 1);
        rows.Term(s(b, d), -1);
        duration(b, d, -1);
        rows.Term(order, M);
        active(a, d, -M);
        active(b, d, -M);
        rows.Row(-2 * M, kInf);
      }
    }
  }
  // Earlier stages' busy intervals: before or after each one.
  for (int l = 0; l < n; ++l) {
    for (int d = 0; d < D; ++d) {
      if (!can_use[static_cast<size_t>(l * D + d)]) continue;
      for (const BusyInterval& b : in.busy(d)) {
        if (b.end <= in.ExternalReady(l, d)) continue;
        const int before = rows.Column(0, 1, 0, true);
        // s + p <= b.begin + M (1 - z) + M (1 - y)
        rows.Term(s(l, d), -1);
        duration(l, d, -1);
        rows.Term(before, -M);
        active(l, d, -M);
        rows.Row(-b.begin - 2 * M, kInf);
        // s >= b.end - M z - M (1 - y)
        rows.Term(s(l, d), 1);
        rows.Term(before, M);
        active(l, d, -M);
        rows.Row(b.end - M, kInf);
      }
    }
  }

  OsiClpSolverInterface solver;
  solver.loadFromCoinModel(model);
  solver.messageHandler()->setLogLevel(0);
  CbcModel cbc(solver);
  CbcSolverUsefulData data;
  data.noPrinting_ = true;
  data.useSignalHandler_ = false;
  CbcMain0(cbc, data);
  cbc.setLogLevel(0);
  cbc.messageHandler()->setLogLevel(0);
  const std::string seconds = absl::StrCat(std::max(0.01, limits.time_limit_s));
  std::vector<std::string> args = {"psched", "-log", "0", "-threads", "0", "-timeMode", "elapsed", "-sec", seconds};
  if (limits.node_limit > 0) {
    args.push_back("-maxN");
    args.push_back(absl::StrCat(limits.node_limit));
  }
  const double ub = result.best.found() ? result.best.makespan_us : kInf;
  if (ub < kInf) {
    args.push_back("-cutoff");
    args.push_back(absl::StrCat(ub - 1e-7 * std::max(1.0, ub)));
  }
  args.push_back("-solve");
  args.push_back("-quit");
  std::vector<const char*> argv;
  for (const std::string& a : args) argv.push_back(a.c_str());
  CbcMain1(static_cast<int>(argv.size()), argv.data(), cbc, NoCallback, data);

  result.nodes = cbc.getNodeCount();
  const bool proven = cbc.isProvenOptimal() || cbc.isProvenInfeasible();
  const double* best = cbc.bestSolution();
  if (best != nullptr && cbc.getObjValue() < ub) {
    // Keep CBC's plans, devices and per-device order; re-time at earliest starts so the
    // schedule is exact despite the solver's tolerances.
    std::vector<const PlacedPlan*> chosen(static_cast<size_t>(n), nullptr);
    for (int l = 0; l < n; ++l) {
      for (size_t k = 0; k < plans[static_cast<size_t>(l)].size(); ++k) {
        if (best[x[static_cast<size_t>(l)][k]] > 0.5) chosen[static_cast<size_t>(l)] = &plans[static_cast<size_t>(l)][k];
      }
    }
    std::vector<std::vector<int>> orders(static_cast<size_t>(D));
    for (int d = 0; d < D; ++d) {
      for (int l = 0; l < n; ++l) {
        if (chosen[static_cast<size_t>(l)]->work[static_cast<size_t>(d)] > 0) orders[static_cast<size_t>(d)].push_back(l);
      }
      std::stable_sort(orders[static_cast<size_t>(d)].begin(), orders[static_cast<size_t>(d)].end(), [&](int a, int b) {
        return best[s(a, d)] < best[s(b, d)];
      });
    }
    OrderTimer timer(in);
    const double timed = timer.Time(chosen, orders);
    if (timed < result.best.makespan_us) result.best = SolutionFromPlacedPlans(in, chosen, timer.starts());
  }
  if (proven) {
    result.stop = StopReason::kOptimal;
    result.lower_bound_us = result.best.makespan_us;
  } else {
    result.stop = limits.node_limit > 0 && result.nodes >= limits.node_limit ? StopReason::kNodeLimit
                                                                             : StopReason::kTimeLimit;
    result.lower_bound_us = std::min(result.best.makespan_us, cbc.getBestPossibleObjValue());
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return result;
}

}  // namespace psched::scheduler::exact
