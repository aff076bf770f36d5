#include "scheduler/schedule.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

#include "predictor/profiles.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/test_problems.h"

namespace psched::scheduler {
namespace {

using model::SplitAxis;
using ::testing::HasSubstr;

// A valid partitioned schedule of the 2-branch fork-join on oneplus11, by hand:
// op 0 (stem) cout-split 32/32 on devices 0 and 1; everything else on device 0.
class ValidatorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    graph_ = testing::ConvForkJoin(2);
    profile_ = *predictor::LoadProfile("oneplus11");
    problem_ =
        std::make_unique<Problem>(*Problem::FromGraph(graph_, profile_.platform, *profile_.model));
    plans_.assign(static_cast<size_t>(problem_->num_ops()), PartitionPlan::None());
    plans_[0] = PartitionPlan{SplitAxis::kOutputChannels, {32, 32}};
    auto heft = MakeListScheduler("heft");
    valid_ = *(*heft)->Schedule(*problem_, plans_);
    ASSERT_TRUE(ValidateSchedule(*problem_, valid_).ok()) << ValidateSchedule(*problem_, valid_);
  }

  // A copy of the valid schedule with `edit` applied to every subtask (return false to
  // drop it) and `plan_edit` to the plans.
  Schedule Mutate(const std::function<bool(ScheduledSubtask&)>& edit,
                  const std::function<void(std::vector<PartitionPlan>&)>& plan_edit = nullptr) {
    std::vector<PartitionPlan> plans(valid_.plans().begin(), valid_.plans().end());
    if (plan_edit) plan_edit(plans);
    Schedule s(problem_->num_ops(), problem_->num_devices());
    for (OpId op = 0; op < problem_->num_ops(); ++op) s.SetPlan(op, plans[static_cast<size_t>(op)]);
    for (ScheduledSubtask t : valid_.subtasks()) {
      if (edit(t)) s.Add(t);
    }
    return s;
  }

  std::string Error(const Schedule& s) {
    return std::string(ValidateSchedule(*problem_, s).message());
  }

  model::Graph graph_;
  predictor::Profile profile_;
  std::unique_ptr<Problem> problem_;
  std::vector<PartitionPlan> plans_;
  Schedule valid_;
};

TEST_F(ValidatorTest, AcceptsTheUnchangedCopy) {
  EXPECT_TRUE(ValidateSchedule(*problem_, Mutate([](ScheduledSubtask&) { return true; })).ok());
}

TEST_F(ValidatorTest, RejectsMissingSubtask) {
  const Schedule s = Mutate([](ScheduledSubtask& t) { return !(t.op == 0 && t.slot == 1); });
  EXPECT_THAT(Error(s), HasSubstr("subtask 1 of op 0 (conv0) is missing"));
}

TEST_F(ValidatorTest, RejectsExtraSubtask) {
  Schedule s = Mutate([](ScheduledSubtask&) { return true; });
  ScheduledSubtask extra = valid_.subtasks()[0];
  extra.slot = 2;
  s.Add(extra);
  EXPECT_THAT(Error(s), HasSubstr("is extra: its plan has no active slot 2"));
}

TEST_F(ValidatorTest, RejectsDuplicateSubtask) {
  Schedule s = Mutate([](ScheduledSubtask&) { return true; });
  s.Add(valid_.subtasks()[3]);
  EXPECT_THAT(Error(s), HasSubstr("is scheduled twice"));
}

TEST_F(ValidatorTest, RejectsWorkNotSummingToU) {
  const Schedule s = Mutate([](ScheduledSubtask&) { return true; },
                            [](std::vector<PartitionPlan>& p) {
                              p[0].work = {32, 31};
                            });
  EXPECT_THAT(Error(s), HasSubstr("plan work sums to 63, U along 'cout' is 64"));
}

TEST_F(ValidatorTest, RejectsAxisTheOpCannotUse) {
  const Schedule s = Mutate([](ScheduledSubtask&) { return true; },
                            [](std::vector<PartitionPlan>& p) {
                              p[3] = {SplitAxis::kOutputChannels, {128}};
                            });
  EXPECT_THAT(Error(s), HasSubstr("op 3 (concat) cannot be split along 'cout'"));
}

TEST_F(ValidatorTest, RejectsRangesNotTilingTheWork) {
  const Schedule s = Mutate([](ScheduledSubtask& t) {
    if (t.op == 0 && t.slot == 1) {
      t.begin = 30;
      t.end = 62;
    }
    return true;
  });
  EXPECT_THAT(Error(s), HasSubstr("covers [30, 62); its plan slot covers [32, 64)"));
}

TEST_F(ValidatorTest, RejectsDurationDifferentFromPrediction) {
  const Schedule s = Mutate([](ScheduledSubtask& t) {
    if (t.op == 2) t.end_us += 1.0;
    return true;
  });
  EXPECT_THAT(Error(s), HasSubstr("predicted latency is"));
}

TEST_F(ValidatorTest, RejectsStartBeforePredecessorsFinish) {
  // Op 1 reads op 0: move it to start at 0 (keeping its duration).
  const Schedule s = Mutate([](ScheduledSubtask& t) {
    if (t.op == 1) {
      t.end_us -= t.start_us;
      t.start_us = 0;
    }
    return true;
  });
  EXPECT_THAT(Error(s), HasSubstr("before its input from subtask"));
}

TEST_F(ValidatorTest, RejectsTwoSubtasksOfOneOpOnOneDevice) {
  const Schedule s = Mutate([](ScheduledSubtask& t) {
    if (t.op == 0 && t.slot == 1) {
      // Same device as slot 0, after it, with the latency of that device.
      t.device = 0;
    }
    return true;
  });
  EXPECT_THAT(Error(s),
              ::testing::AnyOf(HasSubstr("both run on device 0"), HasSubstr("predicted latency")));
}

TEST_F(ValidatorTest, RejectsSiblingsOnOneDeviceEvenWhenTimesFit) {
  Schedule s(problem_->num_ops(), problem_->num_devices());
  s.SetPlan(0, PartitionPlan{SplitAxis::kOutputChannels, {32, 32}});
  const double half = problem_->LatencyUs(0, SplitAxis::kOutputChannels, 32, 1);
  s.Add({0, 0, 1, SplitAxis::kOutputChannels, 0, 32, 0, half});
  s.Add({0, 1, 1, SplitAxis::kOutputChannels, 32, 64, half, 2 * half});
  double t = 2 * half;
  for (OpId op = 1; op < problem_->num_ops(); ++op) {
    const double d = problem_->LatencyUs(op, SplitAxis::kNone, 1, 1);
    s.Add({op, 0, 1, SplitAxis::kNone, 0, 1, t, t + d});
    t += d;
  }
  EXPECT_THAT(Error(s), HasSubstr("subtasks 0 and 1 of op 0 (conv0) both run on device 1"));
}

TEST_F(ValidatorTest, RejectsOverlapOnADevice) {
  // Two independent branch convs (ops 1 and 2) forced onto the same device at one time.
  Schedule s(problem_->num_ops(), problem_->num_devices());
  double t = 0;
  const double stem = problem_->LatencyUs(0, SplitAxis::kNone, 1, 0);
  s.Add({0, 0, 0, SplitAxis::kNone, 0, 1, 0, stem});
  t = stem;
  const double b = problem_->LatencyUs(1, SplitAxis::kNone, 1, 0);
  s.Add({1, 0, 0, SplitAxis::kNone, 0, 1, t, t + b});
  s.Add({2, 0, 0, SplitAxis::kNone, 0, 1, t + b / 2, t + b / 2 + b});
  t += 2 * b;
  for (OpId op = 3; op < problem_->num_ops(); ++op) {
    const double d = problem_->LatencyUs(op, SplitAxis::kNone, 1, 0);
    s.Add({op, 0, 0, SplitAxis::kNone, 0, 1, t, t + d});
    t += d;
  }
  EXPECT_THAT(Error(s), HasSubstr("overlaps"));
}

TEST_F(ValidatorTest, RejectsUnknownDeviceAndOp) {
  EXPECT_THAT(Error(Mutate([](ScheduledSubtask& t) {
                if (t.op == 4) t.device = 7;
                return true;
              })),
              HasSubstr("runs on unknown device 7"));
  Schedule s = Mutate([](ScheduledSubtask&) { return true; });
  ScheduledSubtask bad = valid_.subtasks()[0];
  bad.op = 99;
  s.Add(bad);
  EXPECT_THAT(Error(s), HasSubstr("names op 99"));
}

TEST_F(ValidatorTest, RejectsWrongOpCountAndDeviceCount) {
  EXPECT_THAT(Error(Schedule(3, 3)), HasSubstr("plans for 3 ops, problem has 5"));
  EXPECT_THAT(Error(Schedule(5, 2)), HasSubstr("schedule is for 2 devices, problem has 3"));
}

TEST(ValidatorTransferTest, CrossDomainEdgeMustWaitForTheTransfer) {
  // Topcuoglu: task 1 -> task 2 costs 18 across processors.
  // HEFT puts task 1 on P3 (0-9) and task 2 on P1 at 27-40; move task 2 to 20.
  const Problem p = testing::TopcuogluExample();
  const Schedule heft = *(*MakeListScheduler("heft"))->Schedule(p);
  Schedule s(p.num_ops(), p.num_devices());
  for (ScheduledSubtask t : heft.subtasks()) {
    if (t.op == 1) {
      ASSERT_EQ(t.device, 0);
      ASSERT_DOUBLE_EQ(t.start_us, 27);
      t.start_us = 20;
      t.end_us = 33;
    }
    s.Add(t);
  }
  const absl::Status status = ValidateSchedule(p, s);
  EXPECT_THAT(std::string(status.message()), HasSubstr("starts at 20 us before its input"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("ready at 27 us"));
}

TEST(ScheduleTest, KeepsDeviceOrderAndMakespan) {
  Schedule s(3, 2);
  s.Add({0, 0, 1, SplitAxis::kNone, 0, 1, 5, 9});
  s.Add({1, 0, 1, SplitAxis::kNone, 0, 1, 0, 4});
  s.Add({2, 0, 0, SplitAxis::kNone, 0, 1, 1, 2});
  ASSERT_EQ(s.device_order(1).size(), 2u);
  EXPECT_EQ(s.device_order(1)[0], 1);
  EXPECT_EQ(s.device_order(1)[1], 0);
  EXPECT_DOUBLE_EQ(s.makespan_us(), 9);
  EXPECT_DOUBLE_EQ(s.CompletionUs(1), 4);
  s.Reset(3, 2);
  EXPECT_TRUE(s.subtasks().empty());
  EXPECT_DOUBLE_EQ(s.makespan_us(), 0);
}

}  // namespace
}  // namespace psched::scheduler
