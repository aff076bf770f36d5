#include "calibration/run_costs/run_probes.h"

#include <cmath>
#include <memory>
#include <string>

#include "calibration/run_costs/fit_run_costs.h"
#include "calibration/run_costs/two_cores_for_test.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "scheduler/problem.h"
#include "scheduler/registry/registry.h"

namespace psched::calibration {
namespace {

using executor::testing::RandomConv;
using model::ActivationKind;
using model::OpKind;
using ::testing::HasSubstr;

// Two branches of convs joined by a concat, then a conv.
model::Graph Branches() {
  executor::testing::GraphBuilder b("branches");
  auto x = b.AddInput({16, 16, 8});
  const model::Activation relu{.kind = ActivationKind::kRelu};
  auto l =
      b.AddOp(OpKind::kConv2d, {x}, {16, 16, 16}, RandomConv(b, 8, 16, 3, 1, 1, 1, 1, 1), relu);
  auto r =
      b.AddOp(OpKind::kConv2d, {x}, {16, 16, 16}, RandomConv(b, 8, 16, 1, 1, 1, 0, 1, 2), relu);
  auto l2 = b.AddOp(OpKind::kConv2d, {l}, {16, 16, 16}, RandomConv(b, 16, 16, 3, 1, 1, 1, 1, 3));
  auto cat = b.AddOp(OpKind::kConcat, {l2, r}, {16, 16, 32});
  b.MarkOutput(
      b.AddOp(OpKind::kConv2d, {cat}, {16, 16, 8}, RandomConv(b, 32, 8, 3, 1, 1, 1, 1, 4)));
  return b.Build();
}

class RunProbesTest : public ::testing::Test {
 protected:
  void SetUp() override { cores_.SetUp(); }
  Probe Plan(const std::string& method) {
    auto problem = scheduler::Problem::FromGraph(graph_, platform_, *model_);
    EXPECT_TRUE(problem.ok()) << problem.status();
    auto scheduler = scheduler::MakeScheduler(method);
    EXPECT_TRUE(scheduler.ok()) << scheduler.status();
    auto schedule = (*scheduler)->Plan(*problem, {});
    EXPECT_TRUE(schedule.ok()) << schedule.status();
    return {&graph_, *std::move(schedule), "branches " + method};
  }

  model::Graph graph_ = Branches();
  TwoCores cores_;
  const platform::Platform& platform_ = cores_.platform;
  const std::shared_ptr<const predictor::LatencyModel>& model_ = cores_.model;
  const std::vector<executor::runtime::Device*>& devices_ = cores_.devices;
};

TEST_F(RunProbesTest, TimesEveryProbeEveryRoundAndFitsFiniteCosts) {
  const std::vector<Probe> probes = {Plan("single:cpu.0"), Plan("pa-heft"), Plan("heft")};
  auto results = RunProbes(probes, devices_, {}, {.warmup_runs = 1, .rounds = 3});
  ASSERT_TRUE(results.ok()) << results.status();
  ASSERT_EQ(results->size(), 3u);
  EXPECT_EQ((*results)[0].devices_used, 1);
  EXPECT_EQ((*results)[1].devices_used, 2);  // pa-heft splits the convs across both cores
  for (size_t i = 0; i < results->size(); ++i) {
    const ProbeResult& r = (*results)[i];
    EXPECT_EQ(r.label, probes[i].label);
    ASSERT_EQ(r.timings.size(), 3u);
    ASSERT_EQ(r.breakdowns.size(), 3u);
    EXPECT_EQ(r.timings[0].size(), probes[i].schedule.subtasks().size());
    for (const RunBreakdown& b : r.breakdowns) {
      EXPECT_GT(b.replay_us, 0);
      EXPECT_GE(b.trace_end_us, b.replay_us * 0.999);
      EXPECT_GE(b.wall_us, b.trace_end_us);
    }
  }
  const std::vector<std::string> names = {"cpu.0", "cpu.1"};
  const std::vector<bool> sync = {true, true};
  const calibration::RunCosts costs = FitRunCosts(*results, names, sync);
  ASSERT_EQ(costs.in_run.size(), 2u);
  for (const auto& r : costs.in_run) {
    EXPECT_TRUE(std::isfinite(r.factor) && r.factor > 0) << r.device << " " << r.factor;
  }
  ASSERT_EQ(costs.sync.size(), 2u);
  EXPECT_GE(costs.sync[0].us, 0);
  EXPECT_LE(costs.sync[0].us, kMaxSyncUs);
}

TEST_F(RunProbesTest, RunsMoreRoundsUntilTheyHaveTakenMinSeconds) {
  const std::vector<Probe> probes = {Plan("single:cpu.0"), Plan("pa-heft")};
  // Each timed run follows 20 ms of idle: after k rounds at least 40k ms have passed, so 0.5 s
  // takes more than the 2 rounds asked for and no round starts after the 13th.
  auto timed = RunProbes(probes, devices_, {}, {.rounds = 2, .min_s = 0.5});
  ASSERT_TRUE(timed.ok()) << timed.status();
  const size_t rounds = (*timed)[0].timings.size();
  EXPECT_GT(rounds, 2u);
  EXPECT_LE(rounds, 13u);
  EXPECT_EQ((*timed)[1].timings.size(), rounds);
  EXPECT_EQ((*timed)[1].breakdowns.size(), rounds);
  auto capped = RunProbes(probes, devices_, {}, {.rounds = 2, .min_s = 60, .max_rounds = 4});
  ASSERT_TRUE(capped.ok()) << capped.status();
  EXPECT_EQ((*capped)[0].timings.size(), 4u);
  EXPECT_EQ((*capped)[1].timings.size(), 4u);
}

TEST_F(RunProbesTest, RefusesBadProbesAndOptions) {
  std::vector<Probe> probes = {Plan("heft")};
  EXPECT_THAT(std::string(RunProbes(probes, {}, {}).status().message()), HasSubstr("no devices"));
  EXPECT_THAT(std::string(RunProbes(probes, devices_, {}, {.rounds = 0}).status().message()),
              HasSubstr("rounds >= 1"));
  EXPECT_THAT(std::string(RunProbes(probes, devices_, {}, {.settle_ms = -1}).status().message()),
              HasSubstr("settle_ms >= 0, got 15, 1 and -1"));
  EXPECT_THAT(
      std::string(RunProbes(probes, devices_, {}, {.max_rounds = 10}).status().message()),
      HasSubstr("max_rounds >= rounds and min_s >= 0, got max_rounds 10, rounds 15 and min_s 0"));
  EXPECT_THAT(std::string(RunProbes(probes, devices_, {}, {.min_s = -1}).status().message()),
              HasSubstr("and min_s -1"));
  const std::vector<executor::runtime::Device*> one = {devices_[0]};
  EXPECT_THAT(std::string(RunProbes(probes, one, {}).status().message()),
              HasSubstr("'branches heft' is scheduled on 2 devices, 1 given"));
  probes[0].graph = nullptr;
  EXPECT_THAT(std::string(RunProbes(probes, devices_, {}).status().message()),
              HasSubstr("has no graph"));
}

}  // namespace
}  // namespace psched::calibration
