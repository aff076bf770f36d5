#include "scheduler/retime.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "predictor/profiles.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/test_problems.h"

namespace psched::scheduler {
namespace {

using ::testing::HasSubstr;

Schedule Heft(const Problem& problem, std::vector<PartitionPlan> plans = {}) {
  plans.resize(static_cast<size_t>(problem.num_ops()));
  auto heft = *MakeListScheduler("heft");
  absl::StatusOr<Schedule> schedule = heft->Schedule(problem, plans);
  EXPECT_TRUE(schedule.ok()) << schedule.status();
  return *std::move(schedule);
}

TEST(RetimeScheduleTest, UnderItsOwnProblemNothingStartsLater) {
  const Problem p = testing::TopcuogluExample();
  const Schedule planned = Heft(p);
  absl::StatusOr<Schedule> retimed = RetimeSchedule(p, planned);
  ASSERT_TRUE(retimed.ok()) << retimed.status();
  ASSERT_TRUE(ValidateSchedule(p, *retimed).ok()) << ValidateSchedule(p, *retimed);
  // HEFT's schedule of the example has makespan 80 (the paper's figure).
  EXPECT_DOUBLE_EQ(planned.makespan_us(), 80);
  EXPECT_LE(retimed->makespan_us(), planned.makespan_us());
  ASSERT_EQ(retimed->subtasks().size(), planned.subtasks().size());
  for (const ScheduledSubtask& r : retimed->subtasks()) {
    for (const ScheduledSubtask& s : planned.subtasks()) {
      if (s.op != r.op || s.slot != r.slot) continue;
      EXPECT_EQ(r.device, s.device) << "op " << s.op;
      EXPECT_LE(r.start_us, s.start_us + 1e-9) << "op " << s.op;
    }
  }
}

TEST(RetimeScheduleTest, TwiceTheCostsAndTransfersTwiceTheMakespanSameOrder) {
  const std::vector<std::vector<double>> cost{{4, 9}, {7, 2}, {5, 6}, {1, 3}, {3, 3}};
  const std::vector<TaskGraph::Edge> edges{{0, 1, 3}, {0, 2, 1}, {1, 3, 2}, {2, 3, 4}, {3, 4, 1}};
  std::vector<std::vector<double>> cost2 = cost;
  for (auto& row : cost2) {
    for (double& c : row) c *= 2;
  }
  std::vector<TaskGraph::Edge> edges2 = edges;
  for (auto& e : edges2) e.transfer_us *= 2;
  const Problem p = testing::TaskProblem(cost, edges, /*separate_domains=*/true);
  const Problem p2 = testing::TaskProblem(cost2, edges2, /*separate_domains=*/true);
  const Schedule planned = Heft(p);
  absl::StatusOr<Schedule> same = RetimeSchedule(p, planned);
  absl::StatusOr<Schedule> doubled = RetimeSchedule(p2, planned);
  ASSERT_TRUE(same.ok() && doubled.ok());
  ASSERT_TRUE(ValidateSchedule(p2, *doubled).ok()) << ValidateSchedule(p2, *doubled);
  EXPECT_DOUBLE_EQ(doubled->makespan_us(), 2 * same->makespan_us());
  // The other problem's own HEFT plan may be better, never worse than planning for p.
  EXPECT_LE(Heft(p2).makespan_us(), doubled->makespan_us() + 1e-9);
}

TEST(RetimeScheduleTest, APartitionedPlanMovesToAnotherPhone) {
  const model::Graph g = testing::ConvForkJoin(2);
  const predictor::Profile pixel5 = *predictor::LoadProfile("pixel5");
  const predictor::Profile oneplus11 = *predictor::LoadProfile("oneplus11");
  const Problem on_pixel5 = *Problem::FromGraph(g, pixel5.platform, *pixel5.model);
  const Problem on_oneplus11 = *Problem::FromGraph(g, oneplus11.platform, *oneplus11.model);
  std::vector<PartitionPlan> plans(static_cast<size_t>(on_pixel5.num_ops()));
  plans[0] = {model::SplitAxis::kOutputChannels, {40, 24}};
  const Schedule planned = Heft(on_pixel5, plans);
  absl::StatusOr<Schedule> moved = RetimeSchedule(on_oneplus11, planned);
  ASSERT_TRUE(moved.ok()) << moved.status();
  ASSERT_TRUE(ValidateSchedule(on_oneplus11, *moved).ok())
      << ValidateSchedule(on_oneplus11, *moved);
  EXPECT_EQ(moved->plan(0).work, (std::vector<int64_t>{40, 24}));
  // Different phones, different latencies: the fixed plan takes another time there.
  EXPECT_NE(moved->makespan_us(), planned.makespan_us());
}

TEST(RetimeScheduleTest, AScheduleOfAnotherShapeIsRefusedWithBothSizes) {
  const Problem three = testing::TaskProblem({{1, 1}, {1, 1}, {1, 1}}, {{0, 1, 0}, {1, 2, 0}});
  const Problem two = testing::TaskProblem({{1, 1}, {1, 1}}, {{0, 1, 0}});
  absl::StatusOr<Schedule> r = RetimeSchedule(two, Heft(three));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("3 ops on 2 devices; the problem 2 ops"));
}

// Every op 100 us on either of two devices in one memory domain; a hand-off costs 30 us to
// the planners, and in a run 2 us when its waiter had idled under 80 us, 60 us after; device
// 1's kernels run 10% slower while device 0 runs too.
class WaitModel final : public predictor::LatencyModel {
 public:
  int num_devices() const override { return 2; }
  double PredictUs(const predictor::OpConfig&, int) const override { return 100; }
  double SyncUs(int, int) const override { return 30; }
  double HandOffUs(int, int, double idle_us) const override { return idle_us < 80 ? 2 : 60; }
  double CoRunFactor(int device) const override { return device == 1 ? 1.1 : 1.0; }
  std::string Version() const override { return "wait"; }
};

platform::Platform TwoDevices() {
  platform::Platform p;
  p.name = "two";
  for (const char* name : {"cpu.0", "cpu.1"}) {
    platform::DeviceSpec device;
    device.name = name;
    device.kind = platform::DeviceKind::kCpu;
    p.devices.push_back(device);
  }
  return p;
}

// ConvForkJoin(2) (stem, two branches, concat, 1x1 conv) with `devices[op]` for each op, timed
// as the planners time it under `problem`.
Schedule Placed(const Problem& problem, const std::vector<int>& devices) {
  Schedule planned(problem.num_ops(), problem.num_devices());
  for (OpId op = 0; op < problem.num_ops(); ++op) {
    planned.Add({.op = op,
                 .device = devices[static_cast<size_t>(op)],
                 .start_us = 100.0 * op,
                 .end_us = 100.0 * op + 1});
  }
  absl::StatusOr<Schedule> timed = RetimeSchedule(problem, planned);
  EXPECT_TRUE(timed.ok()) << timed.status();
  return *std::move(timed);
}

TEST(RetimeByWaitsTest, HandOffsCostByTheWaitersIdleTimeAndKernelsBesideOthersTheCoRunFactor) {
  const model::Graph g = testing::ConvForkJoin(2);
  const WaitModel model;
  absl::StatusOr<Problem> p = Problem::FromGraph(g, TwoDevices(), model);
  ASSERT_TRUE(p.ok()) << p.status();
  // The stem, branch a, the concat and the last conv on device 0, branch b on device 1.
  const Schedule planned = Placed(*p, {0, 0, 1, 0, 0});
  // The planners: branch b at 100 + 30, the concat at max(200, 230 + 30), the end at 460.
  EXPECT_DOUBLE_EQ(planned.makespan_us(), 460);
  absl::StatusOr<Schedule> run = RetimeByWaits(*p, planned);
  ASSERT_TRUE(run.ok()) << run.status();
  // Device 1 idled 100 us for the stem (parked: 60 us) and ran branch b from 160, its first 40
  // us beside branch a (device 0, 100-200): 100 * (1 + 0.1 * 40 / d) = d, d = 50 + sqrt(2900)
  // = 103.85. Device 0 idled 63.85 us for it (spinning: 2 us): the concat from 265.85, alone
  // like the last conv, so 100 us each.
  const double b = 50 + std::sqrt(2900.0);
  std::vector<double> start(5), end(5);
  for (const ScheduledSubtask& s : run->subtasks()) {
    start[static_cast<size_t>(s.op)] = s.start_us;
    end[static_cast<size_t>(s.op)] = s.end_us;
  }
  EXPECT_DOUBLE_EQ(start[2], 160);
  EXPECT_NEAR(end[2], 160 + b, 0.01);
  EXPECT_DOUBLE_EQ(start[1], 100);
  EXPECT_DOUBLE_EQ(end[1], 200);  // device 0 has no co-run factor
  EXPECT_NEAR(start[3], 162 + b, 0.01);
  EXPECT_NEAR(run->makespan_us(), 362 + b, 0.01);
  // An input that came while its device was still busy costs nothing: branch b on device 1
  // with the concat there too finds branch a (device 0, done at 200) waiting when b ends.
  absl::StatusOr<Schedule> late = RetimeByWaits(*p, Placed(*p, {0, 0, 1, 1, 1}));
  ASSERT_TRUE(late.ok());
  // b as above, then the concat and the last conv alone on device 1, 100 us each.
  EXPECT_NEAR(late->makespan_us(), 360 + b, 0.01);
  // On one device alone: no hand-off and no co-run factor.
  absl::StatusOr<Schedule> alone = RetimeByWaits(*p, Placed(*p, {1, 1, 1, 1, 1}));
  ASSERT_TRUE(alone.ok());
  EXPECT_DOUBLE_EQ(alone->makespan_us(), 500);
}

// A conv slice along input channels takes 60 us on device 1 and 100 us elsewhere, as does every
// other op; an add of ConvForkJoin's last conv output (28 x 28 x 64) takes 7 us, an add of any
// other shape 999. A hand-off costs 10 us, co-running nothing.
class CinModel final : public predictor::LatencyModel {
 public:
  int num_devices() const override { return 2; }
  double PredictUs(const predictor::OpConfig& config, int device) const override {
    if (config.kind == model::OpKind::kAdd) {
      return config.inputs.size() == 2 && config.output == model::Shape{28, 28, 64} ? 7 : 999;
    }
    return config.accumulate && device == 1 ? 60 : 100;
  }
  double SyncUs(int, int) const override { return 0; }
  double HandOffUs(int, int, double) const override { return 10; }
  std::string Version() const override { return "cin"; }
};

// ConvForkJoin(2) on device 0 but its last conv, split along input channels 64 + 64 with the
// second slice on device 1, planned to start at `second_start` (the order Retime places them in).
Schedule CinSplit(const Problem& problem, double second_start) {
  Schedule planned(problem.num_ops(), problem.num_devices());
  for (OpId op = 0; op < 4; ++op) {
    planned.Add({.op = op, .device = 0, .start_us = 100.0 * op, .end_us = 100.0 * op + 100});
  }
  constexpr model::SplitAxis kCin = model::SplitAxis::kInputChannels;
  planned.SetPlan(4, {.axis = kCin, .work = {64, 64}});
  planned.Add({.op = 4,
               .slot = 0,
               .device = 0,
               .axis = kCin,
               .begin = 0,
               .end = 64,
               .start_us = 400,
               .end_us = 500});
  planned.Add({.op = 4,
               .slot = 1,
               .device = 1,
               .axis = kCin,
               .begin = 64,
               .end = 128,
               .start_us = second_start,
               .end_us = second_start + 60});
  return planned;
}

TEST(RetimeByWaitsTest, ACinSplitOpEndsWithItsPartialSumsAddedOnTheLastSlicesDevice) {
  const model::Graph g = testing::ConvForkJoin(2);
  const CinModel model;
  absl::StatusOr<Problem> p = Problem::FromGraph(g, TwoDevices(), model);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->WorkSize(4, model::SplitAxis::kInputChannels), 128);
  // One partial sum to add: one add of the output, with the conv's activation.
  EXPECT_DOUBLE_EQ(p->CombineUs(4, 0, 1), 7);
  EXPECT_DOUBLE_EQ(p->CombineUs(4, 1, 2), 14);
  EXPECT_DOUBLE_EQ(p->CombineUs(4, 1, 0), 0);
  auto ends = [](const Schedule& s) {
    std::vector<double> end(2);
    for (const ScheduledSubtask& t : s.subtasks()) {
      if (t.op == 4) end[static_cast<size_t>(t.slot)] = t.end_us;
    }
    return end;
  };
  // Device 1's slice placed first: it waits for the concat (400, hand-off 10) and ends at 470;
  // device 0's, placed last, runs 400-500 and then adds the partial sum: 507.
  absl::StatusOr<Schedule> first = RetimeByWaits(*p, CinSplit(*p, 399));
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_THAT(ends(*first), ::testing::ElementsAre(507, 470));
  EXPECT_DOUBLE_EQ(first->makespan_us(), 507);
  // Device 1's slice placed last: it ends at 470, before device 0's, and is held until 500 to
  // add the sum then (the runtime would add it on device 0; the op ends at 507 either way).
  absl::StatusOr<Schedule> last = RetimeByWaits(*p, CinSplit(*p, 401));
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_THAT(ends(*last), ::testing::ElementsAre(500, 507));
  EXPECT_DOUBLE_EQ(last->makespan_us(), 507);
  // The planners' timing has no combine: device 1's slice 400-460 (no sync cost), device 0's
  // 400-500.
  absl::StatusOr<Schedule> planned = RetimeSchedule(*p, CinSplit(*p, 399));
  ASSERT_TRUE(planned.ok()) << planned.status();
  EXPECT_THAT(ends(*planned), ::testing::ElementsAre(500, 460));
  // A task graph has no model to predict the adds with.
  EXPECT_DOUBLE_EQ(testing::TopcuogluExample().CombineUs(0, 0, 1), 0);
}

// A model that measured what adding partial sums costs on a device (PartialSumNs) is charged that
// per element of the output and partial sum; the other device keeps the element-wise add.
TEST(RetimeByWaitsTest, AMeasuredPartialSumCostIsChargedPerElement) {
  class MeasuredCinModel final : public predictor::LatencyModel {
   public:
    int num_devices() const override { return 2; }
    double PredictUs(const predictor::OpConfig& config, int device) const override {
      return inner_.PredictUs(config, device);
    }
    double HandOffUs(int, int, double) const override { return 10; }
    double PartialSumNs(int device) const override { return device == 0 ? 2.0 : 0.0; }
    std::string Version() const override { return "measured-cin"; }

   private:
    CinModel inner_;
  };
  const model::Graph g = testing::ConvForkJoin(2);
  const MeasuredCinModel model;
  absl::StatusOr<Problem> p = Problem::FromGraph(g, TwoDevices(), model);
  ASSERT_TRUE(p.ok()) << p.status();
  // The output is 28 x 28 x 64 = 50176 elements: 100.352 us per partial sum at 2 ns.
  EXPECT_DOUBLE_EQ(p->CombineUs(4, 0, 1), 100.352);
  EXPECT_DOUBLE_EQ(p->CombineUs(4, 0, 2), 200.704);
  EXPECT_DOUBLE_EQ(p->CombineUs(4, 1, 1), 7);
  // Device 0's slice, placed last, runs 400-500 and adds the partial sum after it.
  absl::StatusOr<Schedule> retimed = RetimeByWaits(*p, CinSplit(*p, 399));
  ASSERT_TRUE(retimed.ok()) << retimed.status();
  EXPECT_DOUBLE_EQ(retimed->makespan_us(), 600.352);
}

// A device whose subtasks wait 5 us after its previous one, 20 us with a sync kernel between
// (an input from the other device, or the previous subtask feeding it; SubtaskGapUs): in a plan
// on both devices every subtask but its first starts that much later when nothing from another
// device holds it; one held by a later input from the other device pays the hand-off.
TEST(RetimeByWaitsTest, EachSubtaskAfterADevicesFirstWaitsItsGap) {
  class GapModel final : public predictor::LatencyModel {
   public:
    int num_devices() const override { return 2; }
    double PredictUs(const predictor::OpConfig&, int) const override { return 100; }
    double SyncUs(int, int) const override { return 30; }
    double HandOffUs(int, int, double) const override { return 2; }
    double SubtaskGapUs(int device, bool synced) const override {
      return device != 0 ? 0 : synced ? 20 : 5;
    }
    std::string Version() const override { return "gap"; }
  };
  const model::Graph g = testing::ConvForkJoin(2);
  const GapModel model;
  absl::StatusOr<Problem> p = Problem::FromGraph(g, TwoDevices(), model);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_DOUBLE_EQ(p->SubtaskGapUs(0, false), 5);
  // All on device 0: no gaps (a plan on one device runs no sync kernels; the fit measures the
  // gaps of plans on two devices or more).
  absl::StatusOr<Schedule> alone = RetimeByWaits(*p, Placed(*p, {0, 0, 0, 0, 0}));
  ASSERT_TRUE(alone.ok()) << alone.status();
  EXPECT_DOUBLE_EQ(alone->makespan_us(), 500);
  // Branch b on device 1 (no gap) starts at 100 + 2 (the hand-off after a wait), branch a on
  // device 0 at 100 + 20 (the stem before it fed device 1). The concat, with branch b's output
  // from device 1, starts 20 us after branch a ends (b ended at 202, while device 0 was still
  // busy: no hand-off), at 240; the last conv 5 us after it, at 345, ending at 445.
  absl::StatusOr<Schedule> split = RetimeByWaits(*p, Placed(*p, {0, 0, 1, 0, 0}));
  ASSERT_TRUE(split.ok()) << split.status();
  std::vector<double> start(5);
  for (const ScheduledSubtask& s : split->subtasks()) start[static_cast<size_t>(s.op)] = s.start_us;
  EXPECT_DOUBLE_EQ(start[0], 0);
  EXPECT_DOUBLE_EQ(start[1], 120);
  EXPECT_DOUBLE_EQ(start[2], 102);
  EXPECT_DOUBLE_EQ(start[3], 240);
  EXPECT_DOUBLE_EQ(split->makespan_us(), 445);
}

// Without a latency model (a task graph: hand-offs cost SyncUs, here none, and co-run factors
// are 1) it is RetimeSchedule.
TEST(RetimeByWaitsTest, WithoutThemItIsTheRetime) {
  const Problem p = testing::TopcuogluExample();
  const Schedule planned = Heft(p);
  absl::StatusOr<Schedule> by_waits = RetimeByWaits(p, planned);
  absl::StatusOr<Schedule> retimed = RetimeSchedule(p, planned);
  ASSERT_TRUE(by_waits.ok() && retimed.ok());
  EXPECT_DOUBLE_EQ(by_waits->makespan_us(), retimed->makespan_us());
  for (size_t i = 0; i < retimed->subtasks().size(); ++i) {
    EXPECT_DOUBLE_EQ(by_waits->subtasks()[i].start_us, retimed->subtasks()[i].start_us);
  }
  const Problem three = testing::TaskProblem({{1, 1}, {1, 1}, {1, 1}}, {{0, 1, 0}, {1, 2, 0}});
  const Problem two = testing::TaskProblem({{1, 1}, {1, 1}}, {{0, 1, 0}});
  EXPECT_EQ(RetimeByWaits(two, Heft(three)).status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psched::scheduler
