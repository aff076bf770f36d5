#include "scheduler/partition_aware/iterative_search.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "scheduler/expanded_graph.h"
#include "scheduler/partition_aware/candidate_plans.h"
#include "scheduler/partition_aware/slack.h"
#include "scheduler/partition_aware/stage_heft.h"
#include "scheduler/partition_aware/staging.h"
#include "scheduler/ranks.h"

namespace psched::scheduler::partition_aware {
namespace {

// An improvement must beat float noise from different summation orders.
bool Improves(double candidate, double current) {
  return candidate < current - 1e-9 * std::max(1.0, current);
}

// A neighbour of `plan` on its own axis: log-uniformly between one alignment unit and
// all of a random donor part moves to another part, or to a new part while the plan has
// fewer than `slots`. False (and `out` untouched) for an unpartitioned plan.
bool LocalMove(const PartitionPlan& plan, int slots, int64_t alignment, std::mt19937_64& rng,
               PartitionPlan& out) {
  const int parts = static_cast<int>(plan.work.size());
  if (plan.axis == model::SplitAxis::kNone || parts < 2) return false;
  const int targets = std::max(parts, slots);
  const int donor = std::uniform_int_distribution<int>(0, parts - 1)(rng);
  int receiver = std::uniform_int_distribution<int>(0, targets - 2)(rng);
  if (receiver >= donor) ++receiver;
  const int64_t available = plan.work[static_cast<size_t>(donor)];
  const double max_units = static_cast<double>((available + alignment - 1) / alignment);
  const double log_units =
      std::uniform_real_distribution<double>(0.0, std::log(max_units + 1))(rng);
  const int64_t units = std::max<int64_t>(1, static_cast<int64_t>(std::floor(std::exp(log_units))));
  const int64_t amount = std::min(available, units * alignment);
  out = plan;
  if (receiver >= parts) out.work.push_back(0);
  out.work[static_cast<size_t>(donor)] -= amount;
  out.work[static_cast<size_t>(receiver)] += amount;
  Canonicalize(out);
  return true;
}

// The search state of one call; buffers are reused across stages and evaluations.
class Search {
 public:
  Search(const Problem& problem, const ListScheduler& list, const IterativeOptions& options,
         IterativeStats& stats)
      : problem_(problem),
        list_(list),
        options_(options),
        stats_(stats),
        fast_heft_(list.name() == "heft"),
        sampler_(options.splits, options.alignment),
        move_slots_(options.splits > 0 ? std::min(options.splits, PlanSlots(problem))
                                       : PlanSlots(problem)),
        move_alignment_(options.alignment),
        rng_(options.seed),
        plans_(static_cast<size_t>(problem.num_ops())),
        completion_(static_cast<size_t>(problem.num_ops()), 0.0),
        in_stage_(static_cast<size_t>(problem.num_ops()), false) {}

  absl::StatusOr<Schedule> Run() {
    const int n = problem_.num_ops();
    if (options_.initial == InitialPlans::kMinLocalLatency) {
      for (OpId op = 0; op < n; ++op)
        plans_[static_cast<size_t>(op)] = MinLocalLatencyPlan(problem_, op).plan;
    }
    Schedule start;
    if (absl::Status s = list_.ScheduleInto(problem_, plans_, workspace_, start); !s.ok()) return s;
    stats_.initial_makespan_us = start.makespan_us();

    std::vector<std::vector<OpId>> stages;
    if (options_.staging) {
      ExpandedGraph unpartitioned;
      if (absl::Status s = unpartitioned.Build(problem_, {}); !s.ok()) return s;
      std::vector<double> task_rank, op_rank;
      UpwardRanks(problem_, unpartitioned, task_rank, op_rank);
      stages = BuildStages(problem_, op_rank, std::max(1, options_.max_stage_size));
    } else {
      stages.emplace_back();
      for (OpId op = 0; op < n; ++op) stages.back().push_back(op);
    }
    stats_.stages = static_cast<int>(stages.size());

    committed_.Reset(n, problem_.num_devices());
    for (const std::vector<OpId>& stage : stages) {
      if (absl::Status s = SearchStage(stage); !s.ok()) return s;
    }
    for (OpId op = 0; op < n; ++op) committed_.SetPlan(op, plans_[static_cast<size_t>(op)]);
    stats_.staged_makespan_us = committed_.makespan_us();

    Schedule unstaged;
    Schedule* best = &committed_;
    if (list_.ScheduleInto(problem_, plans_, workspace_, unstaged).ok() &&
        Improves(unstaged.makespan_us(), best->makespan_us())) {
      best = &unstaged;
    }
    if (Improves(start.makespan_us(), best->makespan_us())) best = &start;
    stats_.makespan_us = best->makespan_us();
    return std::move(*best);
  }

 private:
  // The earlier subtasks a stage's evaluations must see: those of the stage's external
  // predecessors (completion times) and those still running when the stage can start.
  void BuildBoundary(const std::vector<OpId>& stage) {
    for (OpId op : stage) in_stage_[static_cast<size_t>(op)] = true;
    double earliest = std::numeric_limits<double>::infinity();
    for (OpId op : stage) {
      double ready = 0;
      bool entry = true;
      for (OpId p : problem_.preds(op)) {
        if (in_stage_[static_cast<size_t>(p)]) {
          entry = false;
          break;
        }
        ready = std::max(ready, completion_[static_cast<size_t>(p)]);
      }
      if (entry) earliest = std::min(earliest, ready);
    }
    boundary_.Reset(problem_.num_ops(), problem_.num_devices());
    for (const ScheduledSubtask& s : committed_.subtasks()) {
      bool feeds_stage = false;
      for (OpId succ : problem_.succs(s.op)) feeds_stage |= in_stage_[static_cast<size_t>(succ)];
      if (feeds_stage || s.end_us > earliest) boundary_.Add(s);
    }
    for (OpId op : stage) in_stage_[static_cast<size_t>(op)] = false;
  }

  absl::Status Evaluate(const ScheduleScope& scope, Schedule& out) {
    return list_.ScheduleInto(problem_, plans_, workspace_, out, scope);
  }

  // Draws options_.ops_per_iteration ops of the stage from the slack mixture into
  // sampled_, with replacement: an op drawn twice gets twice the candidate plans, so a stage
  // with fewer partitionable ops than draws still spends the full per-iteration budget on
  // its most critical ones.
  void SampleOps() {
    const size_t m = partitionable_.size();
    weight_.resize(m);
    double total = 0;
    for (size_t k = 0; k < m; ++k) {
      const OpId op = partitionable_[k];
      weight_[k] = slack_.op_duration(op) / (std::max(0.0, slack_.op_slack(op)) + options_.epsilon);
      total += weight_[k];
    }
    double mass = 0;
    for (size_t k = 0; k < m; ++k) {
      const double biased = total > 0 ? weight_[k] / total : 1.0 / static_cast<double>(m);
      weight_[k] = options_.rho * biased + (1.0 - options_.rho) / static_cast<double>(m);
      mass += weight_[k];
    }
    sampled_.clear();
    std::uniform_real_distribution<double> uniform(0.0, mass);
    for (int draw = 0; draw < options_.ops_per_iteration; ++draw) {
      double u = uniform(rng_);
      size_t pick = m - 1;
      for (size_t k = 0; k < m; ++k) {
        if (u < weight_[k]) {
          pick = k;
          break;
        }
        u -= weight_[k];
      }
      sampled_.push_back(partitionable_[pick]);
    }
  }

  // Schedules the stage under plans_ into current_ and makes it the reference schedule.
  absl::Status EvaluateCurrent(const ScheduleScope& scope) {
    if (!fast_heft_) return Evaluate(scope, current_);
    stage_heft_.Run(plans_);
    stage_heft_.MarkReference();
    current_.Reset(problem_.num_ops(), problem_.num_devices());
    stage_heft_.Emit(current_);
    return absl::OkStatus();
  }

  // The stage makespan under plans_, which differ from the reference only in `changed`;
  // +infinity when the inner scheduler cannot place them.
  double EvaluateCandidate(const ScheduleScope& scope, OpId changed) {
    if (fast_heft_) return stage_heft_.Run(plans_, changed);
    // A candidate the inner scheduler cannot place (e.g. single:<device> with a split) is
    // simply not an improvement.
    if (!Evaluate(scope, trial_).ok()) return std::numeric_limits<double>::infinity();
    return trial_.makespan_us();
  }

  absl::Status SearchStage(const std::vector<OpId>& stage) {
    if (fast_heft_) {
      stage_heft_.Prepare(problem_, stage, committed_);
    } else {
      BuildBoundary(stage);
    }
    const ScheduleScope scope{stage, committed_.subtasks().empty() ? nullptr : &boundary_};
    if (absl::Status s = EvaluateCurrent(scope); !s.ok()) return s;
    partitionable_.clear();
    std::array<model::SplitAxis, 3> axes;
    for (OpId op : stage) {
      if (PlanSlots(problem_) >= 2 && SplitAxes(problem_, op, axes) > 0)
        partitionable_.push_back(op);
    }
    const absl::Time deadline = options_.stage_timeout == absl::InfiniteDuration()
                                    ? absl::InfiniteFuture()
                                    : absl::Now() + options_.stage_timeout;
    for (int iteration = 0; iteration < options_.max_iterations && !partitionable_.empty();
         ++iteration) {
      ++stats_.iterations;
      slack_.Compute(problem_, current_);
      SampleOps();
      double best = current_.makespan_us();
      OpId best_op = -1;
      for (OpId op : sampled_) {
        PartitionPlan& plan = plans_[static_cast<size_t>(op)];
        for (int c = 0; c < options_.plans_per_op + options_.local_moves; ++c) {
          if (c < options_.plans_per_op) {
            sampler_.Sample(problem_, op, rng_, candidate_);
          } else if (!LocalMove(
                         plan, move_slots_,
                         move_alignment_ > 0 ? move_alignment_ : problem_.alignment(plan.axis),
                         rng_, candidate_)) {
            break;
          }
          if (candidate_ == plan) continue;
          std::swap(plan, candidate_);
          const double makespan = EvaluateCandidate(scope, op);
          std::swap(plan, candidate_);
          ++stats_.evaluations;
          if (!Improves(makespan, best)) continue;
          best = makespan;
          best_op = op;
          best_plan_ = candidate_;
        }
      }
      if (best_op < 0) break;
      plans_[static_cast<size_t>(best_op)] = best_plan_;
      ++stats_.accepted;
      if (absl::Status s = EvaluateCurrent(scope); !s.ok()) return s;
      if (absl::Now() >= deadline) break;
    }
    for (const ScheduledSubtask& s : current_.subtasks()) {
      committed_.Add(s);
      double& c = completion_[static_cast<size_t>(s.op)];
      c = std::max(c, s.end_us);
    }
    return absl::OkStatus();
  }

  const Problem& problem_;
  const ListScheduler& list_;
  const IterativeOptions& options_;
  IterativeStats& stats_;
  // The inner scheduler is heft: evaluate with StageHeft (same decisions, stage-local cost).
  bool fast_heft_;
  StageHeft stage_heft_;
  PlanSampler sampler_;
  int move_slots_;
  int64_t move_alignment_;  // 0: the problem's for the plan's axis
  std::mt19937_64 rng_;
  ListScheduler::Workspace workspace_;
  SlackAnalysis slack_;
  std::vector<PartitionPlan> plans_;
  std::vector<double> completion_;
  std::vector<bool> in_stage_;
  Schedule committed_, boundary_, current_, trial_;
  PartitionPlan candidate_, best_plan_;
  std::vector<OpId> partitionable_, sampled_;
  std::vector<double> weight_;
};

absl::Status BadParam(const std::string& key, const std::string& value, const char* want) {
  return absl::InvalidArgumentError(
      absl::StrCat("iterative: option '", key, "' = '", value, "' is not ", want));
}

}  // namespace

absl::StatusOr<Schedule> IterativeSearch(const Problem& problem, const ListScheduler& list,
                                         const IterativeOptions& options, IterativeStats* stats) {
  if (options.rho < 0 || options.rho > 1 || !(options.epsilon > 0) || options.plans_per_op < 0 ||
      options.local_moves < 0 || options.ops_per_iteration < 0 || options.max_stage_size < 1 ||
      options.splits < 0 || options.alignment < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "iterative: need 0 <= rho <= 1 (got ", options.rho, "), epsilon > 0 (got ", options.epsilon,
        "), max_stage_size >= 1 (got ", options.max_stage_size,
        ") and non-negative plans_per_op, local_moves, ops_per_iteration, splits, alignment"));
  }
  IterativeStats local;
  IterativeStats& s = stats != nullptr ? *stats : local;
  s = IterativeStats{};
  const absl::Time begin = absl::Now();
  Search search(problem, list, options, s);
  absl::StatusOr<Schedule> result = search.Run();
  s.search_ms = absl::ToDoubleMilliseconds(absl::Now() - begin);
  return result;
}

absl::StatusOr<IterativeOptions> ApplySchedulerOptions(IterativeOptions base,
                                                       const SchedulerOptions& options) {
  base.seed = options.seed;
  base.stage_timeout = options.timeout;
  for (const auto& [key, value] : options.params) {
    int i = 0;
    double d = 0;
    if (key == "max_stage_size" || key == "ops_per_iteration" || key == "plans_per_op" ||
        key == "max_iterations" || key == "splits" || key == "alignment" || key == "local_moves") {
      if (!absl::SimpleAtoi(value, &i) || i < 0)
        return BadParam(key, value, "a non-negative integer");
      if (key == "max_stage_size") base.max_stage_size = i;
      if (key == "ops_per_iteration") base.ops_per_iteration = i;
      if (key == "plans_per_op") base.plans_per_op = i;
      if (key == "max_iterations") base.max_iterations = i;
      if (key == "splits") base.splits = i;
      if (key == "alignment") base.alignment = i;
      if (key == "local_moves") base.local_moves = i;
    } else if (key == "rho" || key == "epsilon") {
      if (!absl::SimpleAtod(value, &d)) return BadParam(key, value, "a number");
      (key == "rho" ? base.rho : base.epsilon) = d;
    } else if (key == "staging") {
      if (value != "true" && value != "false") return BadParam(key, value, "true or false");
      base.staging = value == "true";
    } else if (key == "initial") {
      if (value == "none") {
        base.initial = InitialPlans::kNone;
      } else if (value == "min-local-latency") {
        base.initial = InitialPlans::kMinLocalLatency;
      } else {
        return BadParam(key, value, "none or min-local-latency");
      }
    } else {
      return absl::InvalidArgumentError(absl::StrCat(
          "iterative: unknown option '", key,
          "'; known: max_stage_size, staging, ops_per_iteration, plans_per_op, rho, epsilon, "
          "max_iterations, initial, splits, alignment, local_moves"));
    }
  }
  return base;
}

absl::StatusOr<Schedule> IterativeScheduler::Plan(const Problem& problem,
                                                  const SchedulerOptions& options) const {
  absl::StatusOr<IterativeOptions> resolved = ApplySchedulerOptions(options_, options);
  if (!resolved.ok()) return resolved.status();
  return IterativeSearch(problem, *list_, *resolved);
}

}  // namespace psched::scheduler::partition_aware
