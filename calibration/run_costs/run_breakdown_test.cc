#include "calibration/run_costs/run_breakdown.h"

#include "executor/testing/graph_builder.h"
#include "gtest/gtest.h"

namespace psched::calibration {
namespace {

using model::OpKind;

// x -> a -> b -> c, each 100 us. Planned a, c on device 0 and b on device 1, back to back; run
// with b starting 40 us after a ended and c 20 us after b.
struct Chain {
  model::Graph graph;
  scheduler::Schedule schedule{3, 2};
  std::vector<executor::runtime::SubtaskTiming> timings;
  Chain() {
    executor::testing::GraphBuilder b;
    auto x = b.AddInput({4, 4, 2});
    auto a = b.AddOp(OpKind::kActivation, {x}, {4, 4, 2});
    auto bb = b.AddOp(OpKind::kActivation, {a}, {4, 4, 2});
    b.MarkOutput(b.AddOp(OpKind::kActivation, {bb}, {4, 4, 2}));
    graph = b.Build();
    const int device[] = {0, 1, 0};
    const double start_us[] = {5, 145, 265};
    for (model::OpId op = 0; op < 3; ++op) {
      schedule.Add(
          {.op = op, .device = device[op], .start_us = 100.0 * op, .end_us = 100.0 * (op + 1)});
      timings.push_back({.device = device[op],
                         .step = {op, executor::WorkSlice::Whole()},
                         .start_ns = static_cast<int64_t>(start_us[op] * 1000),
                         .end_ns = static_cast<int64_t>((start_us[op] + 100) * 1000)});
    }
  }
};

TEST(RunBreakdown, SplitsKernelsDelaysAndFixedCosts) {
  const Chain c;
  const RunBreakdown b = BreakDownRun(c.graph, c.schedule, c.timings, /*wall_us=*/400);
  EXPECT_DOUBLE_EQ(b.predicted_us, 300);
  EXPECT_DOUBLE_EQ(b.replay_us, 300);
  EXPECT_DOUBLE_EQ(b.first_start_us, 5);
  EXPECT_DOUBLE_EQ(b.trace_end_us, 365);
  EXPECT_DOUBLE_EQ(b.span_us(), 360);
  EXPECT_DOUBLE_EQ(b.wall_us, 400);
  ASSERT_EQ(b.cross_delays.size(), 2u);
  EXPECT_DOUBLE_EQ(b.cross_delays[0].delay_us, 40);
  EXPECT_DOUBLE_EQ(b.cross_delays[1].delay_us, 20);
  EXPECT_EQ(b.cross_delays[0].from_device, 0);
  EXPECT_EQ(b.cross_delays[0].to_device, 1);
  EXPECT_EQ(b.cross_delays[1].from_device, 1);
  EXPECT_EQ(b.cross_delays[1].to_device, 0);
  // Device 1 idle from 0 until a ended at 105; device 0 from a's end until b's at 245.
  EXPECT_DOUBLE_EQ(b.cross_delays[0].idle_us, 105);
  EXPECT_DOUBLE_EQ(b.cross_delays[1].idle_us, 140);
  EXPECT_DOUBLE_EQ(b.local_delay_us, 5);  // the first subtask's start
  EXPECT_DOUBLE_EQ(b.measured_kernel_us[0], 200);
  EXPECT_DOUBLE_EQ(b.predicted_kernel_us[1], 100);
  // The devices took turns: nothing ran beside another device's work.
  EXPECT_EQ(b.predicted_overlapped_us, (std::vector<double>{0, 0}));
  EXPECT_DOUBLE_EQ(b.measured_whole_us, 300);
  EXPECT_DOUBLE_EQ(b.measured_slice_us, 0);
  // b and c read what the other device wrote.
  EXPECT_DOUBLE_EQ(b.measured_by_locality[2], 200);
}

TEST(RunBreakdown, ReplayAddsTheSyncCostOnEdgesBetweenDevicesOnly) {
  const Chain c;
  EXPECT_DOUBLE_EQ(ReplayUs(c.graph, c.timings, [](int, int, double) { return 30.0; }), 360);
  EXPECT_DOUBLE_EQ(
      ReplayUs(c.graph, c.timings, [](int from, int, double) { return from == 0 ? 10.0 : 0.0; }),
      310);
}

TEST(RunBreakdown, MedianIsFieldByFieldAndPoolsDelays) {
  const Chain c;
  std::vector<RunBreakdown> runs;
  for (double wall : {400.0, 500.0, 450.0}) {
    runs.push_back(BreakDownRun(c.graph, c.schedule, c.timings, wall));
  }
  const RunBreakdown m = MedianBreakdown(runs);
  EXPECT_DOUBLE_EQ(m.wall_us, 450);
  EXPECT_EQ(m.cross_delays.size(), 6u);
  EXPECT_DOUBLE_EQ(m.measured_kernel_us[0], 200);
}

}  // namespace
}  // namespace psched::calibration
