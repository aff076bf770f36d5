// ExactScheduler: whole-graph mode is exact (brute force agrees), staged mode returns
// valid schedules never worse than its warm starts with consistent reports, both
// formulations agree, bad parameters and bad task graphs are refused clearly, and an
// instance too large for the time limit comes back with a gap instead of hanging.
#include "scheduler/exact/exact_scheduler.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "predictor/profiles.h"
#include "scheduler/exact/brute_force.h"
#include "scheduler/exact/random_task_graphs.h"
#include "scheduler/partition_aware/test_graphs.h"
#include "scheduler/registry/registry.h"

namespace psched::scheduler::exact {
namespace {

using ::testing::HasSubstr;

Problem RandomProblem(const testing::RandomTaskGraphOptions& o, uint64_t seed) {
  absl::StatusOr<Problem> p =
      Problem::FromTaskGraph(testing::RandomTaskGraph(o, seed), testing::RandomPlatform(o));
  EXPECT_TRUE(p.ok()) << p.status();
  return *std::move(p);
}

SchedulerOptions Params(std::map<std::string, std::string> params) {
  SchedulerOptions o;
  o.params = std::move(params);
  return o;
}

TEST(ExactSchedulerTest, WholeGraphModeEqualsBruteForce) {
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    const Problem problem = RandomProblem({.tasks = 5, .partitionable = 2}, seed);
    ExactReport report;
    absl::StatusOr<Schedule> s =
        ExactScheduler(ExactSpace::kJoint)
            .PlanWithReport(problem, Params({{"staging", "false"}}), &report);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(ValidateSchedule(problem, *s).ok()) << ValidateSchedule(problem, *s);
    ASSERT_EQ(report.stages.size(), 1u);
    EXPECT_EQ(report.stages_proven, 1);

    std::vector<OpId> all;
    for (OpId op = 0; op < problem.num_ops(); ++op) all.push_back(op);
    const Schedule none(problem.num_ops(), problem.num_devices());
    absl::StatusOr<StageInstance> in =
        StageInstance::Build(problem, all, none, BuildOpSpaces(problem, all, ExactSpace::kJoint));
    ASSERT_TRUE(in.ok());
    absl::StatusOr<StageSolution> brute = SolveBruteForce(*in, 50'000'000);
    ASSERT_TRUE(brute.ok()) << brute.status();
    EXPECT_NEAR(s->makespan_us(), brute->makespan_us, 1e-9) << "seed " << seed;
    EXPECT_LE(report.lower_bound_us, s->makespan_us() + 1e-9);
  }
}

TEST(ExactSchedulerTest, FormulationsAgreeStageByStage) {
  const Problem problem = RandomProblem({.tasks = 10, .edge_probability = 0.4}, 3);
  for (const char* space_name : {"exact-schedule-only", "exact"}) {
    SCOPED_TRACE(space_name);
    absl::StatusOr<std::unique_ptr<Scheduler>> s = MakeScheduler(space_name);
    ASSERT_TRUE(s.ok());
    const auto* exact = dynamic_cast<const ExactScheduler*>(s->get());
    ASSERT_NE(exact, nullptr);
    ExactReport bnb, mip;
    absl::StatusOr<Schedule> a =
        exact->PlanWithReport(problem, Params({{"max_stage_size", "5"}}), &bnb);
    absl::StatusOr<Schedule> b = exact->PlanWithReport(
        problem, Params({{"max_stage_size", "5"}, {"formulation", "mip"}}), &mip);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(bnb.stages.size(), mip.stages.size());
    ASSERT_EQ(bnb.stages_proven, static_cast<int>(bnb.stages.size()));
    ASSERT_EQ(mip.stages_proven, static_cast<int>(mip.stages.size()));
    // Both prove each stage optimal given the same earlier stages, so every stage agrees.
    for (size_t k = 0; k < bnb.stages.size(); ++k) {
      EXPECT_NEAR(bnb.stages[k].makespan_us, mip.stages[k].makespan_us, 1e-6) << "stage " << k;
    }
    EXPECT_NEAR(bnb.staged_makespan_us, mip.staged_makespan_us, 1e-6);
  }
}

class ExactOnModelsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<predictor::Profile> profile = predictor::LoadProfile("oneplus11");
    ASSERT_TRUE(profile.ok()) << profile.status();
    profile_ = *std::move(profile);
  }
  Problem Make(const model::Graph& graph) {
    absl::StatusOr<Problem> p = Problem::FromGraph(graph, profile_.platform, *profile_.model);
    EXPECT_TRUE(p.ok()) << p.status();
    return *std::move(p);
  }
  double Run(const Problem& problem, const std::string& method) {
    absl::StatusOr<std::unique_ptr<Scheduler>> s = MakeScheduler(method);
    EXPECT_TRUE(s.ok()) << s.status();
    const SchedulerOptions options =
        method.rfind("exact", 0) == 0
            ? Params({{"stage_time_limit_s", "60"}, {"stage_node_limit", "500"}})
            : SchedulerOptions{};
    absl::StatusOr<Schedule> schedule = (*s)->Plan(problem, options);
    EXPECT_TRUE(schedule.ok()) << method << ": " << schedule.status();
    if (!schedule.ok()) return std::numeric_limits<double>::quiet_NaN();
    EXPECT_TRUE(ValidateSchedule(problem, *schedule).ok())
        << method << ": " << ValidateSchedule(problem, *schedule);
    return schedule->makespan_us();
  }
  predictor::Profile profile_;
};

TEST_F(ExactOnModelsTest, EachSpaceIsNoWorseThanItsHeuristics) {
  const Problem problem = Make(partition_aware::testing::Diamonds(2));
  const double tolerance = 1 + 1e-9;
  EXPECT_LE(Run(problem, "exact-schedule-only"), Run(problem, "heft") * tolerance);
  EXPECT_LE(Run(problem, "exact-schedule-only"), Run(problem, "psls") * tolerance);
  EXPECT_LE(Run(problem, "exact-expanded-local"), Run(problem, "expanded-local:heft") * tolerance);
  EXPECT_LE(Run(problem, "exact-expanded-equal"), Run(problem, "expanded-equal:heft") * tolerance);
  const double joint = Run(problem, "exact");
  EXPECT_LE(joint, Run(problem, "pa-heft") * tolerance);
  EXPECT_LE(joint, Run(problem, "iterative") * tolerance);
  // The joint space holds every restricted one.
  EXPECT_LE(joint, Run(problem, "exact-schedule-only") * tolerance);
}

TEST_F(ExactOnModelsTest, ReportIsConsistent) {
  const Problem problem = Make(partition_aware::testing::ForkJoin(3, 2));
  ExactReport report;
  absl::StatusOr<Schedule> s =
      ExactScheduler(ExactSpace::kJoint)
          .PlanWithReport(problem,
                          Params({{"stage_time_limit_s", "60"}, {"stage_node_limit", "500"}}),
                          &report);
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_FALSE(report.stages.empty());
  int proven = 0, ops = 0;
  double gap = 0;
  for (const ExactStageReport& st : report.stages) {
    EXPECT_LE(st.lower_bound_us, st.makespan_us);
    proven += st.stop == StopReason::kOptimal ? 1 : 0;
    gap += st.makespan_us - st.lower_bound_us;
    ops += st.ops;
  }
  EXPECT_EQ(ops, problem.num_ops());
  EXPECT_EQ(proven, report.stages_proven);
  EXPECT_NEAR(gap, report.stage_gap_us, 1e-6);
  EXPECT_DOUBLE_EQ(report.makespan_us, s->makespan_us());
  EXPECT_LE(report.makespan_us, report.staged_makespan_us);
  EXPECT_LE(report.lower_bound_us, report.makespan_us);
}

TEST(ExactSchedulerTest, AStageTooLargeForTheLimitComesBackWithAGap) {
  const Problem problem = RandomProblem(
      {.tasks = 40, .edge_probability = 0.08, .partitionable = 20, .max_units = 16}, 5);
  ExactReport report;
  absl::StatusOr<Schedule> s =
      ExactScheduler(ExactSpace::kJoint)
          .PlanWithReport(problem, Params({{"staging", "false"}, {"stage_time_limit_s", "0.2"}}),
                          &report);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(ValidateSchedule(problem, *s).ok());
  ASSERT_EQ(report.stages.size(), 1u);
  EXPECT_EQ(report.stages[0].stop, StopReason::kTimeLimit);
  EXPECT_GT(report.stage_gap_us, 0);
  EXPECT_LT(report.stages[0].lower_bound_us, report.stages[0].makespan_us);
}

TEST(ExactSchedulerTest, EmptyProblemGivesAnEmptySchedule) {
  absl::StatusOr<Problem> p = Problem::FromTaskGraph(TaskGraph{}, testing::RandomPlatform({}));
  ASSERT_TRUE(p.ok());
  absl::StatusOr<Schedule> s = ExactScheduler(ExactSpace::kJoint).Plan(*p, SchedulerOptions{});
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->subtasks().size(), 0u);
  EXPECT_EQ(s->makespan_us(), 0);
}

TEST(ExactSchedulerTest, RefusesBadParameters) {
  const Problem problem = RandomProblem(testing::RandomTaskGraphOptions{}, 1);
  const std::pair<std::map<std::string, std::string>, const char*> cases[] = {
      {{{"bogus", "1"}}, "unknown option 'bogus'"},
      {{{"stage_time_limit_s", "0"}}, "'stage_time_limit_s' = '0' is not a number of seconds"},
      {{{"stage_time_limit_s", "nan"}}, "is not a number of seconds"},
      {{{"max_stage_size", "-2"}}, "is not a positive integer"},
      {{{"staging", "maybe"}}, "is not true or false"},
      {{{"formulation", "gurobi"}}, "is not bnb or mip"},
  };
  for (const auto& [params, message] : cases) {
    absl::StatusOr<Schedule> s = ExactScheduler(ExactSpace::kJoint).Plan(problem, Params(params));
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(s.status().message()), HasSubstr(message));
  }
}

TEST(ExactSchedulerTest, TaskGraphsWithBadSplitTablesAreRefused) {
  const platform::Platform platform = testing::RandomPlatform({});
  auto make = [](std::vector<std::vector<double>> split, model::SplitAxis axis) {
    TaskGraph g;
    g.cost = {{1, 2, 3}};
    g.splits = {{TaskGraph::Split{axis, std::move(split)}}};
    return g;
  };
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const std::pair<TaskGraph, const char*> cases[] = {
      {make({{1, 2, nan}}, model::SplitAxis::kOutputChannels), "is not a finite value >= 0"},
      {make({{1, -2, 3}}, model::SplitAxis::kOutputChannels), "is not a finite value >= 0"},
      {make({{1, 2}}, model::SplitAxis::kOutputChannels), "has 2 costs for 3 devices"},
      {make({}, model::SplitAxis::kOutputChannels), "at least one work unit"},
      {make({{1, 2, 3}}, model::SplitAxis::kNone), "needs a split axis"},
  };
  for (const auto& [graph, message] : cases) {
    absl::StatusOr<Problem> p = Problem::FromTaskGraph(graph, platform);
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_THAT(std::string(p.status().message()), HasSubstr(message));
  }
  TaskGraph twice = make({{1, 1, 1}, {1, 1, 1}}, model::SplitAxis::kRows);
  twice.splits[0].push_back(twice.splits[0][0]);
  EXPECT_THAT(std::string(Problem::FromTaskGraph(twice, platform).status().message()),
              HasSubstr("given twice"));
}

TEST(ExactSchedulerTest, RegistryBuildsEveryExactMethod) {
  for (const char* name :
       {"exact", "exact-schedule-only", "exact-expanded-local", "exact-expanded-equal"}) {
    absl::StatusOr<std::unique_ptr<Scheduler>> s = MakeScheduler(name);
    ASSERT_TRUE(s.ok()) << name << ": " << s.status();
    EXPECT_EQ((*s)->name(), name);
  }
  EXPECT_THAT(std::string(MakeScheduler("exact:heft").status().message()),
              HasSubstr("takes no argument"));
}

}  // namespace
}  // namespace psched::scheduler::exact
