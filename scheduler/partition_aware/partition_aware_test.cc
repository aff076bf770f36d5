#include <algorithm>
#include <cmath>
#include <map>
#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "predictor/profiles.h"
#include "scheduler/heft.h"
#include "scheduler/partition_aware/candidate_plans.h"
#include "scheduler/partition_aware/expanded_dag_scheduler.h"
#include "scheduler/partition_aware/iterative_search.h"
#include "scheduler/partition_aware/pa_heft.h"
#include "scheduler/partition_aware/partition_only.h"
#include "scheduler/partition_aware/slack.h"
#include "scheduler/partition_aware/stage_heft.h"
#include "scheduler/partition_aware/staging.h"
#include "scheduler/partition_aware/test_graphs.h"

namespace psched::scheduler::partition_aware {
namespace {

using model::SplitAxis;

// Brute force over every division of `total` into three slots.
double BruteForce3(int64_t total, const std::vector<double>& offsets,
                   const std::function<double(int, int64_t)>& cost) {
  double best = std::numeric_limits<double>::infinity();
  for (int64_t a = 0; a <= total; ++a) {
    for (int64_t b = 0; a + b <= total; ++b) {
      const int64_t w[3] = {a, b, total - a - b};
      double m = 0;
      for (int q = 0; q < 3; ++q) {
        if (w[q] > 0) m = std::max(m, offsets[static_cast<size_t>(q)] + cost(q, w[q]));
      }
      best = std::min(best, m);
    }
  }
  return best;
}

TEST(MinMaxDivisionTest, MatchesBruteForceOnLinearCosts) {
  const double speed[3] = {1.0, 2.0, 4.5};
  auto cost = [&](int q, int64_t w) { return 3.0 + static_cast<double>(w) * speed[q]; };
  for (int64_t total : {1, 2, 7, 100, 1000, 2048}) {
    std::vector<double> offsets = {0, 0, 0};
    std::vector<int64_t> work(3);
    const double got = MinMaxDivision(total, 1, 3, offsets, cost, work);
    EXPECT_DOUBLE_EQ(got, BruteForce3(total, offsets, cost)) << "total " << total;
    EXPECT_EQ(work[0] + work[1] + work[2], total);
  }
}

TEST(MinMaxDivisionTest, OffsetsKeepALateDeviceIdle) {
  std::vector<double> offsets = {0, 10, 1e6};
  std::vector<int64_t> work(3);
  const double got = MinMaxDivision(
      64, 1, 3, offsets, [](int, int64_t w) { return static_cast<double>(w); }, work);
  // Devices 0 and 1 share the work so that both finish at (64 + 10) / 2 = 37.
  EXPECT_DOUBLE_EQ(got, 37.0);
  EXPECT_EQ(work[0], 37);
  EXPECT_EQ(work[1], 27);
  EXPECT_EQ(work[2], 0);
}

TEST(MinMaxDivisionTest, RespectsMaxActiveAndAlignment) {
  std::vector<double> offsets = {0, 0, 0};
  std::vector<int64_t> work(3);
  auto cost = [](int, int64_t w) { return static_cast<double>(w); };
  EXPECT_DOUBLE_EQ(MinMaxDivision(30, 1, 1, offsets, cost, work), 30.0);
  EXPECT_EQ(std::count(work.begin(), work.end(), 0), 2);
  // Cuts at multiples of 4: 30 = 12 + 12 + 6 would need a cut at 24; best is 12/12/6 or
  // similar with max 12.
  EXPECT_DOUBLE_EQ(MinMaxDivision(30, 4, 3, offsets, cost, work), 12.0);
  EXPECT_EQ(work[0] % 4, 0);
  EXPECT_EQ((work[0] + work[1]) % 4, 0);
  EXPECT_EQ(work[0] + work[1] + work[2], 30);
}

TEST(MinMaxDivisionTest, CoarseToFineFindsANonMonotonicOptimumNearTheGrid) {
  // A GPU-like step: slot 0 is fast up to 1024 units, then doubles its per-unit cost.
  auto cost = [](int q, int64_t w) {
    if (q == 0) return w <= 1024 ? 1.0 * static_cast<double>(w) : 2.0 * static_cast<double>(w);
    return 3.0 * static_cast<double>(w);
  };
  std::vector<double> offsets = {0, 0, 0};
  std::vector<int64_t> work(3);
  const double got = MinMaxDivision(1500, 1, 3, offsets, cost, work);
  EXPECT_DOUBLE_EQ(got, BruteForce3(1500, offsets, cost));
}

// `n` devices in one memory domain.
platform::Platform Devices(int n) {
  platform::Platform p;
  p.name = "test";
  for (int d = 0; d < n; ++d) {
    platform::DeviceSpec spec;
    spec.name = "d" + std::to_string(d);
    p.devices.push_back(spec);
  }
  return p;
}

class ProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto profile = predictor::LoadProfile("oneplus11");
    ASSERT_TRUE(profile.ok()) << profile.status();
    profile_ = *std::move(profile);
  }
  Problem Make(const model::Graph& graph, ProblemOptions options = {}) {
    auto problem = Problem::FromGraph(graph, profile_.platform, *profile_.model, options);
    EXPECT_TRUE(problem.ok()) << problem.status();
    return *std::move(problem);
  }
  predictor::Profile profile_;
};

TEST_F(ProfileTest, MinLocalLatencyPlanBeatsEveryUnpartitionedDevice) {
  const model::Graph graph = testing::ConvChain(2);
  const Problem problem = Make(graph);
  const PlacedPlan local = MinLocalLatencyPlan(problem, 0);
  double best_single = std::numeric_limits<double>::infinity();
  for (int d = 0; d < problem.num_devices(); ++d) {
    best_single = std::min(best_single, problem.LatencyUs(0, SplitAxis::kNone, 1, d));
  }
  EXPECT_LE(local.local_cost_us, best_single);
  EXPECT_DOUBLE_EQ(local.local_cost_us, OspdLocalCostUs(problem, 0, local.plan, local.devices));
  int64_t sum = 0;
  for (int64_t w : local.plan.work) sum += w;
  EXPECT_EQ(sum, problem.WorkSize(0, local.plan.axis));
  EXPECT_EQ(local.plan.work.size(), local.devices.size());
}

TEST_F(ProfileTest, EqualSizePlanSplitsEvenly) {
  const Problem problem = Make(testing::ConvChain(1));
  const PlacedPlan equal = EqualSizePlan(problem, 0);
  if (equal.plan.axis != SplitAxis::kNone) {
    const auto [lo, hi] = std::minmax_element(equal.plan.work.begin(), equal.plan.work.end());
    EXPECT_LE(*hi - *lo, 1);
  }
  EXPECT_GE(equal.local_cost_us, MinLocalLatencyPlan(problem, 0).local_cost_us);
}

TEST_F(ProfileTest, SamplerDrawsValidDeterministicPlans) {
  const Problem problem = Make(testing::ConvChain(1), ProblemOptions{0, 4});
  PlanSampler sampler;
  std::mt19937_64 a(7), b(7);
  std::map<SplitAxis, int> axes;
  PartitionPlan pa, pb;
  for (int k = 0; k < 3000; ++k) {
    sampler.Sample(problem, 0, a, pa);
    sampler.Sample(problem, 0, b, pb);
    ASSERT_EQ(pa, pb);
    ++axes[pa.axis];
    int64_t sum = 0;
    for (size_t q = 0; q < pa.work.size(); ++q) {
      ASSERT_GT(pa.work[q], 0);
      if (q + 1 < pa.work.size()) {
        ASSERT_EQ(pa.work[q] % 4, 0);
      }
      sum += pa.work[q];
    }
    ASSERT_EQ(sum, problem.WorkSize(0, pa.axis));
    ASSERT_LE(static_cast<int>(pa.work.size()), 3);
  }
  // Four strategies (none, cout, cin, spatial) drawn uniformly; a few split draws put all
  // work in one slot and become none.
  for (SplitAxis axis : {SplitAxis::kOutputChannels, SplitAxis::kInputChannels, SplitAxis::kRows}) {
    EXPECT_GT(axes[axis], 600) << model::SplitAxisName(axis);
    EXPECT_LT(axes[axis], 900) << model::SplitAxisName(axis);
  }
}

TEST_F(ProfileTest, SamplerIsUniformOverCompositions) {
  // cout of a 64-channel conv with alignment 16: N = 4 units into 3 slots, 15 compositions.
  const Problem problem = Make(testing::ConvChain(1), ProblemOptions{0, 16});
  PlanSampler sampler;
  std::mt19937_64 rng(3);
  std::map<std::vector<int64_t>, int> seen;
  int splits = 0;
  for (int k = 0; k < 40000; ++k) {
    PartitionPlan p;
    sampler.Sample(problem, 0, rng, p);
    if (p.axis != SplitAxis::kOutputChannels) continue;
    ++splits;
    ++seen[p.work];
  }
  // 15 compositions of 4 units into 3 slots: 3 with one part (they become none), 9 with
  // two parts (each canonical pair, e.g. 16|48, from 3 of them) and 3 with three parts.
  ASSERT_EQ(seen.size(), 6u);
  EXPECT_NEAR(static_cast<double>(seen[{16, 16, 32}]) / splits, 1.0 / 12.0, 0.01);
  EXPECT_NEAR(static_cast<double>(seen[{32, 16, 16}]) / splits, 1.0 / 12.0, 0.01);
  EXPECT_NEAR(static_cast<double>(seen[{16, 48}]) / splits, 3.0 / 12.0, 0.015);
  EXPECT_NEAR(static_cast<double>(seen[{32, 32}]) / splits, 3.0 / 12.0, 0.015);
}

TEST(StagingTest, ChainOpsAreAllJoinPoints) {
  TaskGraph tg;
  tg.cost = {{1, 2}, {1, 2}, {1, 2}, {1, 2}};
  tg.edges = {{0, 1}, {1, 2}, {2, 3}};
  const platform::Platform platform = Devices(2);
  auto problem = Problem::FromTaskGraph(tg, platform);
  ASSERT_TRUE(problem.ok()) << problem.status();
  const std::vector<bool> join = GlobalJoinPoints(*problem);
  EXPECT_EQ(std::count(join.begin(), join.end(), true), 4);
  const std::vector<double> rank = {4, 3, 2, 1};
  EXPECT_EQ(BuildStages(*problem, rank, 20).size(), 4u);
}

TEST(StagingTest, ForkJoinClosesAtTheJoinAndWideStagesAtTheLimit) {
  // 0 -> {1..30} -> 31.
  TaskGraph tg;
  tg.cost.assign(32, {1.0, 1.0});
  for (int k = 1; k <= 30; ++k) {
    tg.edges.push_back({0, k});
    tg.edges.push_back({k, 31});
  }
  const platform::Platform platform = Devices(2);
  auto problem = Problem::FromTaskGraph(tg, platform);
  ASSERT_TRUE(problem.ok()) << problem.status();
  const std::vector<bool> join = GlobalJoinPoints(*problem);
  EXPECT_TRUE(join[0]);
  EXPECT_TRUE(join[31]);
  EXPECT_FALSE(join[5]);
  std::vector<double> rank(32, 1.0);
  rank[0] = 3;
  rank[31] = 0.5;
  const auto stages = BuildStages(*problem, rank, 20);
  ASSERT_EQ(stages.size(), 3u);
  EXPECT_EQ(stages[0], std::vector<OpId>({0}));
  EXPECT_EQ(stages[1].size(), 20u);  // size limit, lowest ids first among equal ranks
  EXPECT_EQ(stages[1].front(), 1);
  EXPECT_EQ(stages[2].size(), 11u);  // the other ten branches and the join
  EXPECT_EQ(stages[2].back(), 31);
}

TEST(StagingTest, RankGuidesExplorationAcrossBranches) {
  // Two branches 1->2->3 and 4->5->6 between 0 and 7; branch ranks interleave, so a stage
  // of 4 takes 0 plus the two heads and the next op of the higher-ranked branch.
  TaskGraph tg;
  tg.cost.assign(8, {1.0});
  tg.edges = {{0, 1}, {1, 2}, {2, 3}, {3, 7}, {0, 4}, {4, 5}, {5, 6}, {6, 7}};
  const platform::Platform platform = Devices(1);
  auto problem = Problem::FromTaskGraph(tg, platform);
  ASSERT_TRUE(problem.ok()) << problem.status();
  const std::vector<double> rank = {10, 8, 6, 4, 7.5, 5.5, 3.5, 1};
  const auto stages = BuildStages(*problem, rank, 4);
  ASSERT_GE(stages.size(), 2u);
  EXPECT_EQ(stages[0], std::vector<OpId>({0}));  // op 0 is a join point
  EXPECT_EQ(stages[1], std::vector<OpId>({1, 2, 4, 5}));
}

TEST(SlackTest, ComputesSlackOnDependencyAndDeviceEdges) {
  // Device 0 runs op 0 [0,10) then op 1 [10,30); device 1 runs op 2 [0,5). Op 1 depends on
  // op 0. Makespan 30: ops 0 and 1 are critical, op 2 has slack 25.
  TaskGraph tg;
  tg.cost = {{10, 10}, {20, 20}, {5, 5}};
  tg.edges = {{0, 1}};
  const platform::Platform platform = Devices(2);
  auto problem = Problem::FromTaskGraph(tg, platform);
  ASSERT_TRUE(problem.ok());
  Schedule s(3, 2);
  s.Add({0, 0, 0, SplitAxis::kNone, 0, 1, 0, 10});
  s.Add({1, 0, 0, SplitAxis::kNone, 0, 1, 10, 30});
  s.Add({2, 0, 1, SplitAxis::kNone, 0, 1, 0, 5});
  SlackAnalysis slack;
  slack.Compute(*problem, s);
  EXPECT_DOUBLE_EQ(slack.op_slack(0), 0);
  EXPECT_DOUBLE_EQ(slack.op_slack(1), 0);
  EXPECT_DOUBLE_EQ(slack.op_slack(2), 25);
  EXPECT_DOUBLE_EQ(slack.op_duration(1), 20);
}

TEST(SlackTest, DeviceOrderEdgesPropagateCriticality) {
  // Op 0 [0,5) and op 1 [5,20) share device 0 with no dependency; op 1 ends the schedule,
  // so op 0 (before it on the device) has zero slack too.
  TaskGraph tg;
  tg.cost = {{5}, {15}};
  const platform::Platform platform = Devices(1);
  auto problem = Problem::FromTaskGraph(tg, platform);
  ASSERT_TRUE(problem.ok());
  Schedule s(2, 1);
  s.Add({0, 0, 0, SplitAxis::kNone, 0, 1, 0, 5});
  s.Add({1, 0, 0, SplitAxis::kNone, 0, 1, 5, 20});
  SlackAnalysis slack;
  slack.Compute(*problem, s);
  EXPECT_DOUBLE_EQ(slack.op_slack(0), 0);
}

TEST_F(ProfileTest, MethodsProduceValidSchedulesOnAForkJoin) {
  const Problem problem = Make(testing::ForkJoin(3, 3));
  HeftScheduler heft_list;
  auto heft = heft_list.Schedule(problem);
  ASSERT_TRUE(heft.ok()) << heft.status();
  SchedulerOptions options;
  std::vector<std::unique_ptr<Scheduler>> methods;
  methods.push_back(std::make_unique<PartitionOnlyScheduler>());
  methods.push_back(std::make_unique<PaHeftScheduler>());
  methods.push_back(std::make_unique<ExpandedDagScheduler>(ExpansionRule::kEqualSize,
                                                           std::make_unique<HeftScheduler>()));
  methods.push_back(std::make_unique<ExpandedDagScheduler>(ExpansionRule::kMinLocalLatency,
                                                           std::make_unique<HeftScheduler>()));
  methods.push_back(std::make_unique<IterativeScheduler>(std::make_unique<HeftScheduler>()));
  for (const auto& m : methods) {
    auto s = m->Plan(problem, options);
    ASSERT_TRUE(s.ok()) << m->name() << ": " << s.status();
    EXPECT_TRUE(ValidateSchedule(problem, *s).ok())
        << m->name() << ": " << ValidateSchedule(problem, *s);
    EXPECT_GT(s->makespan_us(), 0) << m->name();
  }
}

TEST_F(ProfileTest, IterativeSearchImprovesOnHeftAndIsDeterministic) {
  const Problem problem = Make(testing::Diamonds(4));
  HeftScheduler heft;
  IterativeOptions options;
  options.seed = 11;
  IterativeStats stats;
  auto a = IterativeSearch(problem, heft, options, &stats);
  ASSERT_TRUE(a.ok()) << a.status();
  ASSERT_TRUE(ValidateSchedule(problem, *a).ok()) << ValidateSchedule(problem, *a);
  auto start = heft.Schedule(problem);
  ASSERT_TRUE(start.ok());
  EXPECT_DOUBLE_EQ(stats.initial_makespan_us, start->makespan_us());
  EXPECT_LT(a->makespan_us(), start->makespan_us());
  EXPECT_GT(stats.accepted, 0);
  EXPECT_GT(stats.evaluations, 0);
  EXPECT_EQ(stats.makespan_us, a->makespan_us());
  auto b = IterativeSearch(problem, heft, options);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->makespan_us(), b->makespan_us());
  for (OpId op = 0; op < problem.num_ops(); ++op) EXPECT_EQ(a->plan(op), b->plan(op));
}

TEST_F(ProfileTest, IterativeOptionsAreParsedAndCheckedWithClearErrors) {
  SchedulerOptions options;
  options.params = {{"rho", "0.5"}, {"plans_per_op", "3"}, {"initial", "min-local-latency"}};
  auto parsed = ApplySchedulerOptions(IterativeOptions{}, options);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_DOUBLE_EQ(parsed->rho, 0.5);
  EXPECT_EQ(parsed->plans_per_op, 3);
  EXPECT_EQ(parsed->initial, InitialPlans::kMinLocalLatency);
  options.params = {{"bogus", "1"}};
  EXPECT_EQ(ApplySchedulerOptions(IterativeOptions{}, options).status().code(),
            absl::StatusCode::kInvalidArgument);
  options.params = {{"plans_per_op", "many"}};
  auto bad = ApplySchedulerOptions(IterativeOptions{}, options);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("plans_per_op"), std::string::npos);
  IterativeOptions wrong;
  wrong.rho = 2;
  HeftScheduler heft;
  const Problem problem = Make(testing::ConvChain(2));
  EXPECT_EQ(IterativeSearch(problem, heft, wrong).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST_F(ProfileTest, IterativeFromMinLocalAndWithoutStagingStayValid) {
  const Problem problem = Make(testing::RandomDag(30, 5));
  HeftScheduler heft;
  for (bool staging : {true, false}) {
    IterativeOptions options;
    options.staging = staging;
    options.initial = InitialPlans::kMinLocalLatency;
    options.max_stage_size = 8;
    IterativeStats stats;
    auto s = IterativeSearch(problem, heft, options, &stats);
    ASSERT_TRUE(s.ok()) << s.status();
    EXPECT_TRUE(ValidateSchedule(problem, *s).ok()) << ValidateSchedule(problem, *s);
    EXPECT_LE(s->makespan_us(), stats.initial_makespan_us);
    EXPECT_EQ(stats.stages > 1, staging);
  }
}

TEST_F(ProfileTest, LocalMovesRefineSplitPlansOnlyAndStayValidAndDeterministic) {
  const Problem problem = Make(testing::RandomDag(30, 5));
  HeftScheduler heft;
  SchedulerOptions params;
  params.seed = 3;
  params.params = {{"local_moves", "4"}, {"plans_per_op", "0"}, {"max_stage_size", "8"}};
  auto options = ApplySchedulerOptions(IterativeOptions{}, params);
  ASSERT_TRUE(options.ok()) << options.status();
  ASSERT_EQ(options->local_moves, 4);
  // Local moves only: from unpartitioned plans there is nothing to move.
  IterativeStats unsplit;
  ASSERT_TRUE(IterativeSearch(problem, heft, *options, &unsplit).ok());
  EXPECT_EQ(unsplit.evaluations, 0);
  // From min-local-latency plans they are the search's only candidates.
  options->initial = InitialPlans::kMinLocalLatency;
  IterativeStats moved;
  auto a = IterativeSearch(problem, heft, *options, &moved);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_TRUE(ValidateSchedule(problem, *a).ok()) << ValidateSchedule(problem, *a);
  EXPECT_GT(moved.evaluations, 0);
  EXPECT_LE(a->makespan_us(), moved.initial_makespan_us);
  auto b = IterativeSearch(problem, heft, *options);
  ASSERT_TRUE(b.ok());
  EXPECT_EQ(a->makespan_us(), b->makespan_us());
  params.params = {{"local_moves", "-1"}};
  auto bad = ApplySchedulerOptions(IterativeOptions{}, params);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("local_moves"), std::string::npos);
}

TEST_F(ProfileTest, PartitionOnlyOnAChainIsTheSumOfLocalCosts) {
  const Problem problem = Make(testing::ConvChain(5));
  auto s = PartitionOnlyScheduler().Plan(problem, SchedulerOptions{});
  ASSERT_TRUE(s.ok()) << s.status();
  double sum = 0;
  for (OpId op = 0; op < problem.num_ops(); ++op)
    sum += MinLocalLatencyPlan(problem, op).local_cost_us;
  EXPECT_NEAR(s->makespan_us(), sum, 1e-6 * sum);
  int split = 0;
  for (OpId op = 0; op < problem.num_ops(); ++op) split += s->plan(op).ActiveSubtasks() > 1 ? 1 : 0;
  EXPECT_GT(split, 0);
}

TEST(PaHeftTest, EqualsHeftWhenNothingIsPartitionable) {
  // Costs of Topcuoglu et al. (2002), edges with transfer costs across two domains.
  TaskGraph tg;
  tg.cost = {{14, 16, 9}, {13, 19, 18}, {11, 13, 19}, {13, 8, 17},  {12, 13, 10},
             {13, 16, 9}, {7, 15, 11},  {5, 11, 14},  {18, 12, 20}, {21, 7, 16}};
  tg.edges = {{0, 1, 18}, {0, 2, 12}, {0, 3, 9},  {0, 4, 11}, {0, 5, 14},
              {1, 7, 19}, {1, 8, 16}, {2, 6, 23}, {3, 7, 27}, {3, 8, 23},
              {4, 8, 13}, {5, 7, 15}, {6, 9, 17}, {7, 9, 11}, {8, 9, 13}};
  platform::Platform platform = Devices(3);
  platform.devices[2].memory_domain = 1;
  auto problem = Problem::FromTaskGraph(tg, platform);
  ASSERT_TRUE(problem.ok()) << problem.status();
  auto heft = HeftScheduler().Schedule(*problem);
  auto pa = PaHeftScheduler().Plan(*problem, SchedulerOptions{});
  ASSERT_TRUE(heft.ok() && pa.ok());
  EXPECT_TRUE(ValidateSchedule(*problem, *pa).ok()) << ValidateSchedule(*problem, *pa);
  EXPECT_DOUBLE_EQ(pa->makespan_us(), heft->makespan_us());
  // Nothing to partition: the iterative search returns its starting schedule.
  auto it =
      IterativeScheduler(std::make_unique<HeftScheduler>()).Plan(*problem, SchedulerOptions{});
  ASSERT_TRUE(it.ok());
  EXPECT_DOUBLE_EQ(it->makespan_us(), heft->makespan_us());
}

// StageHeft must make exactly the decisions of the core HEFT run on the same stage with
// the earlier stages fixed, with and without prefix reuse.
TEST_F(ProfileTest, StageHeftMatchesScopedHeftAndPrefixReuse) {
  const Problem problem = Make(testing::RandomDag(60, 17));
  std::mt19937_64 rng(5);
  PlanSampler sampler;
  std::vector<PartitionPlan> plans(static_cast<size_t>(problem.num_ops()));
  for (OpId op = 0; op < problem.num_ops(); ++op)
    sampler.Sample(problem, op, rng, plans[static_cast<size_t>(op)]);
  std::vector<double> rank(static_cast<size_t>(problem.num_ops()));
  for (OpId op = 0; op < problem.num_ops(); ++op) rank[static_cast<size_t>(op)] = -op;
  const auto stages = BuildStages(problem, rank, 7);
  ASSERT_GT(stages.size(), 3u);
  HeftScheduler heft;
  ListScheduler::Workspace workspace;
  StageHeft fast;
  Schedule committed(problem.num_ops(), problem.num_devices());
  int64_t checked = 0;
  for (const auto& stage : stages) {
    Schedule core;
    const ScheduleScope scope{stage, committed.subtasks().empty() ? nullptr : &committed};
    ASSERT_TRUE(heft.ScheduleInto(problem, plans, workspace, core, scope).ok());
    fast.Prepare(problem, stage, committed);
    EXPECT_EQ(fast.Run(plans), core.makespan_us());
    fast.MarkReference();
    Schedule mine(problem.num_ops(), problem.num_devices());
    fast.Emit(mine);
    ASSERT_EQ(mine.subtasks().size(), core.subtasks().size());
    for (size_t k = 0; k < core.subtasks().size(); ++k) {
      EXPECT_EQ(mine.subtasks()[k].device, core.subtasks()[k].device);
      EXPECT_EQ(mine.subtasks()[k].start_us, core.subtasks()[k].start_us);
      ++checked;
    }
    // Change each op's plan in turn: the reusing run equals a run from scratch.
    for (OpId op : stage) {
      PartitionPlan saved = plans[static_cast<size_t>(op)];
      sampler.Sample(problem, op, rng, plans[static_cast<size_t>(op)]);
      const double reused = fast.Run(plans, op);
      StageHeft scratch;
      scratch.Prepare(problem, stage, committed);
      EXPECT_EQ(reused, scratch.Run(plans));
      plans[static_cast<size_t>(op)] = saved;
    }
    for (const ScheduledSubtask& s : core.subtasks()) committed.Add(s);
  }
  EXPECT_GT(checked, 60);
  EXPECT_GT(fast.reused_placements(), 0);
}

}  // namespace
}  // namespace psched::scheduler::partition_aware
