#include "calibration/run_costs/quiet_rounds.h"

#include <random>

#include "calibration/run_costs/fit_run_costs.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psched::calibration {
namespace {

using ::testing::ElementsAre;

model::Graph OneOp() {
  executor::testing::GraphBuilder b;
  auto x = b.AddInput({4, 4, 2});
  b.MarkOutput(b.AddOp(model::OpKind::kActivation, {x}, {4, 4, 2}));
  return b.Build();
}

// A probe of OneOp on device 0, predicted 100 us, whose timed run i took `measured_us[i]`.
ProbeResult Probe(const model::Graph& graph, const std::vector<double>& measured_us) {
  scheduler::Schedule schedule(1, 1);
  schedule.Add({.op = 0, .device = 0, .start_us = 0, .end_us = 100});
  ProbeResult r;
  r.graph = &graph;
  r.schedule = schedule;
  r.devices_used = 1;
  for (double us : measured_us) {
    const std::vector<executor::runtime::SubtaskTiming> timings = {
        {.device = 0,
         .step = {0, executor::WorkSlice::Whole()},
         .start_ns = 0,
         .end_ns = static_cast<int64_t>(us * 1000)}};
    r.timings.push_back(timings);
    r.breakdowns.push_back(BreakDownRun(graph, schedule, timings, us * 1.1));
  }
  return r;
}

// `rounds` runs of about `us` (a seeded 1% spread), those in [burst_from, burst_to) `burst`
// times slower.
std::vector<double> Runs(double us, int rounds, int burst_from, int burst_to, double burst,
                         uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> spread(0.995, 1.005);
  std::vector<double> out;
  for (int i = 0; i < rounds; ++i) {
    out.push_back(us * spread(rng) * (i >= burst_from && i < burst_to ? burst : 1.0));
  }
  return out;
}

TEST(QuietestRounds, KeepsTheQuieterHalfOfTheRoundsWhateverTheProbesLengths) {
  const model::Graph g = OneOp();
  // Rounds 2-4 of 7 ran 1.3x slower, in a short probe and a long one alike.
  const std::vector<ProbeResult> probes = {Probe(g, Runs(110, 7, 2, 5, 1.3, 1)),
                                           Probe(g, Runs(2000, 7, 2, 5, 1.3, 2))};
  const RoundSelection s = QuietestRounds(probes);
  ASSERT_EQ(s.slowness.size(), 7u);
  EXPECT_THAT(s.kept, ElementsAre(0, 1, 5, 6));
  // Against the probes' medians (quiet runs, 4 of 7).
  for (int i : {0, 1, 5, 6}) EXPECT_NEAR(s.slowness[i], 1.0, 0.01) << i;
  for (int i : {2, 3, 4}) EXPECT_NEAR(s.slowness[i], 1.3, 0.013) << i;
  EXPECT_NEAR(s.slowest_kept, 1.0, 0.01);
  EXPECT_NEAR(s.slowest_dropped, 1.3, 0.013);
}

TEST(QuietestRounds, KeepsEveryRoundWhenTheProbesRoundsDifferOrAWallTimeIsMissing) {
  const model::Graph g = OneOp();
  const std::vector<ProbeResult> uneven = {Probe(g, {100, 200, 300}), Probe(g, {100, 200})};
  RoundSelection s = QuietestRounds(uneven);
  EXPECT_TRUE(s.slowness.empty());
  EXPECT_THAT(s.kept, ElementsAre(0, 1, 2));
  EXPECT_EQ(s.slowest_dropped, 0);

  std::vector<ProbeResult> zero = {Probe(g, {100, 200, 300})};
  zero[0].breakdowns[1].wall_us = 0;
  s = QuietestRounds(zero);
  EXPECT_THAT(s.kept, ElementsAre(0, 1, 2));

  EXPECT_TRUE(QuietestRounds({}).kept.empty());
  // One round: kept.
  EXPECT_THAT(QuietestRounds(std::vector<ProbeResult>{Probe(g, {100})}).kept, ElementsAre(0));
}

TEST(KeepRounds, KeepsTheTimingsAndBreakdownsOfTheRoundsInOrder) {
  const model::Graph g = OneOp();
  const std::vector<ProbeResult> kept =
      KeepRounds(std::vector<ProbeResult>{Probe(g, {100, 200, 300, 400})}, std::vector<int>{1, 3});
  ASSERT_EQ(kept.size(), 1u);
  ASSERT_EQ(kept[0].timings.size(), 2u);
  ASSERT_EQ(kept[0].breakdowns.size(), 2u);
  EXPECT_EQ(kept[0].timings[0][0].end_ns, 200'000);
  EXPECT_EQ(kept[0].timings[1][0].end_ns, 400'000);
  EXPECT_DOUBLE_EQ(kept[0].breakdowns[1].wall_us, 440);
  EXPECT_EQ(kept[0].graph, &g);
  EXPECT_EQ(kept[0].devices_used, 1);
}

TEST(QuietestRounds, ABurstOverMostOfTheProbesStaysOutOfTheInRunFactor) {
  const model::Graph g = OneOp();
  // 15 rounds at 1.1x and 5.5x the prediction, 9 of them (a majority) disturbed 1.3x further.
  const std::vector<ProbeResult> probes = {Probe(g, Runs(110, 15, 3, 12, 1.3, 3)),
                                           Probe(g, Runs(550, 15, 3, 12, 1.3, 4))};
  const std::vector<std::string> names = {"cpu.0"};
  const calibration::RunCosts all = FitRunCosts(probes, names, {true});
  const RoundSelection quiet = QuietestRounds(probes);
  ASSERT_EQ(quiet.kept.size(), 8u);
  const calibration::RunCosts kept = FitRunCosts(KeepRounds(probes, quiet.kept), names, {true});
  ASSERT_EQ(all.in_run.size(), 1u);
  ASSERT_EQ(kept.in_run.size(), 1u);
  // Geometric mean of the two probes' median ratios: sqrt(1.1 x 5.5), times 1.3 over every round.
  const double quiet_factor = std::sqrt(1.1 * 5.5);
  EXPECT_NEAR(all.in_run[0].factor, quiet_factor * 1.3, 0.02 * quiet_factor);
  EXPECT_NEAR(kept.in_run[0].factor, quiet_factor, 0.01 * quiet_factor);
  EXPECT_EQ(kept.runs, 8);
}

}  // namespace
}  // namespace psched::calibration
