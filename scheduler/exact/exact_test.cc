#include <random>

#include "gtest/gtest.h"
#include "scheduler/exact/branch_and_bound.h"
#include "scheduler/exact/brute_force.h"
#include "scheduler/exact/mip_formulation.h"
#include "scheduler/exact/random_task_graphs.h"
#include "scheduler/exact/stage_instance.h"

namespace psched::scheduler::exact {
namespace {

Schedule ToSchedule(const Problem& problem, const StageInstance& in, const StageSolution& sol, const Schedule* fixed) {
  Schedule s(problem.num_ops(), problem.num_devices());
  if (fixed) { for (const auto& t : fixed->subtasks()) s.Add(t); for (OpId op = 0; op < problem.num_ops(); ++op) s.SetPlan(op, fixed->plan(op)); }
  for (int l = 0; l < in.num_ops(); ++l) s.SetPlan(in.op(l), sol.plans[l]);
  for (const auto& t : sol.subtasks) s.Add(t);
  return s;
}

void Compare(const testing::RandomTaskGraphOptions& o, ProblemOptions po, ExactSpace space, int seeds, int split_at) {
  for (uint64_t seed = 1; seed <= static_cast<uint64_t>(seeds); ++seed) {
    absl::StatusOr<Problem> p = Problem::FromTaskGraph(testing::RandomTaskGraph(o, seed), testing::RandomPlatform(o), po);
    ASSERT_TRUE(p.ok()) << p.status();
    Schedule fixed(p->num_ops(), p->num_devices());
    std::vector<OpId> first, rest;
    for (OpId op = 0; op < p->num_ops(); ++op) (op < split_at ? first : rest).push_back(op);
    if (!first.empty()) {
      auto in1 = StageInstance::Build(*p, first, fixed, BuildOpSpaces(*p, first, space));
      ASSERT_TRUE(in1.ok()) << in1.status();
      const StageResult r1 = SolveBranchAndBound(*in1, SolveLimits{});
      fixed = ToSchedule(*p, *in1, r1.best, nullptr);
      // Only the first stage's ops: the rest stay None with no subtasks.
    }
    auto in = StageInstance::Build(*p, rest, fixed, BuildOpSpaces(*p, rest, space));
    ASSERT_TRUE(in.ok()) << in.status();
    const StageResult bb = SolveBranchAndBound(*in, SolveLimits{});
    auto brute = SolveBruteForce(*in, 200'000'000);
    ASSERT_TRUE(brute.ok()) << brute.status();
    EXPECT_TRUE(bb.proven());
    EXPECT_NEAR(bb.best.makespan_us, brute->makespan_us, 1e-9) << "seed " << seed;
    auto mip = SolveMip(*in, SolveLimits{});
    ASSERT_TRUE(mip.ok()) << mip.status();
    EXPECT_TRUE(mip->proven());
    EXPECT_NEAR(mip->best.makespan_us, brute->makespan_us, 1e-6) << "mip seed " << seed;
    for (const StageSolution* sol : std::vector<const StageSolution*>{&bb.best, &*brute}) {
      Schedule s = ToSchedule(*p, *in, *sol, split_at > 0 ? &fixed : nullptr);
      // Ops outside both stages have no subtasks: validate only when all are covered.
      if (split_at == 0 || true) {
        absl::Status v = ValidateSchedule(*p, s);
        EXPECT_TRUE(v.ok()) << v;
      }
    }
  }
}

TEST(BranchAndBoundTest, ScheduleOnly7) {
  testing::RandomTaskGraphOptions o; o.tasks = 7;
  Compare(o, {}, ExactSpace::kScheduleOnly, 30, 0);
}
TEST(BranchAndBoundTest, JointAligned) {
  testing::RandomTaskGraphOptions o; o.tasks = 5; o.partitionable = 3; o.max_units = 5; o.axes = 2;
  Compare(o, ProblemOptions{0, 2}, ExactSpace::kJoint, 20, 0);
}
TEST(BranchAndBoundTest, Domains) {
  testing::RandomTaskGraphOptions o; o.tasks = 6; o.partitionable = 1; o.domains = 2; o.max_transfer_us = 30;
  Compare(o, {}, ExactSpace::kJoint, 20, 0);
}
TEST(BranchAndBoundTest, Staged) {
  testing::RandomTaskGraphOptions o; o.tasks = 10; o.partitionable = 3; o.max_units = 3;
  Compare(o, {}, ExactSpace::kJoint, 20, 5);
}
TEST(BranchAndBoundTest, TwoSplits) {
  testing::RandomTaskGraphOptions o; o.tasks = 5; o.partitionable = 3; o.max_units = 4;
  Compare(o, ProblemOptions{2, 1}, ExactSpace::kJoint, 20, 0);
}
TEST(BranchAndBoundTest, Expanded) {
  testing::RandomTaskGraphOptions o; o.tasks = 6; o.partitionable = 4; o.max_units = 6;
  Compare(o, {}, ExactSpace::kExpandedLocal, 20, 0);
  Compare(o, {}, ExactSpace::kExpandedEqual, 20, 0);
}

}  // namespace
}  // namespace psched::scheduler::exact
