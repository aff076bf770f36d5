// PlanFeedback's decisions on recorded runs: the engine's callbacks (replan, serve) are the
// seam, here lambdas that record what they were asked.
#include "daemon/engine/plan_feedback.h"

#include <atomic>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "sync/mutex.h"
#include "sync/notification.h"

namespace psched::daemon {
namespace {

class FixedCorrection final : public LatencyCorrection {
 public:
  std::string predictor_version() const override { return "v1;residuals=test"; }
};

std::shared_ptr<const ReadyPlan> MakePlan(double makespan_us, const std::string& version = "v1") {
  ReadyPlan plan;
  plan.key = {"model", "fingerprint", version, "heft"};
  plan.output.makespan_us = makespan_us;
  plan.slot = cache::PlanKey{"model", "fingerprint", "v1", "heft"}.Joined();
  return std::make_shared<const ReadyPlan>(std::move(plan));
}

// A run of a two-subtask plan (predicted [0, 5) and [5, 10) on one device), each subtask
// taking `subtask_us`.
RunOutput TwoSubtaskRun(double subtask_us, bool drop_second = false) {
  RunOutput run;
  run.execute_us = 2 * subtask_us;
  run.trace.push_back({"a", "cpu", 0, subtask_us, "none", 0, 1, 0, 5});
  if (!drop_second)
    run.trace.push_back({"b", "cpu", subtask_us, 2 * subtask_us, "none", 0, 1, 5, 10});
  return run;
}

class PlanFeedbackTest : public ::testing::Test {
 protected:
  std::unique_ptr<PlanFeedback> Make(PlanFeedback::Replanner replanner) {
    return std::make_unique<PlanFeedback>(FeedbackOptions{.window = 4}, std::move(replanner),
                                          [this](const std::shared_ptr<const ReadyPlan>& plan) {
                                            sync::MutexLock lock(&mu_);
                                            served_.push_back(plan);
                                          });
  }
  // Replans `candidate`, counting calls.
  PlanFeedback::Replanner Returning(std::shared_ptr<const ReadyPlan> candidate) {
    return [this, candidate](const ReadyPlan&, const LatencyCorrection*,
                             const std::vector<MeasuredSubtask>& measured, const CancelledFn&) {
      last_measured_ = measured;
      ++replans_;
      return PlanFeedback::Candidate{candidate, std::make_shared<FixedCorrection>()};
    };
  }
  std::vector<std::shared_ptr<const ReadyPlan>> Served() {
    sync::MutexLock lock(&mu_);
    return served_;
  }
  void WaitServed(size_t n) {
    sync::MutexLock lock(&mu_);
    auto enough = [this, n]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return served_.size() >= n; };
    mu_.Await(sync::Condition(&enough));
  }

  sync::Mutex mu_;
  std::vector<std::shared_ptr<const ReadyPlan>> served_ ABSL_GUARDED_BY(mu_);
  std::vector<MeasuredSubtask> last_measured_;
  std::atomic<int> replans_{0};
};

TEST_F(PlanFeedbackTest, APlanOffByMoreThanTheToleranceIsReplannedAndTheFasterOneServed) {
  auto base = MakePlan(10);
  auto candidate = MakePlan(20, "v1;residuals=test");
  auto feedback = Make(Returning(candidate));
  for (int i = 0; i < 4; ++i) feedback->Record(base, TwoSubtaskRun(10));  // 20 us against 10: x2
  WaitServed(1);
  EXPECT_EQ(Served()[0], candidate);
  ASSERT_EQ(last_measured_.size(), 2u);
  // Each subtask's share of the 20 us the device took: 10 us against 5 predicted.
  EXPECT_DOUBLE_EQ(last_measured_[0].measured_us, 10);
  EXPECT_DOUBLE_EQ(last_measured_[0].predicted_us, 5);
  for (int i = 0; i < 4; ++i) feedback->Record(candidate, TwoSubtaskRun(9.8));  // not slower: kept
  ASSERT_EQ(Served().size(), 2u);
  EXPECT_EQ(Served()[1], candidate);
  // Within 15% now: no further replan.
  for (int i = 0; i < 8; ++i) feedback->Record(candidate, TwoSubtaskRun(10));
  feedback->Stop();
  EXPECT_EQ(replans_, 1);
}

TEST_F(PlanFeedbackTest, ASlowerCandidateIsDroppedAndAFailingOneAtOnce) {
  auto base = MakePlan(10);
  auto slower = MakePlan(20, "v1;residuals=test");
  auto feedback = Make(Returning(slower));
  for (int i = 0; i < 4; ++i) feedback->Record(base, TwoSubtaskRun(10));
  WaitServed(1);
  for (int i = 0; i < 4; ++i) feedback->Record(slower, TwoSubtaskRun(15));  // 30 us against 20
  ASSERT_EQ(Served().size(), 2u);
  EXPECT_EQ(Served()[1], base);

  auto failing = MakePlan(20, "v1;residuals=test");
  auto second = Make(Returning(failing));
  for (int i = 0; i < 4; ++i) second->Record(base, TwoSubtaskRun(10));
  WaitServed(3);
  EXPECT_EQ(Served()[2], failing);
  second->RecordFailure(failing);
  ASSERT_EQ(Served().size(), 4u);
  EXPECT_EQ(Served()[3], base);
}

TEST_F(PlanFeedbackTest, RunsWithMissingSubtasksCountTheirMakespanOnly) {
  auto base = MakePlan(1000);  // far off: replans, but the candidate never runs here
  auto feedback = Make(Returning(MakePlan(20, "v1;residuals=test")));
  feedback->Record(base, TwoSubtaskRun(10));
  feedback->Record(base, TwoSubtaskRun(30, /*drop_second=*/true));
  feedback->Record(base, TwoSubtaskRun(10));
  std::optional<PlanMeasurement> measured = feedback->Measured(*base);
  ASSERT_TRUE(measured.has_value());
  EXPECT_EQ(measured->runs, 3);
  EXPECT_DOUBLE_EQ(measured->median_makespan_us, 20);  // of 20, 60, 20
  ASSERT_EQ(measured->subtasks.size(), 2u);
  EXPECT_DOUBLE_EQ(measured->subtasks[1].measured_us, 10);  // from the two whole runs
  EXPECT_FALSE(feedback->Measured(*MakePlan(10)).has_value());
  // The engine's brief-inference test reads the median alone.
  EXPECT_EQ(feedback->MedianMakespanUs(*base), std::optional<double>(20));
  EXPECT_EQ(feedback->MedianMakespanUs(*MakePlan(10)), std::nullopt);
}

TEST_F(PlanFeedbackTest, AReplanOfAForgottenPlanIsDiscarded) {
  sync::Notification started, release;
  auto candidate = MakePlan(20, "v1;residuals=test");
  auto feedback = Make([&](const ReadyPlan&, const LatencyCorrection*,
                           const std::vector<MeasuredSubtask>&, const CancelledFn&) {
    started.Notify();
    release.WaitForNotification();
    return absl::StatusOr<PlanFeedback::Candidate>(
        PlanFeedback::Candidate{candidate, std::make_shared<FixedCorrection>()});
  });
  auto base = MakePlan(10);
  for (int i = 0; i < 4; ++i) feedback->Record(base, TwoSubtaskRun(10));
  started.WaitForNotification();
  feedback->Forget("model");  // removed, purged or recalibrated meanwhile
  release.Notify();
  feedback->Stop();
  EXPECT_TRUE(Served().empty());
  EXPECT_FALSE(feedback->Measured(*base).has_value());
}

TEST_F(PlanFeedbackTest, StopCancelsARunningReplanAndReturns) {
  sync::Notification started;
  auto feedback =
      Make([&](const ReadyPlan&, const LatencyCorrection*, const std::vector<MeasuredSubtask>&,
               const CancelledFn& cancelled) -> absl::StatusOr<PlanFeedback::Candidate> {
        started.Notify();
        while (!cancelled()) absl::SleepFor(absl::Milliseconds(1));
        return absl::CancelledError("stopped");
      });
  auto base = MakePlan(10);
  for (int i = 0; i < 4; ++i) feedback->Record(base, TwoSubtaskRun(10));
  started.WaitForNotification();
  feedback->Stop();
  EXPECT_TRUE(Served().empty());
  feedback->Record(base, TwoSubtaskRun(10));  // still measures after Stop, starts nothing
  EXPECT_EQ(feedback->Measured(*base)->runs, 5);
}

TEST_F(PlanFeedbackTest, AFailedReplanLeavesThePlanServed) {
  auto feedback =
      Make([&](const ReadyPlan&, const LatencyCorrection*, const std::vector<MeasuredSubtask>&,
               const CancelledFn&) -> absl::StatusOr<PlanFeedback::Candidate> {
        ++replans_;
        return absl::FailedPreconditionError("the latency model was recalibrated while replanning");
      });
  auto base = MakePlan(10);
  for (int i = 0; i < 4; ++i) feedback->Record(base, TwoSubtaskRun(10));
  while (replans_ == 0) absl::SleepFor(absl::Milliseconds(1));
  for (int i = 0; i < 8; ++i) feedback->Record(base, TwoSubtaskRun(10));  // no retry storm
  feedback->Stop();
  EXPECT_EQ(replans_, 1);
  EXPECT_TRUE(Served().empty());
}

}  // namespace
}  // namespace psched::daemon
