#include "calibration/run_costs/fit_run_costs.h"

#include <cmath>

#include "executor/testing/graph_builder.h"
#include "gtest/gtest.h"

namespace psched::calibration {
namespace {

using model::OpKind;

model::Graph Chain3() {
  executor::testing::GraphBuilder b;
  auto x = b.AddInput({4, 4, 2});
  auto a = b.AddOp(OpKind::kActivation, {x}, {4, 4, 2});
  auto bb = b.AddOp(OpKind::kActivation, {a}, {4, 4, 2});
  b.MarkOutput(b.AddOp(OpKind::kActivation, {bb}, {4, 4, 2}));
  return b.Build();
}

// The two devices of every probe below, both with sync costs.
const std::vector<std::string> kNames = {"cpu.0", "cpu.1"};
const std::vector<bool> kBothSync = {true, true};

// A probe of Chain3 on `devices` (one per op), each op predicted `predicted_us` and measured
// `measured_us`, every subtask starting `gap_us` after the one before it ended.
ProbeResult Probe(const model::Graph& graph, const int (&devices)[3], double predicted_us,
                  double measured_us, double gap_us, int runs) {
  scheduler::Schedule schedule(3, 2);
  std::vector<executor::runtime::SubtaskTiming> timings;
  double t = 0;
  for (model::OpId op = 0; op < 3; ++op) {
    schedule.Add({.op = op,
                  .device = devices[op],
                  .start_us = predicted_us * op,
                  .end_us = predicted_us * (op + 1)});
    timings.push_back({.device = devices[op],
                       .step = {op, executor::WorkSlice::Whole()},
                       .start_ns = static_cast<int64_t>(t * 1000),
                       .end_ns = static_cast<int64_t>((t + measured_us) * 1000)});
    t += measured_us + gap_us;
  }
  ProbeResult r;
  r.graph = &graph;
  r.schedule = schedule;
  r.devices_used = devices[0] == devices[1] && devices[1] == devices[2] ? 1 : 2;
  for (int i = 0; i < runs; ++i) {
    r.timings.push_back(timings);
    r.breakdowns.push_back(BreakDownRun(graph, schedule, timings, t + 50));
  }
  return r;
}

// stem -> (branch a, branch b) -> join.
model::Graph Fork() {
  executor::testing::GraphBuilder b;
  auto x = b.AddInput({4, 4, 2});
  auto stem = b.AddOp(OpKind::kActivation, {x}, {4, 4, 2});
  auto a = b.AddOp(OpKind::kActivation, {stem}, {4, 4, 2});
  auto bb = b.AddOp(OpKind::kActivation, {stem}, {4, 4, 2});
  b.MarkOutput(b.AddOp(OpKind::kAdd, {a, bb}, {4, 4, 2}));
  return b.Build();
}

// A probe of Fork with the stem, branch a and the join on device 0 and branch b on device 1,
// each op predicted `predicted_us`; the stem and the join measured `alone_us`, the branches
// `branch_us` each, branch b starting `gap_us` after the stem (so the branches overlap for
// branch_us - gap_us) and the join `gap_us` after branch b.
ProbeResult ForkProbe(const model::Graph& graph, double predicted_us, double alone_us,
                      double branch_us, double gap_us, int runs) {
  scheduler::Schedule schedule(4, 2);
  const int device[4] = {0, 0, 1, 0};
  const double start[4] = {0, alone_us, alone_us + gap_us, alone_us + 2 * gap_us + branch_us};
  const double length[4] = {alone_us, branch_us, branch_us, alone_us};
  std::vector<executor::runtime::SubtaskTiming> timings;
  for (model::OpId op = 0; op < 4; ++op) {
    const double planned = op == 3 ? 2 * predicted_us : predicted_us * op;
    schedule.Add({.op = op,
                  .device = device[op],
                  .start_us = op == 2 ? predicted_us : planned,
                  .end_us = (op == 2 ? predicted_us : planned) + predicted_us});
    timings.push_back({.device = device[op],
                       .step = {op, executor::WorkSlice::Whole()},
                       .start_ns = static_cast<int64_t>(start[op] * 1000),
                       .end_ns = static_cast<int64_t>((start[op] + length[op]) * 1000)});
  }
  ProbeResult r;
  r.graph = &graph;
  r.schedule = schedule;
  r.devices_used = 2;
  const double end = start[3] + length[3];
  for (int i = 0; i < runs; ++i) {
    r.timings.push_back(timings);
    r.breakdowns.push_back(BreakDownRun(graph, schedule, timings, end + 50));
  }
  return r;
}

TEST(FitRunCosts, InRunFactorsAloneCoRunFactorsAndTheCostsThatReproduceTheRuns) {
  const model::Graph g = Chain3();
  const model::Graph fork = Fork();
  const std::vector<ProbeResult> probes = {
      Probe(g, {0, 0, 0}, 100, 110, 0, 5),  // alone on device 0: 10% slower than predicted
      Probe(g, {1, 1, 1}, 100, 120, 0, 5),  // alone on device 1
      // Together: the stem and the join as alone, the branches side by side at 150 us each,
      // 25 us per hand-off (branch b from 135, so they overlap 125 of their 150 us).
      ForkProbe(fork, 100, 110, 150, 25, 5),
  };
  const calibration::RunCosts costs = FitRunCosts(probes, kNames, kBothSync);
  EXPECT_EQ(costs.probes, 3);
  EXPECT_EQ(costs.runs, 5);
  ASSERT_EQ(costs.in_run.size(), 2u);
  EXPECT_EQ(costs.in_run[0].device, "cpu.0");
  // The factors from the plans alone. Device 0 ran 370 us of the fork where its factor
  // predicts 330, its overlapped share 100 * 125/150 of the 300 predicted: x = 370/330 =
  // 1 + g * (250/900). Device 1: 150 against 120 with 125/150 of it overlapped.
  EXPECT_NEAR(costs.in_run[0].factor, 1.1, 1e-9);
  EXPECT_NEAR(costs.in_run[1].factor, 1.2, 1e-9);
  EXPECT_NEAR(costs.in_run[0].co_run_factor, 1 + (370.0 / 330 - 1) * 900 / 250, 1e-6);
  EXPECT_NEAR(costs.in_run[1].co_run_factor, 1 + (150.0 / 120 - 1) * 150 / 125, 1e-6);
  EXPECT_DOUBLE_EQ(costs.in_run[0].measured_us, 330 + 370);
  EXPECT_DOUBLE_EQ(costs.in_run[0].predicted_us, 300 + 300);
  // From the stem's start to the join's end: 110 + 25 + 150 + 25 + 110.
  EXPECT_DOUBLE_EQ(costs.multi_device_measured_us, 420);
  ASSERT_EQ(costs.sync.size(), 2u);
  EXPECT_EQ(costs.sync[1].from, "cpu.1");
  // Device 1 had idled 110 us for the stem, past the runtime's spin (parked), device 0 25 us
  // for branch b (spinning); 25 us each.
  for (const calibration::RunCosts::Sync& s : costs.sync) {
    EXPECT_EQ(s.window_us, executor::runtime::CoExecutionRuntime::kSpinNs / 1e3);
  }
  EXPECT_EQ(costs.sync[0].parked_waits, 5);
  EXPECT_NEAR(costs.sync[0].parked_us, 25, 1e-9);
  EXPECT_EQ(costs.sync[1].spinning_waits, 5);
  EXPECT_NEAR(costs.sync[1].spinning_us, 25, 1e-9);
  // Co-run factors over the overlapped shares and hand-offs together replay the plan as it ran.
  EXPECT_NEAR(costs.multi_device_hand_off_replay_us, 420, 1e-3);
  EXPECT_NEAR(costs.run_overhead_us, 50, 1e-9);
}

// A waiter that had not idled past the runtime's spin resumes at once; one that had parked
// pays the wake-up. Two plans on both devices, one with short subtasks and 3 us hand-offs, one
// with long subtasks and 40 us hand-offs, give each pair both costs.
TEST(FitRunCosts, HandOffsCostByHowLongTheWaiterIdled) {
  const model::Graph g = Chain3();
  const std::vector<ProbeResult> probes = {Probe(g, {0, 1, 0}, 50, 50, 3, 5),
                                           Probe(g, {0, 1, 0}, 300, 300, 40, 5)};
  const calibration::RunCosts costs = FitRunCosts(probes, kNames, kBothSync);
  ASSERT_EQ(costs.sync.size(), 2u);
  for (const calibration::RunCosts::Sync& s : costs.sync) {
    EXPECT_EQ(s.spinning_waits, 5) << s.from;
    EXPECT_EQ(s.parked_waits, 5) << s.from;
    EXPECT_NEAR(s.spinning_us, 3, 1e-9) << s.from;
    EXPECT_NEAR(s.parked_us, 40, 1e-9) << s.from;
  }
  EXPECT_NEAR(costs.multi_device_hand_off_replay_us, (150 + 6) + (900 + 80), 1e-6);
  // The one constant cannot do both: it over-predicts the short plan and under-predicts the
  // long one.
  const double c = costs.sync[0].us;
  EXPECT_GT(150 + 2 * c, 156);
  EXPECT_LT(900 + 2 * c, 980);
}

// Kernels that run slower together than alone are the co-run factor to a plan's prediction,
// and to the planners (whose predictions lack it) part of the sync cost: with nothing lost
// between subtasks but the two branches, side by side, each 20% over its prediction.
TEST(FitRunCosts, KernelsSlowerTogetherThanAloneAreTheCoRunFactorAndThePlannersSync) {
  const model::Graph g = Chain3();
  const model::Graph fork = Fork();
  const std::vector<ProbeResult> probes = {Probe(g, {0, 0, 0}, 100, 100, 0, 5),
                                           Probe(g, {1, 1, 1}, 100, 100, 0, 5),
                                           ForkProbe(fork, 100, 100, 120, 0, 5)};
  const calibration::RunCosts costs = FitRunCosts(probes, kNames, kBothSync);
  ASSERT_EQ(costs.in_run.size(), 2u);
  for (const calibration::RunCosts::InRun& r : costs.in_run) {
    EXPECT_NEAR(r.factor, 1, 1e-9);
    EXPECT_NEAR(r.co_run_factor, 1.2, 1e-9);
  }
  ASSERT_EQ(costs.sync.size(), 2u);
  // Replayed with the factors alone (100 us each) and c per edge: 100 + c + 100 + c + 100 = 320.
  EXPECT_NEAR(costs.sync[0].us, 10, 1e-3);
  EXPECT_NEAR(costs.multi_device_hand_off_replay_us, 320, 1e-3);
}

// Devices that take turns do not slow each other down: a chain over both devices, every
// subtask 20% over its prediction, overlaps nothing, so its loss cannot be the co-run factor
// (it stays 1) and a plan's prediction keeps each device's factor alone.
TEST(FitRunCosts, DevicesTakingTurnsLeaveTheCoRunFactorAtOne) {
  const model::Graph g = Chain3();
  const std::vector<ProbeResult> probes = {Probe(g, {0, 0, 0}, 100, 100, 0, 5),
                                           Probe(g, {1, 1, 1}, 100, 100, 0, 5),
                                           Probe(g, {0, 1, 0}, 100, 120, 0, 5)};
  const calibration::RunCosts costs = FitRunCosts(probes, kNames, kBothSync);
  ASSERT_EQ(costs.in_run.size(), 2u);
  for (const calibration::RunCosts::InRun& r : costs.in_run) {
    EXPECT_NEAR(r.factor, 1, 1e-9);
    EXPECT_EQ(r.co_run_factor, 1);
  }
}

// A run after an idle pause pays its device's cold start once, whatever its length: plans of
// 3, 9, 30 and 90 x 100 us predicted, each measured 1.1x plus 200 us, give a factor of 1.1 and
// a cold start of 200 us (with the factor alone the short plan would be 1.61x its prediction
// and the long one 1.08x).
TEST(FitRunCosts, AColdStartIsWhatEveryRunPaysOnceWhateverItsLength) {
  const model::Graph g = Chain3();
  std::vector<ProbeResult> probes;
  for (const double op_us : {100.0, 300.0, 1000.0, 3000.0}) {
    probes.push_back(Probe(g, {0, 0, 0}, op_us, 1.1 * op_us + 200.0 / 3, 0, 3));
  }
  const calibration::RunCosts costs = FitRunCosts(probes, kNames, kBothSync);
  ASSERT_EQ(costs.in_run.size(), 1u);
  EXPECT_NEAR(costs.in_run[0].factor, 1.1, 0.002);
  EXPECT_NEAR(costs.in_run[0].cold_us, 200, 3);
  EXPECT_NEAR(costs.PerRunUs(), costs.run_overhead_us + costs.in_run[0].cold_us, 1e-9);
}

// A cold start shows only between plans of different lengths: two plans, or plans of about one
// length, leave it 0 and the factor the geometric mean of the plans' ratios.
TEST(FitRunCosts, NoColdStartWithoutPlansOfDifferentLengths) {
  const model::Graph g = Chain3();
  const std::vector<ProbeResult> two = {Probe(g, {0, 0, 0}, 100, 150, 0, 1),
                                        Probe(g, {0, 0, 0}, 3000, 3300, 0, 1)};
  calibration::RunCosts costs = FitRunCosts(two, kNames, kBothSync);
  ASSERT_EQ(costs.in_run.size(), 1u);
  EXPECT_EQ(costs.in_run[0].cold_us, 0);
  EXPECT_NEAR(costs.in_run[0].factor, std::sqrt(1.5 * 1.1), 1e-9);
  const std::vector<ProbeResult> alike = {Probe(g, {0, 0, 0}, 100, 150, 0, 1),
                                          Probe(g, {0, 0, 0}, 120, 160, 0, 1),
                                          Probe(g, {0, 0, 0}, 150, 170, 0, 1)};
  costs = FitRunCosts(alike, kNames, kBothSync);
  EXPECT_EQ(costs.in_run[0].cold_us, 0);
}

// Each plan counts alike: a short plan that lost 20% between subtasks and a long one that lost
// nothing meet at the cost that leaves them equally far off, not at the long one's.
TEST(FitRunCosts, SyncBalancesThePlansRelativeErrors) {
  const model::Graph g = Chain3();
  // Short: 3 x 50 us with 15 us lost at each of two hand-offs (span 180). Long: 3 x 1000 us.
  const std::vector<ProbeResult> probes = {Probe(g, {0, 1, 0}, 50, 50, 15, 1),
                                           Probe(g, {0, 1, 0}, 1000, 1000, 0, 1)};
  const calibration::RunCosts costs = FitRunCosts(probes, kNames, kBothSync);
  ASSERT_EQ(costs.sync.size(), 2u);
  // (150 + 2c) / 180 * (3000 + 2c) / 3000 = 1.
  const double c = costs.sync[0].us;
  EXPECT_NEAR((150 + 2 * c) / 180 * (3000 + 2 * c) / 3000, 1.0, 1e-9);
  EXPECT_GT(c, 5);
  EXPECT_LT(c, 15);
}

TEST(FitRunCosts, NothingLostBetweenSubtasksGivesNoSyncAndSingleDevicesNone) {
  const model::Graph g = Chain3();
  const std::vector<ProbeResult> ideal = {Probe(g, {0, 1, 0}, 100, 100, 0, 2)};
  const calibration::RunCosts costs = FitRunCosts(ideal, kNames, kBothSync);
  ASSERT_EQ(costs.sync.size(), 2u);
  EXPECT_EQ(costs.sync[0].us, 0);
  const std::vector<ProbeResult> alone = {Probe(g, {0, 0, 0}, 100, 100, 10, 2)};
  EXPECT_TRUE(FitRunCosts(alone, kNames, kBothSync).sync.empty());
  // A device outside sync_devices gets none.
  const std::vector<bool> only_first = {true, false};
  EXPECT_TRUE(FitRunCosts(ideal, kNames, only_first).sync.empty());
}

// A subtask that starts after its device's previous one with nothing from another device
// holding it waited a gap: the multi-device probes' gaps per device over how many there were,
// apart for those with a sync kernel between. A wait for another device's output is a
// hand-off, not a gap; a device's first subtask has none; plans on one device do not count
// (a lone GPU's queue runs no sync kernels, and its gaps were a fifth of a shared one's).
TEST(FitRunCosts, TheDelayBetweenSubtasksOfOneDeviceIsItsGap) {
  const model::Graph g = Chain3();
  const std::vector<ProbeResult> probes = {
      Probe(g, {0, 0, 1}, 100, 100, 10, 3),  // a gap of 10 us on device 0 in every run
      Probe(g, {1, 1, 0}, 100, 100, 4, 3),   // one of 4 us on device 1
      Probe(g, {0, 1, 0}, 100, 100, 30, 3),  // hand-offs only
      Probe(g, {0, 0, 0}, 100, 100, 50, 3),  // alone: its gaps are not the fit's
  };
  const RunBreakdown alone = MedianBreakdown(probes[3].breakdowns);
  ASSERT_EQ(alone.gaps.size(), 2u);
  EXPECT_EQ(alone.gaps[0][0], 2);
  EXPECT_EQ(alone.gaps[0][1], 0);
  EXPECT_DOUBLE_EQ(alone.gap_us[0][0], 100);
  const RunBreakdown split = MedianBreakdown(probes[2].breakdowns);
  for (const auto& gaps : split.gaps) EXPECT_EQ(gaps[0] + gaps[1], 0);
  EXPECT_EQ(split.cross_delays.size(), 2u * 3);
  // In the fork, branch a follows the stem on device 0, which fed branch b on device 1: a gap
  // with a sync kernel between (the stem's signal), here 0 us. The join waited for device 1: a
  // hand-off, no gap.
  const model::Graph fork_graph = Fork();
  const RunBreakdown fork = MedianBreakdown(ForkProbe(fork_graph, 100, 110, 150, 25, 1).breakdowns);
  EXPECT_EQ(fork.gaps[0][1], 1);
  EXPECT_EQ(fork.gaps[0][0], 0);
  EXPECT_EQ(fork.gap_us[0][1], 0);
  const calibration::RunCosts costs = FitRunCosts(probes, kNames, kBothSync);
  ASSERT_EQ(costs.in_run.size(), 2u);
  EXPECT_NEAR(costs.in_run[0].gap_us, 10, 1e-9);
  EXPECT_EQ(costs.in_run[0].gaps, 1);
  EXPECT_NEAR(costs.in_run[1].gap_us, 4, 1e-9);
  EXPECT_EQ(costs.in_run[0].synced_gaps, 0);
  // From the first start to the last end: 320, 308 and 100 + 30 + 100 + 30 + 100.
  EXPECT_NEAR(costs.multi_device_measured_us, 320 + 308 + 360, 1e-9);
  // The replay adds a device's gap after its first subtask only: device 0's second op at 110,
  // device 1's first (after a hand-off costing 0 here) at 210.
  const std::vector<std::array<double, 2>> gap_us = {{10, 99}, {4, 99}};
  EXPECT_NEAR(ReplayUs(
                  g, probes[0].timings[0], [](int, int, double) { return 0.0; }, gap_us),
              310, 1e-9);
}

// Chain3 with op 1 split along input channels in two slices, one per device: op 0 on device 0
// (measured 110 us, predicted 100), the slices side by side (device 0's measured 120, device 1's
// `last_slice_us`, ending last), op 2 on device 1 (measured 120). Every subtask is predicted 100.
ProbeResult CinProbe(const model::Graph& graph, double last_slice_us, int runs) {
  using model::SplitAxis;
  scheduler::Schedule schedule(3, 2);
  schedule.Add({.op = 0, .device = 0, .start_us = 0, .end_us = 100});
  schedule.Add({.op = 1,
                .slot = 0,
                .device = 0,
                .axis = SplitAxis::kInputChannels,
                .begin = 0,
                .end = 1,
                .start_us = 100,
                .end_us = 200});
  schedule.Add({.op = 1,
                .slot = 1,
                .device = 1,
                .axis = SplitAxis::kInputChannels,
                .begin = 1,
                .end = 2,
                .start_us = 100,
                .end_us = 200});
  schedule.Add({.op = 2, .device = 1, .start_us = 200, .end_us = 300});
  auto at = [](double us) { return static_cast<int64_t>(us * 1000); };
  const double op2_start = 110 + last_slice_us;
  const std::vector<executor::runtime::SubtaskTiming> timings = {
      {.device = 0, .step = {0, executor::WorkSlice::Whole()}, .start_ns = 0, .end_ns = at(110)},
      {.device = 0,
       .step = {1, {SplitAxis::kInputChannels, 0, 1}},
       .start_ns = at(110),
       .end_ns = at(230)},
      {.device = 1,
       .step = {1, {SplitAxis::kInputChannels, 1, 2}},
       .start_ns = at(110),
       .end_ns = at(op2_start)},
      {.device = 1,
       .step = {2, executor::WorkSlice::Whole()},
       .start_ns = at(op2_start),
       .end_ns = at(op2_start + 120)}};
  ProbeResult r;
  r.graph = &graph;
  r.schedule = schedule;
  r.devices_used = 2;
  for (int i = 0; i < runs; ++i) {
    r.timings.push_back(timings);
    r.breakdowns.push_back(BreakDownRun(graph, schedule, timings, op2_start + 170));
  }
  return r;
}

// The last cin slice adds the other's partial sum: what it took beyond the speed of the op's
// other slice in the run (1.2x), per element of op 1's 4x4x2 output, is the device's
// partial-sum cost, and the device's in-run factor is fitted to what its subtasks took beyond it.
TEST(FitRunCosts, TheLastCinSliceBeyondItsOthersSpeedIsThePartialSumCost) {
  const model::Graph g = Chain3();
  // 64 us beyond 1.2 x 100 for 32 elements: 2000 ns each.
  const std::vector<ProbeResult> probes = {CinProbe(g, 184, 5)};
  const calibration::RunCosts costs = FitRunCosts(probes, kNames, kBothSync);
  ASSERT_EQ(costs.in_run.size(), 2u);
  EXPECT_EQ(costs.in_run[0].combines, 0);
  EXPECT_EQ(costs.in_run[0].partial_sum_ns, 0);
  EXPECT_EQ(costs.in_run[1].combines, 5);
  EXPECT_NEAR(costs.in_run[1].partial_sum_ns, 2000, 1e-6);
  // Device 1 ran 304 us where it was predicted 200 plus the 64 us combine.
  EXPECT_NEAR(costs.in_run[1].factor, 304.0 / 264, 1e-9);
  // A last slice faster than the other costs nothing; too few combines, no cost.
  const std::vector<ProbeResult> fast = {CinProbe(g, 100, 5)};
  EXPECT_EQ(FitRunCosts(fast, kNames, kBothSync).in_run[1].partial_sum_ns, 0);
  const std::vector<ProbeResult> four = {CinProbe(g, 184, 4)};
  const calibration::RunCosts few = FitRunCosts(four, kNames, kBothSync);
  EXPECT_EQ(few.in_run[1].combines, 4);
  EXPECT_EQ(few.in_run[1].partial_sum_ns, 0);
  EXPECT_NEAR(few.in_run[1].factor, 304.0 / 200, 1e-9);
}

TEST(FitRunCosts, ASyncBeyondTheCapStopsThere) {
  const model::Graph g = Chain3();
  const std::vector<ProbeResult> slow = {Probe(g, {0, 1, 0}, 100, 100, 5000, 1)};
  const calibration::RunCosts costs = FitRunCosts(slow, kNames, kBothSync);
  ASSERT_FALSE(costs.sync.empty());
  EXPECT_EQ(costs.sync[0].us, kMaxSyncUs);
}

}  // namespace
}  // namespace psched::calibration
