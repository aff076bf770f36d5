#include "timeline/chrome_trace.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <string>

namespace psched::timeline {
namespace {

using nlohmann::json;
using ::testing::HasSubstr;

// Two devices; op "b" is split by output channels, and its GPU slice reports device time.
ChromeTraceInput TwoDevices() {
  ChromeTraceInput in;
  in.devices = {"cpu.0", "gpu"};
  in.measured = {{.op = "a",
                  .op_id = 0,
                  .kind = "conv2d",
                  .device = 0,
                  .work = 1,
                  .start_us = 1,
                  .end_us = 11,
                  .predicted_start_us = 0,
                  .predicted_end_us = 9},
                 {.op = "b",
                  .op_id = 1,
                  .kind = "conv2d",
                  .device = 1,
                  .axis = model::SplitAxis::kOutputChannels,
                  .begin = 0,
                  .end = 16,
                  .work = 32,
                  .start_us = 12,
                  .end_us = 30,
                  .predicted_start_us = 9,
                  .predicted_end_us = 25,
                  .device_us = 15.5}};
  in.predicted = {{.op = "a", .op_id = 0, .device = 0, .start_us = 0, .end_us = 9},
                  {.op = "b",
                   .op_id = 1,
                   .device = 1,
                   .axis = model::SplitAxis::kOutputChannels,
                   .begin = 0,
                   .end = 16,
                   .start_us = 9,
                   .end_us = 25}};
  in.predicted_makespan_us = 25;
  in.other_data = {{"graph", "g"}};
  return in;
}

TEST(ChromeTraceTest, MeasuredAndPredictedTracksPerDevice) {
  absl::StatusOr<json> trace = ChromeTrace(TwoDevices());
  ASSERT_TRUE(trace.ok()) << trace.status();
  std::vector<std::string> tracks;
  int measured = 0, predicted = 0;
  for (const json& e : (*trace)["traceEvents"]) {
    if (e["ph"] == "M") {
      tracks.push_back(e["args"]["name"]);
      continue;
    }
    ASSERT_EQ(e["ph"], "X");
    if (e["cat"] == "measured") {
      ++measured;
      EXPECT_LT(e["tid"].get<int>(), 2);
    } else {
      ++predicted;
      EXPECT_GE(e["tid"].get<int>(), 2);
    }
  }
  EXPECT_THAT(tracks, ::testing::UnorderedElementsAre("cpu.0", "cpu.0 (predicted)", "gpu",
                                                      "gpu (predicted)"));
  EXPECT_EQ(measured, 2);
  EXPECT_EQ(predicted, 2);
  EXPECT_EQ((*trace)["otherData"]["graph"], "g");
  EXPECT_DOUBLE_EQ((*trace)["otherData"]["measured_makespan_us"].get<double>(), 30);
  EXPECT_DOUBLE_EQ((*trace)["otherData"]["predicted_makespan_us"].get<double>(), 25);
}

TEST(ChromeTraceTest, EventsCarryTheSliceTheirTimesAndPredictions) {
  absl::StatusOr<json> trace = ChromeTrace(TwoDevices());
  ASSERT_TRUE(trace.ok()) << trace.status();
  const json& b = (*trace)["traceEvents"][5];  // 4 track names, then a, then b
  EXPECT_EQ(b["name"], "b");
  EXPECT_EQ(b["tid"], 1);
  EXPECT_DOUBLE_EQ(b["ts"].get<double>(), 12);
  EXPECT_DOUBLE_EQ(b["dur"].get<double>(), 18);
  EXPECT_EQ(b["args"], json({{"op", "b"},
                             {"op_id", 1},
                             {"kind", "conv2d"},
                             {"axis", "cout"},
                             {"range", {0, 16}},
                             {"work", 32},
                             {"predicted_start_us", 9.0},
                             {"predicted_end_us", 25.0},
                             {"device_us", 15.5}}));
  // Fields a span does not know are left out.
  const json& a_predicted = (*trace)["traceEvents"][6];
  EXPECT_EQ(a_predicted["cat"], "predicted");
  EXPECT_EQ(a_predicted["tid"], 2);
  EXPECT_EQ(a_predicted["args"],
            json({{"op", "a"}, {"op_id", 0}, {"axis", "none"}, {"range", {0, 1}}}));
}

TEST(ChromeTraceTest, WithoutAPlanThereAreNoPredictedTracks) {
  ChromeTraceInput in = TwoDevices();
  in.predicted.reset();
  absl::StatusOr<json> trace = ChromeTrace(in);
  ASSERT_TRUE(trace.ok()) << trace.status();
  EXPECT_EQ((*trace)["traceEvents"].size(), 4u);  // 2 track names, 2 measured events
  EXPECT_FALSE((*trace)["otherData"].contains("predicted_makespan_us"));
}

TEST(ChromeTraceTest, ASpanOnAnUnnamedDeviceIsRefused) {
  ChromeTraceInput in = TwoDevices();
  in.measured[1].device = 2;
  absl::StatusOr<json> trace = ChromeTrace(in);
  EXPECT_EQ(trace.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(trace.status().message(),
              HasSubstr("measured subtask 1 ('b') is on device 2, but 2 devices are named"));
  in = TwoDevices();
  (*in.predicted)[0].device = -1;
  EXPECT_THAT(ChromeTrace(in).status().message(), HasSubstr("predicted subtask 0 ('a')"));
}

TEST(ChromeTraceTest, WritesTheTraceOrNamesThePathItCannotWrite) {
  const std::string path = ::testing::TempDir() + "/timeline_trace.json";
  ASSERT_TRUE(WriteChromeTrace(path, TwoDevices()).ok());
  std::ifstream file(path);
  EXPECT_EQ(json::parse(file), *ChromeTrace(TwoDevices()));
  const absl::Status unwritable = WriteChromeTrace("/nonexistent-dir/t.json", TwoDevices());
  EXPECT_EQ(unwritable.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(unwritable.message(), HasSubstr("/nonexistent-dir/t.json"));
  ChromeTraceInput bad = TwoDevices();
  bad.measured[0].device = 5;
  EXPECT_EQ(WriteChromeTrace(path, bad).code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psched::timeline
