#include "scheduler/list_scheduler.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "scheduler/test_problems.h"

namespace psched::scheduler {
namespace {

using ::testing::HasSubstr;

TEST(HeftTest, TopcuogluExampleHasMakespan80) {
  const Problem problem = testing::TopcuogluExample();
  auto heft = MakeListScheduler("heft");
  ASSERT_TRUE(heft.ok()) << heft.status();
  absl::StatusOr<Schedule> s = (*heft)->Schedule(problem);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(ValidateSchedule(problem, *s).ok()) << ValidateSchedule(problem, *s);
  EXPECT_DOUBLE_EQ(s->makespan_us(), 80.0);
  // The paper's schedule: task 1 on P3 at 0-9, task 10 on P2 at 73-80.
  for (const ScheduledSubtask& t : s->subtasks()) {
    if (t.op == 0) {
      EXPECT_EQ(t.device, 2);
      EXPECT_DOUBLE_EQ(t.end_us, 9.0);
    }
    if (t.op == 9) {
      EXPECT_EQ(t.device, 1);
      EXPECT_DOUBLE_EQ(t.start_us, 73.0);
    }
  }
}

TEST(SingleDeviceTest, SumsCostsOnOneDevice) {
  const Problem problem = testing::TopcuogluExample();
  auto single = MakeListScheduler("single:d1");
  ASSERT_TRUE(single.ok());
  absl::StatusOr<Schedule> s = (*single)->Schedule(problem);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(ValidateSchedule(problem, *s).ok());
  EXPECT_DOUBLE_EQ(s->makespan_us(), 16 + 19 + 13 + 8 + 13 + 16 + 15 + 11 + 12 + 7);
}

TEST(SingleDeviceTest, UnknownDeviceIsAClearError) {
  const Problem problem = testing::TopcuogluExample();
  auto single = MakeListScheduler("single:npu");
  ASSERT_TRUE(single.ok());
  absl::StatusOr<Schedule> s = (*single)->Schedule(problem);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("no device 'npu'"));
  EXPECT_THAT(s.status().message(), HasSubstr("d0, d1, d2"));
}

TEST(ListSchedulerTest, UnknownNameListsKnownOnes) {
  auto s = MakeListScheduler("fifo");
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("heft"));
  EXPECT_FALSE(MakeListScheduler("single:").ok());
}

TEST(ListSchedulerTest, WrongPlanCountIsRejected) {
  const Problem problem = testing::TopcuogluExample();
  auto heft = MakeListScheduler("heft");
  std::vector<PartitionPlan> plans(3);
  auto s = (*heft)->Schedule(problem, plans);
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("3 partition plans for 10 ops"));
}

}  // namespace
}  // namespace psched::scheduler
