#include "daemon/engine/plan_book.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "sync/notification.h"

namespace psched::daemon {
namespace {

cache::PlanKey KeyOf(const std::string& model_id, const std::string& scheduler = "heft") {
  return {model_id, "fp", "v1", scheduler};
}

PlanOutput Output(double makespan_us) {
  return {"heft", makespan_us, nlohmann::json{{"subtasks", nlohmann::json::array()}}, "", {}};
}

// A Planner whose plan counts its runs and blocks until `release` (when given) is notified.
PlanBook::Planner CountingPlanner(PlanBook& book, const cache::PlanKey& key, std::atomic<int>& runs,
                                  sync::Notification* release = nullptr) {
  PlanBook::Planner planner;
  planner.plan = [&runs, release](const ProgressFn& progress,
                                  const CancelledFn&) -> absl::StatusOr<PlanOutput> {
    ++runs;
    progress({"planning", 42});
    if (release != nullptr) release->WaitForNotification();
    return Output(100);
  };
  planner.finish = [&book, key](
                       absl::StatusOr<PlanOutput> plan,
                       double planning_ms) -> absl::StatusOr<std::shared_ptr<const ReadyPlan>> {
    if (!plan.ok()) return plan.status();
    return book.Keep({key, *std::move(plan), planning_ms, "", "heft", {}, {}, false});
  };
  return planner;
}

PlatformInfo NoDevices() { return PlatformInfo{}; }

TEST(PlanBookTest, KeptPlansAreFoundByKeyAndForgottenByModel) {
  PlanBook book(NoDevices(), 0, 60);
  book.Keep({KeyOf("a"), Output(1), 0, "", "heft", {}, {}, false});
  book.Keep({KeyOf("a", "peft"), Output(2), 0, "", "peft", {}, {}, false});
  book.Keep({KeyOf("ab"), Output(3), 0, "", "heft", {}, {}, false});
  ASSERT_NE(book.Find(KeyOf("a")), nullptr);
  EXPECT_EQ(book.Find(KeyOf("a"))->slot, KeyOf("a").Joined());
  EXPECT_EQ(book.Find(KeyOf("a", "peft"))->output.makespan_us, 2);

  book.Forget("a");  // not "ab", whose id starts the same
  EXPECT_EQ(book.Find(KeyOf("a")), nullptr);
  EXPECT_EQ(book.Find(KeyOf("a", "peft")), nullptr);
  EXPECT_NE(book.Find(KeyOf("ab")), nullptr);

  book.Drop(KeyOf("ab"));
  EXPECT_EQ(book.Find(KeyOf("ab")), nullptr);
}

TEST(PlanBookTest, ReplaceServesAnotherPlanInTheSlot) {
  PlanBook book(NoDevices(), 0, 60);
  std::shared_ptr<const ReadyPlan> served =
      book.Keep({KeyOf("a"), Output(10), 0, "", "heft", {}, {}, false});
  cache::PlanKey corrected = KeyOf("a");
  corrected.predictor_version = "v1+corrected";
  book.Replace(MakeReady({corrected, Output(7), 0, served->slot, "heft", {}, {}, false}));
  ASSERT_NE(book.Find(KeyOf("a")), nullptr);
  EXPECT_EQ(book.Find(KeyOf("a"))->output.makespan_us, 7);
  EXPECT_EQ(book.Find(KeyOf("a"))->key.predictor_version, "v1+corrected");
}

TEST(PlanBookTest, TheCheckedMemoIsPerKeyAndPlanText) {
  PlanBook book(NoDevices(), 0, 60);
  EXPECT_FALSE(book.Checked(KeyOf("a"), "{\"subtasks\":[]}"));
  book.MarkChecked(KeyOf("a"), "{\"subtasks\":[]}");
  book.MarkChecked(KeyOf("b"), "{\"subtasks\":[]}");
  EXPECT_TRUE(book.Checked(KeyOf("a"), "{\"subtasks\":[]}"));
  EXPECT_FALSE(book.Checked(KeyOf("a"), "{\"subtasks\":[1]}"));
  EXPECT_FALSE(book.Checked(KeyOf("a", "peft"), "{\"subtasks\":[]}"));

  book.ForgetChecked("a");
  EXPECT_FALSE(book.Checked(KeyOf("a"), "{\"subtasks\":[]}"));
  EXPECT_TRUE(book.Checked(KeyOf("b"), "{\"subtasks\":[]}"));
  book.ForgetChecked("");
  EXPECT_FALSE(book.Checked(KeyOf("b"), "{\"subtasks\":[]}"));
}

TEST(PlanBookTest, ConcurrentRequestsForOneKeyShareOnePlanningRun) {
  PlanBook book(NoDevices(), 0, 60);
  std::atomic<int> runs{0};
  sync::Notification release;
  constexpr int kRequests = 6;
  std::vector<std::shared_ptr<const ReadyPlan>> got(kRequests);
  std::vector<std::thread> requests;
  for (int i = 0; i < kRequests; ++i) {
    requests.emplace_back([&, i] {
      absl::StatusOr<std::shared_ptr<const ReadyPlan>> plan = book.PlanOnce(
          KeyOf("a"), CallContext{}, nullptr, CountingPlanner(book, KeyOf("a"), runs, &release));
      ASSERT_TRUE(plan.ok()) << plan.status();
      got[i] = *plan;
    });
  }
  // Every request waits in the one flight until its planner is let go.
  while (runs.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  release.Notify();
  for (std::thread& request : requests) request.join();
  EXPECT_EQ(runs.load(), 1);
  for (const auto& plan : got) EXPECT_EQ(plan, got[0]);
  EXPECT_EQ(book.Find(KeyOf("a")), got[0]);
}

TEST(PlanBookTest, PlanningSlotsBoundConcurrentPlanners) {
  PlanBook book(NoDevices(), /*max_concurrent_plans=*/1, 60);
  std::atomic<int> runs{0};
  sync::Notification release;
  std::thread first([&] {
    EXPECT_TRUE(book.PlanOnce(KeyOf("a"), CallContext{}, nullptr,
                              CountingPlanner(book, KeyOf("a"), runs, &release))
                    .ok());
  });
  std::thread second([&] {
    EXPECT_TRUE(book.PlanOnce(KeyOf("b"), CallContext{}, nullptr,
                              CountingPlanner(book, KeyOf("b"), runs, &release))
                    .ok());
  });
  // A slot is taken just before its planner starts counting: wait for both.
  PlanBook::PlanningLoad load;
  for (int i = 0; i < 2000 && !(load.planning == 1 && load.waiting == 1 && runs.load() == 1);
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    load = book.Load();
  }
  EXPECT_EQ(load.planning, 1);
  EXPECT_EQ(load.waiting, 1);
  EXPECT_EQ(runs.load(), 1);
  release.Notify();
  first.join();
  second.join();
  EXPECT_EQ(runs.load(), 2);
  load = book.Load();
  EXPECT_EQ(load.planning, 0);
  EXPECT_EQ(load.waiting, 0);
}

TEST(PlanBookTest, ACappedRequestStopsWaitingAtMaxPlanningSAndAnUncappedOneGetsThePlan) {
  PlanBook book(NoDevices(), 0, /*max_planning_s=*/1);
  std::atomic<int> runs{0};
  sync::Notification release;
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> capped = book.PlanOnce(
      KeyOf("a"), CallContext{}, nullptr, CountingPlanner(book, KeyOf("a"), runs, &release));
  ASSERT_FALSE(capped.ok());
  EXPECT_EQ(capped.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(capped.status().message().find("max_planning_s = 1"), std::string::npos);

  CallContext admin;
  admin.uncapped_planning = true;
  std::thread letgo([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));
    release.Notify();
  });
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> uncapped =
      book.PlanOnce(KeyOf("a"), admin, nullptr, CountingPlanner(book, KeyOf("a"), runs, &release));
  letgo.join();
  ASSERT_TRUE(uncapped.ok()) << uncapped.status();
  EXPECT_EQ(runs.load(), 1);  // the admin joined the flight the capped request left
}

TEST(PlanBookTest, ARequestPastItsDeadlineLeavesTheFlightToTheOthers) {
  PlanBook book(NoDevices(), 0, 60);
  std::atomic<int> runs{0};
  sync::Notification release;
  std::vector<std::string> stages;
  CallContext soon;
  soon.deadline = absl::Now() + absl::Milliseconds(100);
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> late = book.PlanOnce(
      KeyOf("a"), soon, [&](const PlanProgressEvent& event) { stages.push_back(event.stage); },
      CountingPlanner(book, KeyOf("a"), runs, &release));
  EXPECT_EQ(late.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_FALSE(stages.empty());
  release.Notify();
  book.WaitForPlanners();
  // The planner finished for nobody: its plan is kept for the next request.
  EXPECT_NE(book.Find(KeyOf("a")), nullptr);
  EXPECT_EQ(runs.load(), 1);
}

}  // namespace
}  // namespace psched::daemon
