#include "scheduler/retime.h"

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

}  // namespace
}  // namespace psched::scheduler
