#include "calibration/training/trace_samples.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

namespace psched::calibration {
namespace {

using model::OpKind;
using model::Shape;
using nlohmann::json;

// x [28, 28, 16] -> 3x3 conv to 32 channels -> 3x3 conv to 8 channels.
model::Graph TwoConvs() {
  model::Graph g;
  g.name = "two_convs";
  g.tensors.push_back({"x", Shape{28, 28, 16}, 4, model::kInvalidId, model::kInvalidId});
  g.tensors.push_back({"y", Shape{28, 28, 32}, 4, 0, model::kInvalidId});
  g.tensors.push_back({"z", Shape{28, 28, 8}, 4, 1, model::kInvalidId});
  model::ConvAttrs conv;
  conv.window = model::Window2d{3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
  g.ops.push_back({"conv_a", OpKind::kConv2d, {0}, 1, {}, conv});
  g.ops.push_back({"conv_b", OpKind::kConv2d, {1}, 2, {}, conv});
  return g;
}

json Trace() {
  return json::parse(R"json({"otherData": {"graph": "two_convs"}, "traceEvents": [
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 0, "args": {"name": "cpu.0"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "gpu"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2,
     "args": {"name": "cpu.0 (predicted)"}},
    {"ph": "X", "cat": "measured", "name": "conv_a", "pid": 1, "tid": 0, "ts": 0, "dur": 120.5,
     "args": {"op_id": 0, "axis": "cout", "range": [0, 8]}},
    {"ph": "X", "cat": "measured", "name": "conv_a", "pid": 1, "tid": 1, "ts": 0, "dur": 900.0,
     "args": {"op_id": 0, "axis": "cout", "range": [8, 32], "device_us": 610.0}},
    {"ph": "X", "cat": "measured", "name": "conv_b", "pid": 1, "tid": 0, "ts": 950, "dur": 80.0,
     "args": {"op_id": 1, "axis": "none", "range": [0, 1]}},
    {"ph": "X", "cat": "predicted", "name": "conv_b", "pid": 1, "tid": 2, "ts": 900, "dur": 70.0,
     "args": {"op_id": 1, "axis": "none", "range": [0, 1]}}]})json");
}

TEST(SamplesFromTraceTest, MeasuredSubtasksBecomeSamplesOfTheirSubtaskConfig) {
  const model::Graph g = TwoConvs();
  absl::StatusOr<std::vector<predictor::host_model::CalibrationSample>> samples =
      SamplesFromTrace(Trace(), g);
  ASSERT_TRUE(samples.ok()) << samples.status();
  ASSERT_EQ(samples->size(), 3u);  // the predicted track is not a measurement
  const predictor::host_model::CalibrationSample& slice = (*samples)[0];
  EXPECT_EQ(slice.device, "cpu.0");
  EXPECT_DOUBLE_EQ(slice.measured_us, 120.5);
  EXPECT_EQ(slice.config.output.c, 8);
  EXPECT_EQ(predictor::host_model::OpConfigToJson(slice.config),
            predictor::host_model::OpConfigToJson(
                predictor::SubtaskConfig(g, 0, model::SplitAxis::kOutputChannels, 0, 8)));
  EXPECT_EQ(slice.source, "two_convs/op 0 'conv_a' cout[0,8) trace");
  // The GPU reports its own execution time, which is taken over the host-side span.
  EXPECT_EQ((*samples)[1].device, "gpu");
  EXPECT_DOUBLE_EQ((*samples)[1].measured_us, 610.0);
  EXPECT_EQ((*samples)[1].config.output.c, 24);
  EXPECT_EQ(predictor::host_model::OpConfigToJson((*samples)[2].config),
            predictor::host_model::OpConfigToJson(predictor::WholeOpConfig(g, 1)));
}

TEST(SamplesFromTraceTest, RejectsMalformedOrForeignTraces) {
  const model::Graph g = TwoConvs();
  auto message = [&](const json& trace) {
    return std::string(SamplesFromTrace(trace, g).status().message());
  };
  EXPECT_THAT(message(json::array()), ::testing::HasSubstr("expected a JSON object"));
  json other_graph = Trace();
  other_graph["otherData"]["graph"] = "resnet";
  EXPECT_THAT(message(other_graph), ::testing::HasSubstr("taken on graph 'resnet'"));
  json no_events = Trace();
  no_events.erase("traceEvents");
  EXPECT_THAT(message(no_events), ::testing::HasSubstr("'traceEvents' missing"));
  json bad_op = Trace();
  bad_op["traceEvents"][3]["args"]["op_id"] = 7;
  EXPECT_THAT(message(bad_op), ::testing::HasSubstr("trace event 3: 'op_id' missing or not an op"));
  json bad_range = Trace();
  bad_range["traceEvents"][3]["args"]["range"] = {24, 40};
  EXPECT_THAT(message(bad_range), ::testing::HasSubstr("range [24, 40) is outside the op's 32"));
  json bad_axis = Trace();
  bad_axis["traceEvents"][5]["args"]["axis"] = "diagonal";
  EXPECT_THAT(message(bad_axis), ::testing::HasSubstr("trace event 5: 'axis'"));
  json no_track = Trace();
  no_track["traceEvents"][3]["tid"] = 9;
  EXPECT_THAT(message(no_track), ::testing::HasSubstr("its track has no thread_name"));
}

}  // namespace
}  // namespace psched::calibration
