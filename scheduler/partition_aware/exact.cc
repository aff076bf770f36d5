#include "scheduler/partition_aware/exact.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <vector>

#include "CbcModel.hpp"
#include "CoinModel.hpp"
#include "OsiClpSolverInterface.hpp"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "scheduler/expanded_graph.h"
#include "scheduler/partition_aware/candidate_plans.h"
#include "scheduler/partition_aware/stage_heft.h"
#include "scheduler/partition_aware/staging.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/ranks.h"

namespace psched::scheduler::partition_aware {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// One candidate subtask: slot `slot` of candidate plan `plan` of stage op `local`.
struct Candidate {
  int local = 0;
  int plan = 0;
  int slot = 0;
  int64_t begin = 0;
  int64_t end = 0;
  std::vector<double> duration;  // per device
};

// A subtask placed by a solution: candidate index, device, and a start used only to order.
struct Assigned {
  int candidate = 0;
  int device = 0;
  double key = 0;
};

class StageProgram {
 public:
  StageProgram(const Problem& problem, const std::vector<OpId>& ops, const Schedule& fixed,
               const std::vector<std::vector<PartitionPlan>>& choices)
      : problem_(problem), ops_(ops), choices_(choices), devices_(problem.num_devices()) {
    local_.assign(static_cast<size_t>(problem.num_ops()), -1);
    for (size_t l = 0; l < ops_.size(); ++l) local_[static_cast<size_t>(ops_[l])] = static_cast<int>(l);
    available_.assign(static_cast<size_t>(devices_), 0.0);
    std::vector<double> fixed_end(static_cast<size_t>(problem.num_ops()) * static_cast<size_t>(devices_), -1.0);
    for (const ScheduledSubtask& s : fixed.subtasks()) {
      available_[static_cast<size_t>(s.device)] = std::max(available_[static_cast<size_t>(s.device)], s.end_us);
      double& e = fixed_end[static_cast<size_t>(s.op) * static_cast<size_t>(devices_) + static_cast<size_t>(s.device)];
      e = std::max(e, s.end_us);
    }
    ready_.assign(ops_.size() * static_cast<size_t>(devices_), 0.0);
    preds_.resize(ops_.size());
    ancestors_.assign(ops_.size(), std::vector<bool>(ops_.size(), false));
    for (size_t l = 0; l < ops_.size(); ++l) {
      const auto preds = problem.preds(ops_[l]);
      const auto transfer = problem.pred_transfer_us(ops_[l]);
      for (size_t k = 0; k < preds.size(); ++k) {
        const int pl = local_[static_cast<size_t>(preds[k])];
        if (pl >= 0) {
          preds_[l].emplace_back(pl, transfer[k]);
          ancestors_[l][static_cast<size_t>(pl)] = true;
          for (size_t a = 0; a < ops_.size(); ++a) {
            if (ancestors_[static_cast<size_t>(pl)][a]) ancestors_[l][a] = true;
          }
          continue;
        }
        for (int e = 0; e < devices_; ++e) {
          const double end = fixed_end[static_cast<size_t>(preds[k]) * static_cast<size_t>(devices_) + static_cast<size_t>(e)];
          if (end < 0) continue;
          for (int d = 0; d < devices_; ++d) {
            double& r = ready_[l * static_cast<size_t>(devices_) + static_cast<size_t>(d)];
            r = std::max(r, end + problem.EdgeCostUs(transfer[k], e, d));
          }
        }
      }
    }
    for (size_t l = 0; l < ops_.size(); ++l) {
      for (size_t p = 0; p < choices_[l].size(); ++p) {
        const PartitionPlan& plan = choices_[l][p];
        int64_t begin = 0;
        for (size_t q = 0; q < plan.work.size(); ++q) {
          Candidate c{static_cast<int>(l), static_cast<int>(p), static_cast<int>(q), begin, begin + plan.work[q], {}};
          for (int d = 0; d < devices_; ++d) c.duration.push_back(problem.LatencyUs(ops_[l], plan.axis, plan.work[q], d));
          begin += plan.work[q];
          candidates_.push_back(std::move(c));
        }
      }
    }
  }

  // Earliest starts for `assigned` (its plan choice, devices and per-device order), with
  // every device taking its subtasks in key order after its earlier-stage work.
  double Retime(std::vector<Assigned> assigned, std::vector<ScheduledSubtask>& out) const {
    std::sort(assigned.begin(), assigned.end(), [this](const Assigned& a, const Assigned& b) {
      if (a.key != b.key) return a.key < b.key;
      const Candidate& x = candidates_[static_cast<size_t>(a.candidate)];
      const Candidate& y = candidates_[static_cast<size_t>(b.candidate)];
      return x.local != y.local ? x.local < y.local : x.slot < y.slot;
    });
    std::vector<double> device_free = available_;
    std::vector<double> end_on(ops_.size() * static_cast<size_t>(devices_), -1.0);
    out.clear();
    double makespan = 0;
    for (const Assigned& a : assigned) {
      const Candidate& c = candidates_[static_cast<size_t>(a.candidate)];
      const size_t l = static_cast<size_t>(c.local);
      double start = std::max(device_free[static_cast<size_t>(a.device)],
                              ready_[l * static_cast<size_t>(devices_) + static_cast<size_t>(a.device)]);
      for (const auto& [p, transfer] : preds_[l]) {
        for (int e = 0; e < devices_; ++e) {
          const double end = end_on[static_cast<size_t>(p) * static_cast<size_t>(devices_) + static_cast<size_t>(e)];
          if (end >= 0) start = std::max(start, end + problem_.EdgeCostUs(transfer, e, a.device));
        }
      }
      const double end = start + c.duration[static_cast<size_t>(a.device)];
      device_free[static_cast<size_t>(a.device)] = end;
      end_on[l * static_cast<size_t>(devices_) + static_cast<size_t>(a.device)] = end;
      const PartitionPlan& plan = choices_[l][static_cast<size_t>(c.plan)];
      out.push_back(ScheduledSubtask{ops_[l], c.slot, a.device, plan.axis, c.begin, c.end, start, end});
      makespan = std::max(makespan, end);
    }
    return makespan;
  }

  // (local op, plan index) of a candidate.
  std::pair<int, int> PlanOf(int candidate) const {
    const Candidate& c = candidates_[static_cast<size_t>(candidate)];
    return {c.local, c.plan};
  }

  // The candidate index of slot `slot` of plan `plan` of local op `local`.
  int Find(int local, int plan, int slot) const {
    for (size_t k = 0; k < candidates_.size(); ++k) {
      const Candidate& c = candidates_[k];
      if (c.local == local && c.plan == plan && c.slot == slot) return static_cast<int>(k);
    }
    return -1;
  }

  // Solves the program with `warm` (a feasible assignment) as incumbent; returns the
  // best assignment found, or `warm` when CBC finds nothing better.
  std::vector<Assigned> Solve(const std::vector<Assigned>& warm, double seconds) const {
    const size_t m = candidates_.size();
    const int D = devices_;
    double horizon = 0;
    for (double a : available_) horizon = std::max(horizon, a);
    for (double r : ready_) horizon = std::max(horizon, r);
    for (const Candidate& c : candidates_) horizon += *std::max_element(c.duration.begin(), c.duration.end());
    for (size_t l = 0; l < ops_.size(); ++l) {
      for (const auto& pred : preds_[l]) horizon += pred.second;
    }
    const double big = horizon;

    CoinModel model;
    int columns = 0;
    auto column = [&](double lo, double up, double objective, bool integer) {
      const int c = columns++;
      model.setColumnBounds(c, lo, up);
      model.setObjective(c, objective);
      if (integer) model.setInteger(c);
      return c;
    };
    // Columns.
    std::vector<int> choose;  // per (local, plan), flattened in candidate order of plans
    std::vector<int> choose_begin;
    for (size_t l = 0; l < ops_.size(); ++l) {
      choose_begin.push_back(static_cast<int>(choose.size()));
      const bool only = choices_[l].size() == 1;
      for (size_t p = 0; p < choices_[l].size(); ++p) choose.push_back(column(only ? 1 : 0, 1, 0, true));
    }
    choose_begin.push_back(static_cast<int>(choose.size()));
    std::vector<int> x(m * static_cast<size_t>(D)), start(m);
    for (size_t k = 0; k < m; ++k) {
      for (int d = 0; d < D; ++d) x[k * static_cast<size_t>(D) + static_cast<size_t>(d)] = column(0, 1, 0, true);
      start[k] = column(0, big, 0, false);
    }
    std::vector<int> completion(ops_.size());
    for (size_t l = 0; l < ops_.size(); ++l) completion[l] = column(0, big, 0, false);
    const int makespan = column(0, big, 1, false);
    struct Pair {
      size_t a, b;
      int order;
      int same_first;  // D columns from here
    };
    std::vector<Pair> pairs;
    for (size_t a = 0; a < m; ++a) {
      for (size_t b = a + 1; b < m; ++b) {
        const size_t la = static_cast<size_t>(candidates_[a].local);
        const size_t lb = static_cast<size_t>(candidates_[b].local);
        if (la == lb || ancestors_[la][lb] || ancestors_[lb][la]) continue;
        Pair p{a, b, column(0, 1, 0, true), columns};
        for (int d = 0; d < D; ++d) column(0, 1, 0, false);
        pairs.push_back(p);
      }
    }

    std::vector<int> idx;
    std::vector<double> val;
    auto row = [&](double lo, double up) {
      model.addRow(static_cast<int>(idx.size()), idx.data(), val.data(), lo, up);
      idx.clear();
      val.clear();
    };
    auto term = [&](int c, double v) {
      idx.push_back(c);
      val.push_back(v);
    };
    for (size_t l = 0; l < ops_.size(); ++l) {
      for (int c = choose_begin[l]; c < choose_begin[l + 1]; ++c) term(choose[static_cast<size_t>(c)], 1);
      row(1, 1);
    }
    for (size_t k = 0; k < m; ++k) {
      const Candidate& c = candidates_[k];
      const size_t l = static_cast<size_t>(c.local);
      // Active exactly when its plan is chosen, on one device.
      for (int d = 0; d < D; ++d) term(x[k * static_cast<size_t>(D) + static_cast<size_t>(d)], 1);
      term(choose[static_cast<size_t>(choose_begin[l] + c.plan)], -1);
      row(0, 0);
      // Starts after inputs from earlier stages and the device's earlier work.
      term(start[k], 1);
      for (int d = 0; d < D; ++d) {
        term(x[k * static_cast<size_t>(D) + static_cast<size_t>(d)],
             -std::max(available_[static_cast<size_t>(d)], ready_[l * static_cast<size_t>(D) + static_cast<size_t>(d)]));
      }
      row(0, kInf);
      // The op completes after it.
      term(completion[l], 1);
      term(start[k], -1);
      for (int d = 0; d < D; ++d) term(x[k * static_cast<size_t>(D) + static_cast<size_t>(d)], -c.duration[static_cast<size_t>(d)]);
      row(0, kInf);
      for (const auto& [p, transfer] : preds_[l]) {
        term(start[k], 1);
        term(completion[static_cast<size_t>(p)], -1);
        row(transfer, kInf);
      }
    }
    // Siblings on distinct devices.
    for (size_t l = 0; l < ops_.size(); ++l) {
      for (size_t p = 0; p < choices_[l].size(); ++p) {
        for (int d = 0; d < D; ++d) {
          for (size_t k = 0; k < m; ++k) {
            if (candidates_[k].local == static_cast<int>(l) && candidates_[k].plan == static_cast<int>(p)) {
              term(x[k * static_cast<size_t>(D) + static_cast<size_t>(d)], 1);
            }
          }
          if (idx.size() > 1) {
            row(-kInf, 1);
          } else {
            idx.clear();
            val.clear();
          }
        }
      }
    }
    for (size_t l = 0; l < ops_.size(); ++l) {
      term(makespan, 1);
      term(completion[l], -1);
      row(0, kInf);
    }
    // Disjunctions: with both on one device (same = sum of w_d), order = 1 puts a first.
    for (const Pair& p : pairs) {
      for (int d = 0; d < D; ++d) {
        term(p.same_first + d, 1);
        term(x[p.a * static_cast<size_t>(D) + static_cast<size_t>(d)], -1);
        term(x[p.b * static_cast<size_t>(D) + static_cast<size_t>(d)], -1);
        row(-1, kInf);
      }
      // s_b - s_a - dur_a - big * order - big * same >= -2 big
      term(start[p.b], 1);
      term(start[p.a], -1);
      for (int d = 0; d < D; ++d) {
        term(x[p.a * static_cast<size_t>(D) + static_cast<size_t>(d)], -candidates_[p.a].duration[static_cast<size_t>(d)]);
      }
      term(p.order, -big);
      for (int d = 0; d < D; ++d) term(p.same_first + d, -big);
      row(-2 * big, kInf);
      // s_a - s_b - dur_b + big * order - big * same >= -big
      term(start[p.a], 1);
      term(start[p.b], -1);
      for (int d = 0; d < D; ++d) {
        term(x[p.b * static_cast<size_t>(D) + static_cast<size_t>(d)], -candidates_[p.b].duration[static_cast<size_t>(d)]);
      }
      term(p.order, big);
      for (int d = 0; d < D; ++d) term(p.same_first + d, -big);
      row(-big, kInf);
    }

    // Incumbent from `warm`.
    std::vector<ScheduledSubtask> timed;
    const double warm_makespan = Retime(warm, timed);
    std::vector<double> solution(static_cast<size_t>(columns), 0.0);
    std::vector<double> cand_start(m, 0.0);
    std::vector<int> cand_device(m, -1);
    std::vector<double> op_completion(ops_.size(), 0.0);
    for (const ScheduledSubtask& s : timed) {
      const size_t l = static_cast<size_t>(local_[static_cast<size_t>(s.op)]);
      op_completion[l] = std::max(op_completion[l], s.end_us);
    }
    for (size_t w = 0; w < warm.size(); ++w) {
      const Candidate& c = candidates_[static_cast<size_t>(warm[w].candidate)];
      solution[static_cast<size_t>(choose[static_cast<size_t>(choose_begin[static_cast<size_t>(c.local)] + c.plan)])] = 1;
    }
    for (const ScheduledSubtask& s : timed) {
      const int l = local_[static_cast<size_t>(s.op)];
      for (const Assigned& a : warm) {
        const Candidate& c = candidates_[static_cast<size_t>(a.candidate)];
        if (c.local == l && c.slot == s.slot) {
          cand_start[static_cast<size_t>(a.candidate)] = s.start_us;
          cand_device[static_cast<size_t>(a.candidate)] = a.device;
        }
      }
    }
    for (size_t k = 0; k < m; ++k) {
      const size_t l = static_cast<size_t>(candidates_[k].local);
      if (cand_device[k] >= 0) {
        solution[static_cast<size_t>(x[k * static_cast<size_t>(D) + static_cast<size_t>(cand_device[k])])] = 1;
        solution[static_cast<size_t>(start[k])] = cand_start[k];
      } else {
        // Inactive: start once the predecessors are done (its duration is zero).
        double s = 0;
        for (const auto& [p, transfer] : preds_[l]) s = std::max(s, op_completion[static_cast<size_t>(p)] + transfer);
        solution[static_cast<size_t>(start[k])] = s;
        op_completion[l] = std::max(op_completion[l], s);
      }
    }
    for (size_t l = 0; l < ops_.size(); ++l) solution[static_cast<size_t>(completion[l])] = op_completion[l];
    double warm_objective = 0;
    for (double c : op_completion) warm_objective = std::max(warm_objective, c);
    solution[static_cast<size_t>(makespan)] = warm_objective;
    for (const Pair& p : pairs) {
      const bool same = cand_device[p.a] >= 0 && cand_device[p.a] == cand_device[p.b];
      if (same) solution[static_cast<size_t>(p.same_first + cand_device[p.a])] = 1;
      solution[static_cast<size_t>(p.order)] = cand_start[p.a] <= cand_start[p.b] ? 1 : 0;
    }

    OsiClpSolverInterface solver;
    solver.loadFromCoinModel(model);
    solver.messageHandler()->setLogLevel(0);
    CbcModel cbc(solver);
    cbc.setLogLevel(0);
    cbc.messageHandler()->setLogLevel(0);
    cbc.setMaximumSeconds(seconds);
    cbc.setBestSolution(solution.data(), columns, warm_objective, true);
    cbc.branchAndBound();
    const double* best = cbc.bestSolution();
    if (best == nullptr || !(cbc.getObjValue() < warm_makespan)) return warm;
    std::vector<Assigned> out;
    for (size_t k = 0; k < m; ++k) {
      for (int d = 0; d < D; ++d) {
        if (best[x[k * static_cast<size_t>(D) + static_cast<size_t>(d)]] > 0.5) {
          out.push_back(Assigned{static_cast<int>(k), d, best[start[k]]});
        }
      }
    }
    return out;
  }

 private:
  const Problem& problem_;
  const std::vector<OpId>& ops_;
  const std::vector<std::vector<PartitionPlan>>& choices_;
  int devices_;
  std::vector<int> local_;
  std::vector<double> available_;  // [device]: end of its earlier-stage work
  std::vector<double> ready_;      // [local * D + device]: inputs from earlier stages
  std::vector<std::vector<std::pair<int, double>>> preds_;  // in-stage (local, transfer)
  std::vector<std::vector<bool>> ancestors_;
  std::vector<Candidate> candidates_;
};

}  // namespace

std::string ExactScheduler::name() const {
  switch (mode_) {
    case ExactMode::kScheduleOnly: return "exact-schedule-only";
    case ExactMode::kExpandedLocal: return "exact-expanded-local";
    case ExactMode::kJoint: return "exact";
  }
  return "exact";
}

absl::StatusOr<Schedule> ExactScheduler::Plan(const Problem& problem, const SchedulerOptions& options) const {
  double seconds = 10;
  int max_stage = 10;
  for (const auto& [key, value] : options.params) {
    if (key == "stage_time_limit_s") {
      if (!absl::SimpleAtod(value, &seconds) || !(seconds > 0)) {
        return absl::InvalidArgumentError(absl::StrCat(name(), ": stage_time_limit_s = '", value, "' is not a positive number"));
      }
    } else if (key == "max_stage_size") {
      if (!absl::SimpleAtoi(value, &max_stage) || max_stage < 1) {
        return absl::InvalidArgumentError(absl::StrCat(name(), ": max_stage_size = '", value, "' is not a positive integer"));
      }
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(name(), ": unknown option '", key, "'; known: stage_time_limit_s, max_stage_size"));
    }
  }
  if (options.timeout != absl::InfiniteDuration()) seconds = absl::ToDoubleSeconds(options.timeout);

  const int n = problem.num_ops();
  ExpandedGraph unpartitioned;
  if (absl::Status s = unpartitioned.Build(problem, {}); !s.ok()) return s;
  std::vector<double> task_rank, op_rank;
  UpwardRanks(problem, unpartitioned, task_rank, op_rank);
  const std::vector<std::vector<OpId>> stages = BuildStages(problem, op_rank, max_stage);

  std::vector<PartitionPlan> plans(static_cast<size_t>(n));
  Schedule committed(n, problem.num_devices());
  StageHeft heft;
  std::vector<ScheduledSubtask> timed;
  for (const std::vector<OpId>& stage : stages) {
    std::vector<std::vector<PartitionPlan>> choices(stage.size());
    for (size_t l = 0; l < stage.size(); ++l) {
      PartitionPlan local = mode_ == ExactMode::kScheduleOnly ? PartitionPlan::None()
                                                              : MinLocalLatencyPlan(problem, stage[l]).plan;
      if (mode_ == ExactMode::kJoint && !(local == PartitionPlan::None())) choices[l].push_back(PartitionPlan::None());
      choices[l].push_back(std::move(local));
    }
    // Heuristic warm start: HEFT with every op on its first choice, and (joint) its last.
    heft.Prepare(problem, stage, committed);
    StageProgram program(problem, stage, committed, choices);
    std::vector<Assigned> best_warm;
    double best_heft = kInf;
    Schedule heft_schedule;
    for (bool last : {false, true}) {
      for (size_t l = 0; l < stage.size(); ++l) {
        plans[static_cast<size_t>(stage[l])] = last ? choices[l].back() : choices[l].front();
      }
      const double mk = heft.Run(plans);
      if (mk >= best_heft) continue;
      best_heft = mk;
      heft_schedule.Reset(n, problem.num_devices());
      heft.Emit(heft_schedule);
      best_warm.clear();
      for (const ScheduledSubtask& s : heft_schedule.subtasks()) {
        const int l = static_cast<int>(std::find(stage.begin(), stage.end(), s.op) - stage.begin());
        const int plan = last ? static_cast<int>(choices[static_cast<size_t>(l)].size()) - 1 : 0;
        best_warm.push_back(Assigned{program.Find(l, plan, s.slot), s.device, s.start_us});
      }
      for (OpId op : stage) heft_schedule.SetPlan(op, plans[static_cast<size_t>(op)]);
    }
    const std::vector<Assigned> solved = program.Solve(best_warm, seconds);
    const double exact_makespan = program.Retime(solved, timed);
    if (exact_makespan < best_heft) {
      for (const ScheduledSubtask& s : timed) committed.Add(s);
      for (const Assigned& a : solved) {
        const auto [local, plan] = program.PlanOf(a.candidate);
        plans[static_cast<size_t>(stage[static_cast<size_t>(local)])] =
            choices[static_cast<size_t>(local)][static_cast<size_t>(plan)];
      }
    } else {
      for (const ScheduledSubtask& s : heft_schedule.subtasks()) committed.Add(s);
      for (OpId op : stage) plans[static_cast<size_t>(op)] = heft_schedule.plan(op);
    }
  }
  for (OpId op = 0; op < n; ++op) committed.SetPlan(op, plans[static_cast<size_t>(op)]);
  // Staging can cost what whole-graph HEFT gets across stage boundaries: keep the best of
  // the staged result and HEFT on the final plans and on each uniform plan choice.
  absl::StatusOr<std::unique_ptr<ListScheduler>> whole = MakeListScheduler("heft");
  if (!whole.ok()) return whole.status();
  Schedule best = std::move(committed);
  std::vector<PartitionPlan> uniform(static_cast<size_t>(n));
  for (int variant = 0; variant < 3; ++variant) {
    if (variant > 0) {
      for (OpId op = 0; op < n; ++op) {
        uniform[static_cast<size_t>(op)] =
            mode_ == ExactMode::kScheduleOnly ? PartitionPlan::None()
            : variant == 1 && mode_ == ExactMode::kJoint ? PartitionPlan::None()
                                                          : MinLocalLatencyPlan(problem, op).plan;
      }
    }
    absl::StatusOr<Schedule> s = (*whole)->Schedule(problem, variant == 0 ? plans : uniform);
    if (s.ok() && s->makespan_us() < best.makespan_us()) best = *std::move(s);
  }
  return best;
}

}  // namespace psched::scheduler::partition_aware
