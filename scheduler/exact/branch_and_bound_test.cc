// The proofs of exactness that `make test` runs: on seeded random DAGs the branch and
// bound, the CBC program and brute-force enumeration (which share nothing but the
// instance) must find the same optimal makespan - schedule-only and partitionable tasks,
// clipped alignment grids, memory domains with transfer costs, a split limit of 2, fixed
// expanded plans, and a second stage packed around the first one's busy intervals. Every
// schedule returned must pass ValidateSchedule. Then the limits: node and time limits
// return a valid schedule with a bound below it, warm starts are kept when nothing beats
// them, an empty instance is solved.
#include "scheduler/exact/branch_and_bound.h"

#include <cmath>
#include <vector>

#include "gtest/gtest.h"
#include "scheduler/exact/brute_force.h"
#include "scheduler/exact/mip_formulation.h"
#include "scheduler/exact/random_task_graphs.h"
#include "scheduler/exact/stage_instance.h"
#include "scheduler/heft.h"

namespace psched::scheduler::exact {
namespace {

// The problem with `stage` solved and the earlier ops' schedule it starts from.
struct Staged {
  Problem problem;
  Schedule fixed;
  std::vector<OpId> stage;
};

// A random problem; ops below `split_at` form a first stage, solved by branch and bound
// and kept fixed, the rest form the stage under test.
Staged MakeStaged(const testing::RandomTaskGraphOptions& o, ProblemOptions po, ExactSpace space,
                  uint64_t seed, int split_at) {
  absl::StatusOr<Problem> p =
      Problem::FromTaskGraph(testing::RandomTaskGraph(o, seed), testing::RandomPlatform(o), po);
  EXPECT_TRUE(p.ok()) << p.status();
  Staged s{*std::move(p), Schedule(), {}};
  s.fixed.Reset(s.problem.num_ops(), s.problem.num_devices());
  std::vector<OpId> first;
  for (OpId op = 0; op < s.problem.num_ops(); ++op) (op < split_at ? first : s.stage).push_back(op);
  if (!first.empty()) {
    absl::StatusOr<StageInstance> in =
        StageInstance::Build(s.problem, first, s.fixed, BuildOpSpaces(s.problem, first, space));
    EXPECT_TRUE(in.ok()) << in.status();
    const StageResult r = SolveBranchAndBound(*in, SolveLimits{});
    for (size_t l = 0; l < first.size(); ++l) s.fixed.SetPlan(first[l], r.best.plans[l]);
    for (const ScheduledSubtask& t : r.best.subtasks) s.fixed.Add(t);
  }
  return s;
}

// The fixed part plus `sol`, checked against the formulation.
absl::Status Validate(const Staged& s, const StageSolution& sol) {
  Schedule all = s.fixed;
  for (size_t l = 0; l < s.stage.size(); ++l) all.SetPlan(s.stage[l], sol.plans[l]);
  for (const ScheduledSubtask& t : sol.subtasks) all.Add(t);
  return ValidateSchedule(s.problem, all);
}

// Branch and bound, the MIP and brute force agree on every seed.
void ExpectThreeWayAgreement(const testing::RandomTaskGraphOptions& o, ProblemOptions po,
                             ExactSpace space, int seeds, int split_at) {
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(seeds); ++seed) {
    SCOPED_TRACE(testing::RandomPlatform(o).name + " seed " + std::to_string(seed));
    const Staged s = MakeStaged(o, po, space, seed, split_at);
    absl::StatusOr<StageInstance> in =
        StageInstance::Build(s.problem, s.stage, s.fixed, BuildOpSpaces(s.problem, s.stage, space));
    ASSERT_TRUE(in.ok()) << in.status();
    absl::StatusOr<StageSolution> brute = SolveBruteForce(*in, 50'000'000);
    ASSERT_TRUE(brute.ok()) << brute.status();
    const StageResult bb = SolveBranchAndBound(*in, SolveLimits{});
    absl::StatusOr<StageResult> mip = SolveMip(*in, SolveLimits{});
    ASSERT_TRUE(mip.ok()) << mip.status();
    EXPECT_TRUE(bb.proven());
    EXPECT_TRUE(mip->proven());
    EXPECT_NEAR(bb.best.makespan_us, brute->makespan_us, 1e-9);
    EXPECT_NEAR(mip->best.makespan_us, brute->makespan_us, 1e-6);
    EXPECT_NEAR(bb.lower_bound_us, bb.best.makespan_us, 1e-9);
    EXPECT_LE(RootLowerBound(*in), brute->makespan_us + 1e-9);
    for (const StageSolution* sol :
         std::vector<const StageSolution*>{&bb.best, &mip->best, &*brute}) {
      const absl::Status valid = Validate(s, *sol);
      EXPECT_TRUE(valid.ok()) << valid;
    }
  }
}

TEST(ExactProofTest, ScheduleOnlySevenTasks) {
  ExpectThreeWayAgreement({.tasks = 7}, {}, ExactSpace::kScheduleOnly, 8, 0);
}

TEST(ExactProofTest, PartitionableTasksOnAClippedGrid) {
  // Units of two work items: a part holding the last unit of an odd U is one item short.
  ExpectThreeWayAgreement({.tasks = 4, .partitionable = 2, .axes = 2, .max_units = 5},
                          ProblemOptions{0, 2}, ExactSpace::kJoint, 5, 0);
}

TEST(ExactProofTest, TransferCostsAcrossMemoryDomains) {
  ExpectThreeWayAgreement({.tasks = 6, .partitionable = 1, .domains = 2, .max_transfer_us = 30}, {},
                          ExactSpace::kJoint, 5, 0);
}

TEST(ExactProofTest, AtMostTwoSubtasksPerOp) {
  ExpectThreeWayAgreement({.tasks = 5, .partitionable = 3, .max_units = 4}, ProblemOptions{2, 1},
                          ExactSpace::kJoint, 5, 0);
}

TEST(ExactProofTest, SecondStageUsesIdleTimeBetweenTheFirstStagesSubtasks) {
  ExpectThreeWayAgreement({.tasks = 9, .partitionable = 3}, {}, ExactSpace::kJoint, 5, 5);
}

TEST(ExactProofTest, FixedExpandedPlansOnFreeDevices) {
  const testing::RandomTaskGraphOptions o{.tasks = 5, .partitionable = 3, .max_units = 6};
  ExpectThreeWayAgreement(o, {}, ExactSpace::kExpandedLocal, 4, 0);
  ExpectThreeWayAgreement(o, {}, ExactSpace::kExpandedEqual, 4, 0);
}

// Two independent formulations agree beyond brute force's reach.
TEST(ExactProofTest, BranchAndBoundAndMipAgreeOnTwelveTasks) {
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const Staged s = MakeStaged({.tasks = 12}, {}, ExactSpace::kScheduleOnly, seed, 0);
    absl::StatusOr<StageInstance> in = StageInstance::Build(
        s.problem, s.stage, s.fixed, BuildOpSpaces(s.problem, s.stage, ExactSpace::kScheduleOnly));
    ASSERT_TRUE(in.ok()) << in.status();
    const StageResult bb = SolveBranchAndBound(*in, SolveLimits{});
    SolveLimits limits;
    limits.time_limit_s = 120;
    absl::StatusOr<StageResult> mip = SolveMip(*in, limits, &bb.best);
    ASSERT_TRUE(mip.ok()) << mip.status();
    ASSERT_TRUE(bb.proven() && mip->proven()) << "seed " << seed;
    // The MIP starts from the branch and bound's optimum as cutoff: proving it optimal
    // means finding nothing better.
    EXPECT_NEAR(mip->best.makespan_us, bb.best.makespan_us, 1e-9) << "seed " << seed;
  }
}

StageInstance WideInstance(Problem& problem, Schedule& none) {
  std::vector<OpId> ops;
  for (OpId op = 0; op < problem.num_ops(); ++op) ops.push_back(op);
  none.Reset(problem.num_ops(), problem.num_devices());
  absl::StatusOr<StageInstance> in =
      StageInstance::Build(problem, ops, none, BuildOpSpaces(problem, ops, ExactSpace::kJoint));
  EXPECT_TRUE(in.ok()) << in.status();
  return *std::move(in);
}

Problem WideProblem() {
  const testing::RandomTaskGraphOptions o{
      .tasks = 30, .edge_probability = 0.1, .partitionable = 10, .max_units = 12};
  absl::StatusOr<Problem> p =
      Problem::FromTaskGraph(testing::RandomTaskGraph(o, 7), testing::RandomPlatform(o));
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

TEST(BranchAndBoundTest, NodeLimitReturnsAValidScheduleAndABoundBelowIt) {
  Problem problem = WideProblem();
  Schedule none;
  const StageInstance in = WideInstance(problem, none);
  SolveLimits limits;
  limits.node_limit = 2000;
  const StageResult r = SolveBranchAndBound(in, limits);
  EXPECT_EQ(r.stop, StopReason::kNodeLimit);
  ASSERT_TRUE(r.best.found());
  EXPECT_LE(r.lower_bound_us, r.best.makespan_us);
  EXPECT_GE(r.lower_bound_us, RootLowerBound(in) - 1e-9);
  Schedule s(problem.num_ops(), problem.num_devices());
  for (int l = 0; l < in.num_ops(); ++l) s.SetPlan(in.op(l), r.best.plans[static_cast<size_t>(l)]);
  for (const ScheduledSubtask& t : r.best.subtasks) s.Add(t);
  EXPECT_TRUE(ValidateSchedule(problem, s).ok()) << ValidateSchedule(problem, s);
}

TEST(BranchAndBoundTest, TimeLimitStopsTheSearchWithTheWarmStartOrBetter) {
  Problem problem = WideProblem();
  Schedule none;
  const StageInstance in = WideInstance(problem, none);
  absl::StatusOr<Schedule> heft = HeftScheduler().Schedule(problem);
  ASSERT_TRUE(heft.ok());
  StageSolution warm;
  warm.subtasks.assign(heft->subtasks().begin(), heft->subtasks().end());
  warm.plans.assign(heft->plans().begin(), heft->plans().end());
  warm.makespan_us = heft->makespan_us();
  SolveLimits limits;
  limits.time_limit_s = 0.05;
  const StageResult r = SolveBranchAndBound(in, limits, &warm);
  EXPECT_EQ(r.stop, StopReason::kTimeLimit);
  EXPECT_LE(r.best.makespan_us, heft->makespan_us());
  EXPECT_LE(r.lower_bound_us, r.best.makespan_us);
}

TEST(BranchAndBoundTest, KeepsAnOptimalWarmStartAndProvesIt) {
  // Two independent tasks, one per device: the optimum is 5, which HEFT finds.
  absl::StatusOr<Problem> p =
      Problem::FromTaskGraph(TaskGraph{{}, {{5, 9}, {9, 5}}, {}, {}},
                             testing::RandomPlatform(testing::RandomTaskGraphOptions{2, 2}));
  ASSERT_TRUE(p.ok()) << p.status();
  Schedule none;
  const StageInstance in = WideInstance(*p, none);
  absl::StatusOr<Schedule> heft = HeftScheduler().Schedule(*p);
  ASSERT_TRUE(heft.ok());
  StageSolution warm;
  warm.subtasks.assign(heft->subtasks().begin(), heft->subtasks().end());
  warm.plans.assign(heft->plans().begin(), heft->plans().end());
  warm.makespan_us = heft->makespan_us();
  const StageResult r = SolveBranchAndBound(in, SolveLimits{}, &warm);
  EXPECT_TRUE(r.proven());
  EXPECT_DOUBLE_EQ(r.best.makespan_us, 5);
  EXPECT_EQ(r.best.subtasks.size(), warm.subtasks.size());
  EXPECT_DOUBLE_EQ(r.lower_bound_us, 5);
}

TEST(BranchAndBoundTest, AnEmptyInstanceIsSolvedAtZero) {
  absl::StatusOr<Problem> p = Problem::FromTaskGraph(TaskGraph{}, testing::RandomPlatform({}));
  ASSERT_TRUE(p.ok()) << p.status();
  Schedule none;
  const StageInstance in = WideInstance(*p, none);
  const StageResult r = SolveBranchAndBound(in, SolveLimits{});
  EXPECT_TRUE(r.proven());
  EXPECT_EQ(r.best.makespan_us, 0);
  absl::StatusOr<StageResult> mip = SolveMip(in, SolveLimits{});
  ASSERT_TRUE(mip.ok());
  EXPECT_EQ(mip->best.makespan_us, 0);
}

TEST(MipTest, RefusesAnInstanceWithTooManyPlans) {
  Problem problem = WideProblem();
  Schedule none;
  const StageInstance in = WideInstance(problem, none);
  const absl::StatusOr<StageResult> r = SolveMip(in, SolveLimits{}, nullptr, /*max_plans=*/20);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(r.status().message().find("more than 20 placed plans"), std::string::npos)
      << r.status();
}

TEST(BruteForceTest, RefusesAnInstanceBeyondItsLimit) {
  Problem problem = WideProblem();
  Schedule none;
  const StageInstance in = WideInstance(problem, none);
  const absl::StatusOr<StageSolution> r = SolveBruteForce(in, 1000);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace psched::scheduler::exact
