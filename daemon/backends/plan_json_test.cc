#include "daemon/backends/plan_json.h"

#include <fstream>
#include <sstream>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/onnx_import.h"
#include "source_dir.h"

namespace psched::daemon {
namespace {

using ::testing::HasSubstr;

class PlanJsonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<model::Graph> graph = model::ImportOnnxFile(
        std::string(PSCHED_SOURCE_DIR) + "/tests/daemon/data/tiny_cnn.onnx", {});
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = *std::move(graph);
    std::ifstream in(std::string(PSCHED_SOURCE_DIR) + "/fuzz/seeds/plan_json/plan1.json");
    std::stringstream text;
    text << in.rdbuf();
    plan_ = nlohmann::json::parse(text.str());
  }

  absl::StatusOr<scheduler::Schedule> Read(const nlohmann::json& plan) {
    return ScheduleFromJson(graph_, {"cpu.0", "cpu.1"}, plan);
  }

  model::Graph graph_;
  nlohmann::json plan_;  // an iterative:heft plan pschedd stored for the tiny CNN
};

TEST_F(PlanJsonTest, RebuildsPlansAndSlotsFromAStoredPlan) {
  absl::StatusOr<scheduler::Schedule> schedule = Read(plan_);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  EXPECT_EQ(schedule->subtasks().size(), plan_["subtasks"].size());
  // The first conv is split by output channels into [0, 4) and [4, 8).
  EXPECT_EQ(schedule->plan(0).axis, model::SplitAxis::kOutputChannels);
  EXPECT_EQ(schedule->plan(0).work, (std::vector<int64_t>{4, 4}));
  EXPECT_DOUBLE_EQ(schedule->makespan_us(), plan_["makespan_us"].get<double>());
}

TEST_F(PlanJsonTest, WritingAScheduleAndReadingItBackGivesTheSameSubtasks) {
  absl::StatusOr<scheduler::Schedule> schedule = Read(plan_);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  const nlohmann::json written =
      ScheduleToJson(graph_, "host", {"cpu.0", "cpu.1"}, "iterative:heft", *schedule);
  EXPECT_EQ(written["platform"], "host");
  EXPECT_EQ(written["scheduler"], "iterative:heft");
  EXPECT_EQ(written["devices"], nlohmann::json({"cpu.0", "cpu.1"}));
  EXPECT_EQ(written["subtasks"], plan_["subtasks"]);
  absl::StatusOr<scheduler::Schedule> again = Read(written);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_DOUBLE_EQ(again->makespan_us(), schedule->makespan_us());
}

// Says every prediction on device 1 came from a stand-in.
class FallbackOnSecondDevice final : public predictor::LatencyModel {
 public:
  int num_devices() const override { return 2; }
  double PredictUs(const predictor::OpConfig&, int) const override { return 1; }
  bool PredictsWithFallback(const predictor::OpConfig&, int device) const override {
    return device == 1;
  }
  std::string Version() const override { return "test"; }
};

TEST_F(PlanJsonTest, SubtasksPredictedByAFallbackAreMarked) {
  absl::StatusOr<scheduler::Schedule> schedule = Read(plan_);
  ASSERT_TRUE(schedule.ok()) << schedule.status();
  const FallbackOnSecondDevice model;
  const nlohmann::json written =
      ScheduleToJson(graph_, "host", {"cpu.0", "cpu.1"}, "iterative:heft", *schedule, &model);
  int marked = 0;
  for (const nlohmann::json& s : written["subtasks"]) {
    EXPECT_EQ(s.contains("fallback"), s["device"] == "cpu.1") << s;
    marked += s.value("fallback", false) ? 1 : 0;
  }
  EXPECT_GT(marked, 0);
  // A plan with the marks reads back as the same schedule.
  absl::StatusOr<scheduler::Schedule> again = Read(written);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->subtasks().size(), schedule->subtasks().size());
}

// fuzz_plan_json's finding: a float op id far outside int was converted to int (undefined).
TEST_F(PlanJsonTest, NonIntegerOrOutOfRangeOpIdsAreErrors) {
  for (const nlohmann::json& op_id :
       {nlohmann::json(8.888888888888889e81), nlohmann::json(1.5), nlohmann::json(-1),
        nlohmann::json(1000), nlohmann::json("0")}) {
    nlohmann::json plan = plan_;
    plan["subtasks"][0]["op_id"] = op_id;
    absl::StatusOr<scheduler::Schedule> schedule = Read(plan);
    EXPECT_EQ(schedule.status().code(), absl::StatusCode::kInternal) << op_id;
    EXPECT_THAT(schedule.status().message(), HasSubstr("malformed cached plan")) << op_id;
  }
}

TEST_F(PlanJsonTest, BadWorkRangesStrategiesAndShapesAreErrors) {
  using Pointer = nlohmann::json::json_pointer;
  const std::vector<std::pair<Pointer, nlohmann::json>> edits = {
      {"/subtasks/0/work"_json_pointer, nlohmann::json::array({0.5, 4})},
      {"/subtasks/0/work"_json_pointer, nlohmann::json::array({0})},
      {"/subtasks/0/work"_json_pointer, "all"},
      {"/subtasks/0/strategy"_json_pointer, "diagonal"},
      {"/subtasks/0/start_us"_json_pointer, "soon"},
      {"/subtasks"_json_pointer, 5},
      {"/subtasks"_json_pointer, nlohmann::json::object()},
  };
  for (const auto& [where, value] : edits) {
    nlohmann::json plan = plan_;
    plan[where] = value;
    absl::StatusOr<scheduler::Schedule> schedule = Read(plan);
    EXPECT_EQ(schedule.status().code(), absl::StatusCode::kInternal)
        << where.to_string() << " = " << value;
    EXPECT_THAT(schedule.status().message(), HasSubstr("malformed cached plan"));
  }
  EXPECT_EQ(Read(nlohmann::json::array()).status().code(), absl::StatusCode::kInternal);
}

TEST_F(PlanJsonTest, UnknownDeviceIsFailedPrecondition) {
  nlohmann::json plan = plan_;
  plan["subtasks"][1]["device"] = "npu";
  absl::StatusOr<scheduler::Schedule> schedule = Read(plan);
  EXPECT_EQ(schedule.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(schedule.status().message(), HasSubstr("'npu'"));
}

}  // namespace
}  // namespace psched::daemon
