#include "scheduler/exact/exact_scheduler.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "scheduler/exact/branch_and_bound.h"
#include "scheduler/exact/mip_formulation.h"
#include "scheduler/exact/placed_plans.h"
#include "scheduler/expanded_graph.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/partition_aware/candidate_plans.h"
#include "scheduler/partition_aware/iterative_search.h"
#include "scheduler/partition_aware/pa_heft.h"
#include "scheduler/partition_aware/stage_heft.h"
#include "scheduler/partition_aware/staging.h"
#include "scheduler/ranks.h"

namespace psched::scheduler::exact {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A complete schedule of the problem from one heuristic, or its plans only.
struct Candidate {
  std::string name;
  std::vector<PartitionPlan> plans;  // one per op
  std::optional<Schedule> whole;     // the heuristic's own whole-graph schedule
};

std::vector<PartitionPlan> FixedPlans(const Problem& problem, ExactSpace space) {
  std::vector<PartitionPlan> plans(static_cast<size_t>(problem.num_ops()));
  for (OpId op = 0; op < problem.num_ops(); ++op) {
    if (space == ExactSpace::kExpandedLocal)
      plans[static_cast<size_t>(op)] = partition_aware::MinLocalLatencyPlan(problem, op).plan;
    if (space == ExactSpace::kExpandedEqual)
      plans[static_cast<size_t>(op)] = partition_aware::EqualSizePlan(problem, op).plan;
  }
  return plans;
}

// The warm starts of `space`: plan vectors for the stages, and whole-graph schedules to
// compare the staged result with.
absl::StatusOr<std::vector<Candidate>> WarmStarts(const Problem& problem, ExactSpace space,
                                                  uint64_t seed) {
  std::vector<Candidate> out;
  if (space != ExactSpace::kJoint) {
    const std::vector<PartitionPlan> plans = FixedPlans(problem, space);
    for (const std::string& list : ListSchedulerNames()) {
      if (list.find('<') != std::string::npos) continue;
      absl::StatusOr<std::unique_ptr<ListScheduler>> s = MakeListScheduler(list);
      if (!s.ok()) return s.status();
      absl::StatusOr<Schedule> whole = (*s)->Schedule(problem, plans);
      if (!whole.ok()) continue;  // e.g. a list scheduler that cannot place a split
      out.push_back(Candidate{list, plans, *std::move(whole)});
    }
    return out;
  }
  const int n = problem.num_ops();
  std::vector<PartitionPlan> none(static_cast<size_t>(n)), local(static_cast<size_t>(n)),
      equal(static_cast<size_t>(n));
  for (OpId op = 0; op < n; ++op) {
    local[static_cast<size_t>(op)] = partition_aware::MinLocalLatencyPlan(problem, op).plan;
    equal[static_cast<size_t>(op)] = partition_aware::EqualSizePlan(problem, op).plan;
  }
  absl::StatusOr<std::unique_ptr<ListScheduler>> heft = MakeListScheduler("heft");
  if (!heft.ok()) return heft.status();
  for (auto& [name, plans] : {std::pair{"heft", none}, std::pair{"expanded-local:heft", local},
                              std::pair{"expanded-equal:heft", equal}}) {
    absl::StatusOr<Schedule> whole = (*heft)->Schedule(problem, plans);
    if (!whole.ok()) return whole.status();
    out.push_back(Candidate{name, plans, *std::move(whole)});
  }
  absl::StatusOr<Schedule> pa =
      partition_aware::PaHeftScheduler().Plan(problem, SchedulerOptions{});
  if (!pa.ok()) return pa.status();
  out.push_back(Candidate{"pa-heft",
                          std::vector<PartitionPlan>(pa->plans().begin(), pa->plans().end()),
                          *std::move(pa)});
  // The paper's search, and the variant docs/evaluation.md found best (local moves from
  // the min-local-latency plans).
  partition_aware::IterativeOptions paper, tuned;
  paper.seed = tuned.seed = seed;
  tuned.local_moves = 5;
  tuned.initial = partition_aware::InitialPlans::kMinLocalLatency;
  for (auto& [name, opts] :
       {std::pair{"iterative", paper}, std::pair{"iterative(local_moves=5,min-local)", tuned}}) {
    absl::StatusOr<Schedule> it = partition_aware::IterativeSearch(problem, **heft, opts);
    if (!it.ok()) return it.status();
    out.push_back(Candidate{
        name, std::vector<PartitionPlan>(it->plans().begin(), it->plans().end()), *std::move(it)});
  }
  return out;
}

// The stage's subtasks and plans from the StageHeft run just made.
StageSolution FromStageHeft(const partition_aware::StageHeft& heft, const Problem& problem,
                            std::span<const OpId> stage, const std::vector<PartitionPlan>& plans,
                            double makespan) {
  Schedule s(problem.num_ops(), problem.num_devices());
  heft.Emit(s);
  StageSolution sol;
  sol.subtasks.assign(s.subtasks().begin(), s.subtasks().end());
  std::stable_sort(
      sol.subtasks.begin(), sol.subtasks.end(),
      [](const ScheduledSubtask& a, const ScheduledSubtask& b) { return a.start_us < b.start_us; });
  for (OpId op : stage) sol.plans.push_back(plans[static_cast<size_t>(op)]);
  sol.makespan_us = makespan;
  return sol;
}

// The candidate space of the incumbent phase: per op the unpartitioned op, every warm
// start's plan, and per split axis the divisions balancing the op's latency over all
// devices and over each pair of devices - a small subset of the joint space (each plan
// with free device choice) on which the branch and bound runs far faster.
std::vector<OpSpace> CandidateSpaces(const Problem& problem, std::span<const OpId> ops,
                                     const std::vector<Candidate>& warm) {
  std::vector<OpSpace> out;
  const int D = problem.num_devices();
  const int slots = partition_aware::PlanSlots(problem);
  for (OpId op : ops) {
    std::vector<PartitionPlan> plans = {PartitionPlan::None()};
    for (const Candidate& c : warm) plans.push_back(c.plans[static_cast<size_t>(op)]);
    std::array<model::SplitAxis, 3> axes;
    const int num_axes = slots >= 2 ? partition_aware::SplitAxes(problem, op, axes) : 0;
    for (int k = 0; k < num_axes; ++k) {
      const model::SplitAxis axis = axes[static_cast<size_t>(k)];
      std::vector<std::vector<int>> groups;
      for (int a = 0; a < D; ++a) {
        for (int b = a + 1; b < D; ++b) groups.push_back({a, b});
      }
      if (D > 2) {
        groups.emplace_back();
        for (int d = 0; d < std::min(D, slots); ++d) groups.back().push_back(d);
      }
      for (const std::vector<int>& devices : groups) {
        const std::vector<double> offsets(devices.size(), 0.0);
        std::vector<int64_t> work(devices.size());
        partition_aware::MinMaxDivision(
            problem.WorkSize(op, axis), problem.alignment(axis), static_cast<int>(devices.size()),
            offsets,
            [&](int slot, int64_t w) {
              return problem.LatencyUs(op, axis, w, devices[static_cast<size_t>(slot)]);
            },
            work);
        PartitionPlan plan{axis, work};
        partition_aware::Canonicalize(plan);
        plans.push_back(plan);
      }
    }
    OpSpace space;
    for (PartitionPlan& plan : plans) {
      partition_aware::Canonicalize(plan);
      OpAxis a;
      a.axis = plan.axis;
      a.total = problem.WorkSize(op, plan.axis);
      a.units = a.total;
      a.fixed = plan.work;
      bool seen = false;
      for (const OpAxis& b : space) seen |= b.axis == a.axis && b.fixed == a.fixed;
      if (!seen) space.push_back(std::move(a));
    }
    out.push_back(std::move(space));
  }
  return out;
}

// The stage's part of a whole-graph schedule, re-timed after the stages committed so far:
// its plans, devices and per-device order kept, every subtask at its earliest start.
// Not found (infinite makespan) when a plan is outside the instance's space.
StageSolution Retimed(const StageInstance& instance, const Schedule& whole) {
  const int n = instance.num_ops();
  const int D = instance.num_devices();
  std::vector<PlacedPlan> placed(static_cast<size_t>(n));
  std::vector<std::vector<std::pair<double, int>>> by_device(static_cast<size_t>(D));
  for (int l = 0; l < n; ++l) {
    const PartitionPlan& plan = whole.plan(instance.op(l));
    PlacedPlan& p = placed[static_cast<size_t>(l)];
    p.axis = -1;
    for (size_t ax = 0; ax < instance.space(l).size(); ++ax) {
      const OpAxis& a = instance.space(l)[ax];
      std::vector<int64_t> active;
      for (int64_t w : plan.work) {
        if (w > 0) active.push_back(w);
      }
      if (a.axis == plan.axis && (a.grid() || a.fixed == active)) p.axis = static_cast<int>(ax);
    }
    if (p.axis < 0) return StageSolution{};
    p.work.assign(static_cast<size_t>(D), 0);
    p.last.assign(static_cast<size_t>(D), false);
    p.slot.assign(static_cast<size_t>(D), -1);
  }
  for (const ScheduledSubtask& t : whole.subtasks()) {
    int l = -1;
    for (int k = 0; k < n && l < 0; ++k) l = instance.op(k) == t.op ? k : -1;
    if (l < 0) continue;
    PlacedPlan& p = placed[static_cast<size_t>(l)];
    const OpAxis& a = instance.space(l)[static_cast<size_t>(p.axis)];
    if (a.grid() && ((t.end - t.begin) % a.alignment != 0 && t.end != a.total))
      return StageSolution{};
    p.work[static_cast<size_t>(t.device)] = t.end - t.begin;
    p.last[static_cast<size_t>(t.device)] = a.grid() && a.clip > 0 && t.end == a.total;
    p.slot[static_cast<size_t>(t.device)] = a.grid() ? -1 : t.slot;
    by_device[static_cast<size_t>(t.device)].emplace_back(t.start_us, l);
  }
  std::vector<std::vector<int>> orders(static_cast<size_t>(D));
  for (int d = 0; d < D; ++d) {
    std::stable_sort(by_device[static_cast<size_t>(d)].begin(),
                     by_device[static_cast<size_t>(d)].end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    for (const auto& [start, l] : by_device[static_cast<size_t>(d)])
      orders[static_cast<size_t>(d)].push_back(l);
  }
  std::vector<const PlacedPlan*> plans;
  for (const PlacedPlan& p : placed) plans.push_back(&p);
  OrderTimer timer(instance);
  if (!(timer.Time(plans, orders) < std::numeric_limits<double>::infinity()))
    return StageSolution{};
  return SolutionFromPlacedPlans(instance, plans, timer.starts());
}

// Large neighbourhoods of the incumbent: a window of consecutive stage ops gets its whole
// joint space while every other op keeps its incumbent plan (devices and order stay free);
// the branch and bound solves that (up to a node budget) and an improvement is kept.
// Windows slide over the stage until one pass improves nothing or `seconds` pass.
absl::Status ImproveByNeighbourhoods(const StageInstance& joint, const Schedule& committed,
                                     double seconds, int64_t node_limit, StageSolution& best,
                                     std::string& best_name) {
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(seconds));
  const int n = joint.num_ops();
  constexpr int kWidth = 3;
  std::vector<OpId> ops;
  for (int l = 0; l < n; ++l) ops.push_back(joint.op(l));
  bool improved = true;
  while (improved) {
    improved = false;
    for (int first = 0; first < n; ++first) {
      const double left =
          std::chrono::duration<double>(deadline - std::chrono::steady_clock::now()).count();
      if (left <= 0) return absl::OkStatus();
      bool any_grid = false;
      std::vector<OpSpace> spaces;
      for (int l = 0; l < n; ++l) {
        const bool open = l >= first && l < first + kWidth;
        if (open) {
          spaces.push_back(joint.space(l));
          for (const OpAxis& a : joint.space(l)) any_grid |= a.grid();
          continue;
        }
        const PartitionPlan& plan = best.plans[static_cast<size_t>(l)];
        OpAxis a;
        a.axis = plan.axis;
        a.total = joint.problem().WorkSize(ops[static_cast<size_t>(l)], plan.axis);
        a.units = a.total;
        for (int64_t w : plan.work) {
          if (w > 0) a.fixed.push_back(w);
        }
        spaces.push_back(OpSpace{a});
      }
      if (!any_grid) continue;
      absl::StatusOr<StageInstance> window =
          StageInstance::Build(joint.problem(), ops, committed, std::move(spaces));
      if (!window.ok()) return window.status();
      SolveLimits limits;
      limits.time_limit_s = std::min(left, std::max(0.02, seconds / 8));
      limits.node_limit = node_limit > 0 ? node_limit : 5000;
      const StageResult r = SolveBranchAndBound(*window, limits, &best);
      if (r.best.makespan_us < best.makespan_us * (1 - 1e-12)) {
        best = r.best;
        best_name = "neighbourhoods";
        improved = true;
      }
    }
  }
  return absl::OkStatus();
}

std::mutex& CbcMutex() {
  static std::mutex m;
  return m;
}

}  // namespace

absl::StatusOr<ExactOptions> ApplyExactParams(ExactOptions base, const SchedulerOptions& options) {
  // Not a structured binding: clang 14 (the TSan build's compiler) cannot capture one.
  for (const auto& param : options.params) {
    const std::string& key = param.first;
    const std::string& value = param.second;
    auto bad = [&](const char* want) {
      return absl::InvalidArgumentError(
          absl::StrCat("exact: option '", key, "' = '", value, "' is not ", want));
    };
    if (key == "stage_time_limit_s") {
      if (!absl::SimpleAtod(value, &base.stage_time_limit_s) || !(base.stage_time_limit_s > 0) ||
          base.stage_time_limit_s > 1e6) {
        return bad("a number of seconds in (0, 1e6]");
      }
    } else if (key == "stage_node_limit") {
      if (!absl::SimpleAtoi(value, &base.stage_node_limit) || base.stage_node_limit < 0) {
        return bad("a non-negative integer");
      }
    } else if (key == "max_stage_size") {
      if (!absl::SimpleAtoi(value, &base.max_stage_size) || base.max_stage_size < 1)
        return bad("a positive integer");
    } else if (key == "staging") {
      if (value != "true" && value != "false") return bad("true or false");
      base.staging = value == "true";
    } else if (key == "formulation") {
      if (value != "bnb" && value != "mip") return bad("bnb or mip");
      base.formulation =
          value == "bnb" ? ExactFormulation::kBranchAndBound : ExactFormulation::kMip;
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "exact: unknown option '", key,
          "'; known: stage_time_limit_s, stage_node_limit, max_stage_size, staging, formulation"));
    }
  }
  base.seed = options.seed;
  if (options.timeout != absl::InfiniteDuration()) {
    base.stage_time_limit_s = std::max(1e-3, absl::ToDoubleSeconds(options.timeout));
  }
  return base;
}

absl::StatusOr<Schedule> SolveExact(const Problem& problem, const ExactOptions& options,
                                    ExactReport* report) {
  const auto begin = std::chrono::steady_clock::now();
  ExactReport local_report;
  ExactReport& r = report != nullptr ? *report : local_report;
  r = ExactReport{};
  const int n = problem.num_ops();
  Schedule committed(n, problem.num_devices());
  if (n == 0) return committed;

  std::vector<std::vector<OpId>> stages;
  if (options.staging) {
    ExpandedGraph unpartitioned;
    if (absl::Status s = unpartitioned.Build(problem, {}); !s.ok()) return s;
    std::vector<double> task_rank, op_rank;
    UpwardRanks(problem, unpartitioned, task_rank, op_rank);
    stages = partition_aware::BuildStages(problem, op_rank, std::max(1, options.max_stage_size));
  } else {
    stages.emplace_back();
    for (OpId op = 0; op < n; ++op) stages.back().push_back(op);
  }

  absl::StatusOr<std::vector<Candidate>> warm = WarmStarts(problem, options.space, options.seed);
  if (!warm.ok()) return warm.status();

  {
    std::vector<OpId> all(static_cast<size_t>(n));
    for (OpId op = 0; op < n; ++op) all[static_cast<size_t>(op)] = op;
    const Schedule none(n, problem.num_devices());
    absl::StatusOr<StageInstance> whole =
        StageInstance::Build(problem, all, none, BuildOpSpaces(problem, all, options.space));
    if (!whole.ok()) return whole.status();
    r.lower_bound_us = RootLowerBound(*whole);
  }

  partition_aware::StageHeft heft;
  SolveLimits limits;
  limits.time_limit_s = options.stage_time_limit_s;
  limits.node_limit = options.stage_node_limit;
  for (const std::vector<OpId>& stage : stages) {
    absl::StatusOr<StageInstance> instance = StageInstance::Build(
        problem, stage, committed, BuildOpSpaces(problem, stage, options.space));
    if (!instance.ok()) return instance.status();
    // The best warm start of the stage.
    heft.Prepare(problem, stage, committed);
    StageSolution best;
    std::string best_name;
    for (const Candidate& c : *warm) {
      const double makespan = heft.Run(c.plans);
      if (makespan < best.makespan_us) {
        best = FromStageHeft(heft, problem, stage, c.plans, makespan);
        best_name = c.name;
      }
      if (!c.whole) continue;
      StageSolution kept = Retimed(*instance, *c.whole);
      if (kept.makespan_us < best.makespan_us) {
        best = std::move(kept);
        best_name = c.name + " (its own order)";
      }
    }
    absl::StatusOr<StageResult> result;
    if (options.formulation == ExactFormulation::kMip) {
      std::lock_guard<std::mutex> lock(CbcMutex());
      result = SolveMip(*instance, limits, &best);
    } else {
      // Joint space: first subspaces the search finishes quickly - every op unpartitioned,
      // every op on its min-local-latency plan, then the candidate plans - each seeding
      // the next, then the whole space with what is left of the budget.
      SolveLimits rest = limits;
      if (options.space == ExactSpace::kJoint) {
        const std::pair<const char*, double> phases[] = {
            {"schedule-only", 0.1}, {"expanded-local", 0.1}, {"candidates", 0.2}};
        double spent = 0;
        for (const auto& [phase, share] : phases) {
          const std::string name(phase);
          std::vector<OpSpace> spaces =
              name == "schedule-only"    ? BuildOpSpaces(problem, stage, ExactSpace::kScheduleOnly)
              : name == "expanded-local" ? BuildOpSpaces(problem, stage, ExactSpace::kExpandedLocal)
                                         : CandidateSpaces(problem, stage, *warm);
          absl::StatusOr<StageInstance> sub =
              StageInstance::Build(problem, stage, committed, std::move(spaces));
          if (!sub.ok()) return sub.status();
          SolveLimits part = limits;
          part.time_limit_s = limits.time_limit_s * share;
          const StageResult seeded = SolveBranchAndBound(*sub, part, &best);
          spent += seeded.seconds;
          if (seeded.best.makespan_us < best.makespan_us) {
            best = seeded.best;
            best_name = name;
          }
        }
        // Then neighbourhoods of the incumbent (half the budget), then the whole space.
        const auto lns_begin = std::chrono::steady_clock::now();
        if (absl::Status st =
                ImproveByNeighbourhoods(*instance, committed, limits.time_limit_s * 0.5,
                                        limits.node_limit, best, best_name);
            !st.ok()) {
          return st;
        }
        spent +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - lns_begin).count();
        rest.time_limit_s = std::max(1e-3, limits.time_limit_s - spent);
      }
      result = SolveBranchAndBound(*instance, rest, &best);
    }
    if (!result.ok()) return result.status();
    ExactStageReport sr;
    sr.ops = static_cast<int>(stage.size());
    sr.makespan_us = result->best.makespan_us;
    sr.lower_bound_us = std::min(result->lower_bound_us, result->best.makespan_us);
    sr.stop = result->stop;
    sr.nodes = result->nodes;
    sr.seconds = result->seconds;
    sr.incumbent = result->best.makespan_us < best.makespan_us ? "search" : best_name;
    r.stages_proven += result->proven() ? 1 : 0;
    r.stage_gap_us += sr.makespan_us - sr.lower_bound_us;
    r.stages.push_back(sr);
    for (size_t l = 0; l < stage.size(); ++l) committed.SetPlan(stage[l], result->best.plans[l]);
    for (const ScheduledSubtask& s : result->best.subtasks) committed.Add(s);
  }
  r.staged_makespan_us = committed.makespan_us();
  r.source = "staged";
  // Stages are optimised one after the other: the list schedulers on the staged plans,
  // across stage boundaries, can interleave what staging kept apart (as the iterative
  // search's last step does).
  for (const char* list : {"heft", "psls"}) {
    absl::StatusOr<std::unique_ptr<ListScheduler>> s = MakeListScheduler(list);
    if (!s.ok()) return s.status();
    absl::StatusOr<Schedule> across = (*s)->Schedule(problem, committed.plans());
    if (across.ok())
      warm->push_back(Candidate{absl::StrCat("staged plans, ", list), {}, *std::move(across)});
  }
  Schedule out = std::move(committed);
  for (Candidate& c : *warm) {
    if (c.whole && c.whole->makespan_us() < out.makespan_us() * (1 - 1e-12)) {
      out = *std::move(c.whole);
      r.source = c.name;
    }
  }
  r.makespan_us = out.makespan_us();
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
  return out;
}

std::string ExactScheduler::name() const {
  switch (space_) {
    case ExactSpace::kJoint:
      return "exact";
    case ExactSpace::kScheduleOnly:
      return "exact-schedule-only";
    case ExactSpace::kExpandedLocal:
      return "exact-expanded-local";
    case ExactSpace::kExpandedEqual:
      return "exact-expanded-equal";
  }
  return "exact";
}

absl::StatusOr<Schedule> ExactScheduler::Plan(const Problem& problem,
                                              const SchedulerOptions& options) const {
  return PlanWithReport(problem, options, nullptr);
}

absl::StatusOr<Schedule> ExactScheduler::PlanWithReport(const Problem& problem,
                                                        const SchedulerOptions& options,
                                                        ExactReport* report) const {
  ExactOptions base;
  base.space = space_;
  absl::StatusOr<ExactOptions> resolved = ApplyExactParams(base, options);
  if (!resolved.ok()) return resolved.status();
  return SolveExact(problem, *resolved, report);
}

}  // namespace psched::scheduler::exact
