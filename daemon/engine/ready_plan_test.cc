#include "daemon/engine/ready_plan.h"

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "source_dir.h"

namespace psched::daemon {
namespace {

ReadyPlan StoredTinyCnnPlan() {
  std::ifstream in(std::string(PSCHED_SOURCE_DIR) + "/fuzz/seeds/plan_json/plan1.json");
  std::stringstream text;
  text << in.rdbuf();
  ReadyPlan plan;
  plan.output.schedule = nlohmann::json::parse(text.str());
  plan.output.scheduler = "iterative:heft";
  plan.output.makespan_us = 23.98;
  plan.planning_ms = 1.5;
  return plan;
}

TEST(ReadyPlanTest, AnswerHoldsEverySubtaskTyped) {
  std::shared_ptr<const ReadyPlan> ready = MakeReady(StoredTinyCnnPlan());
  ASSERT_NE(ready->answer, nullptr);
  const nlohmann::json& stored = ready->output.schedule["subtasks"];
  ASSERT_EQ(ready->answer->subtasks.size(), stored.size());
  // The first subtask is the cout half of /conv1/Conv on cpu.0 (the fixture's plan).
  const PlanSubtaskInfo& first = ready->answer->subtasks[0];
  EXPECT_EQ(first.op, "/conv1/Conv");
  EXPECT_EQ(first.op_id, 0);
  EXPECT_EQ(first.device, "cpu.0");
  EXPECT_EQ(first.strategy, "cout");
  EXPECT_EQ(first.work_begin, 0);
  EXPECT_EQ(first.work_end, 4);
  EXPECT_DOUBLE_EQ(first.start_us, 0.0);
  EXPECT_DOUBLE_EQ(first.end_us, stored[0]["end_us"].get<double>());
  for (size_t i = 0; i < stored.size(); ++i) {
    EXPECT_EQ(ready->answer->subtasks[i].device, stored[i]["device"]) << i;
    EXPECT_EQ(ready->answer->subtasks[i].work_end, stored[i]["work"][1]) << i;
  }
}

TEST(ReadyPlanTest, CachedAnswerJsonIsThePlanWithTheAnswerFields) {
  std::shared_ptr<const ReadyPlan> ready = MakeReady(StoredTinyCnnPlan());
  const nlohmann::json cached = nlohmann::json::parse(ready->answer->cached_schedule_json);
  EXPECT_EQ(cached["cached"], true);
  EXPECT_EQ(cached["imported"], false);
  EXPECT_DOUBLE_EQ(cached["planning_ms"].get<double>(), 1.5);
  EXPECT_EQ(cached["scheduler"], "iterative:heft");
  EXPECT_DOUBLE_EQ(cached["makespan_us"].get<double>(), 23.98);
  EXPECT_EQ(cached["subtasks"], ready->output.schedule["subtasks"]);
  EXPECT_EQ(cached["devices"], ready->output.schedule["devices"]);

  const nlohmann::json fresh = nlohmann::json::parse(PlanAnswerJson(*ready, /*cached=*/false));
  EXPECT_EQ(fresh["cached"], false);
  EXPECT_EQ(fresh["subtasks"], cached["subtasks"]);
}

TEST(ReadyPlanTest, MissingOrMistypedFieldsReadAsTheirDefaults) {
  ReadyPlan plan;
  plan.output.schedule = {{"subtasks",
                           {{{"op", "a"}, {"work", {1.5, 2}}},  // a float work range
                            5,                                  // not an object: skipped
                            {{"device", "gpu"}}}}};
  std::shared_ptr<const ReadyPlan> ready = MakeReady(std::move(plan));
  ASSERT_EQ(ready->answer->subtasks.size(), 2u);
  EXPECT_EQ(ready->answer->subtasks[0].op, "a");
  EXPECT_EQ(ready->answer->subtasks[0].work_begin, 0);
  EXPECT_EQ(ready->answer->subtasks[0].work_end, 1);
  EXPECT_EQ(ready->answer->subtasks[1].device, "gpu");
  EXPECT_EQ(ready->answer->subtasks[1].strategy, "none");
}

}  // namespace
}  // namespace psched::daemon
