#include "predictor/host_model/calibration_samples.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace psched::predictor::host_model {
namespace {

using model::OpKind;
using model::Shape;

OpConfig StridedConv() {
  OpConfig c;
  c.kind = OpKind::kConv2d;
  c.inputs = {Shape{57, 57, 32}};
  c.output = Shape{28, 28, 32};
  c.window = {3, 3, 2, 2, 1, 1, 0, 1, 0, 1};
  c.groups = 32;
  c.activation = model::ActivationKind::kClip;
  ComputeCost(c);
  return c;
}

TEST(CalibrationSamplesTest, JsonRoundTripKeepsEverything) {
  CalibrationSamples samples;
  samples.platform = "host";
  OpConfig cin = SubtaskConfig(StridedConv(), model::SplitAxis::kRows, 3, 9);
  OpConfig fc;
  fc.kind = OpKind::kFullyConnected;
  fc.inputs = {Shape{1, 1, 1024}};
  fc.output = Shape{1, 1, 1000};
  ComputeCost(fc);
  fc = SubtaskConfig(fc, model::SplitAxis::kInputChannels, 0, 512);
  OpConfig into_concat = StridedConv();
  into_concat.output_pixel_stride = into_concat.output.c * 3;
  samples.samples = {{"cpu.0", StridedConv(), 123.5, 7, "peleenet/op 3", 1, ""},
                     {"gpu", cin, 44.25, 5, "x/op 1 spatial[3,9)", 1, "opencl"},
                     {"cpu.1", into_concat, 150.0, 3, "x/op 2", 1, ""},
                     {"cpu.1", fc, 80.0, 9, "", 2, "xnnpack"}};
  const std::string text = SamplesToJson(samples).dump();
  absl::StatusOr<CalibrationSamples> back = SamplesFromJson(nlohmann::json::parse(text));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->platform, "host");
  ASSERT_EQ(back->samples.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    const OpConfig& a = samples.samples[i].config;
    const OpConfig& b = back->samples[i].config;
    EXPECT_EQ(back->samples[i].device, samples.samples[i].device);
    EXPECT_DOUBLE_EQ(back->samples[i].measured_us, samples.samples[i].measured_us);
    EXPECT_EQ(back->samples[i].runs, samples.samples[i].runs);
    EXPECT_EQ(back->samples[i].source, samples.samples[i].source);
    EXPECT_EQ(back->samples[i].threads, samples.samples[i].threads);
    EXPECT_EQ(back->samples[i].kernel, samples.samples[i].kernel);
    EXPECT_EQ(b.kind, a.kind);
    EXPECT_EQ(b.inputs, a.inputs);
    EXPECT_EQ(b.output, a.output);
    EXPECT_EQ(b.window, a.window);
    EXPECT_EQ(b.groups, a.groups);
    EXPECT_EQ(b.activation, a.activation);
    EXPECT_EQ(b.accumulate, a.accumulate);
    EXPECT_EQ(b.output_pixel_stride, a.output_pixel_stride);
    EXPECT_DOUBLE_EQ(b.flops, a.flops);
    EXPECT_DOUBLE_EQ(b.bytes, a.bytes);
  }
  EXPECT_TRUE(back->samples[0].config.IsDepthwise());
  EXPECT_EQ(back->samples[2].config.output_pixel_stride, into_concat.output_pixel_stride);
  EXPECT_TRUE(back->samples[3].config.accumulate);
  // A dense output writes no field, so configurations stored before it existed keep their keys.
  EXPECT_FALSE(OpConfigToJson(StridedConv()).contains("output_pixel_stride"));
  EXPECT_EQ(SamplesToJson(*back).dump(), text);
}

TEST(CalibrationSamplesTest, TensorKindsRoundTripWithTheirExtents) {
  OpConfig scores;
  scores.kind = OpKind::kMatMul;
  scores.inputs = {Shape{12 * 197, 1, 64}, Shape{12 * 64, 1, 197}};
  scores.output = Shape{12 * 197, 1, 197};
  scores.matmul = MatMulDims{12, 197, 197, 64, 12, 12};
  ComputeCost(scores);
  OpConfig concat;
  concat.kind = OpKind::kConcat;
  concat.inputs = {Shape{1, 1, 768}, Shape{196, 1, 768}};
  concat.output = Shape{197, 1, 768};
  concat.concat_copies = true;
  ComputeCost(concat);
  OpConfig gelu;
  gelu.kind = OpKind::kActivation;
  gelu.activation = model::ActivationKind::kGelu;
  gelu.inputs = {Shape{197, 1, 3072}};
  gelu.output = gelu.inputs[0];
  ComputeCost(gelu);
  for (const OpConfig& c : {scores, concat, gelu}) {
    absl::StatusOr<OpConfig> back = OpConfigFromJson(OpConfigToJson(c));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->matmul, c.matmul);
    EXPECT_EQ(back->concat_copies, c.concat_copies);
    EXPECT_EQ(back->activation, c.activation);
    EXPECT_DOUBLE_EQ(back->flops, c.flops);
    EXPECT_DOUBLE_EQ(back->bytes, c.bytes);
    EXPECT_EQ(OpConfigToJson(*back).dump(), OpConfigToJson(c).dump());
  }
  // Fields written only where they apply: older keys stay as they were.
  EXPECT_FALSE(OpConfigToJson(gelu).contains("matmul"));
  EXPECT_FALSE(OpConfigToJson(gelu).contains("concat_copies"));
}

TEST(CalibrationSamplesTest, RejectsBadInputNamingTheSampleAndField) {
  CalibrationSamples samples;
  samples.samples = {{"cpu.0", StridedConv(), 10.0, 3, "", 1, ""},
                     {"cpu.0", StridedConv(), 12.0, 3, "", 1, ""}};
  const nlohmann::json good = SamplesToJson(samples);
  auto message = [](const nlohmann::json& j) {
    return std::string(SamplesFromJson(j).status().message());
  };
  EXPECT_THAT(message(nlohmann::json::array()), ::testing::HasSubstr("expected an object"));
  EXPECT_THAT(message(nlohmann::json::object()), ::testing::HasSubstr("'samples' missing"));
  nlohmann::json j = good;
  j["samples"][1]["measured_us"] = 0.0;
  EXPECT_THAT(message(j),
              ::testing::HasSubstr("sample 1: 'measured_us' must be a finite number > 0"));
  j = good;
  j["samples"][1]["threads"] = 0;
  EXPECT_THAT(message(j), ::testing::HasSubstr("sample 1: 'threads' must be an integer >= 1"));
  j = good;
  j["samples"][1].erase("threads");
  j["samples"][1].erase("kernel");
  ASSERT_TRUE(SamplesFromJson(j).ok());
  EXPECT_EQ(SamplesFromJson(j)->samples[1].threads, 1);
  j = good;
  j["samples"][0]["config"]["kind"] = "lstm";
  EXPECT_THAT(message(j),
              ::testing::HasSubstr("sample 0: op config field 'kind': unknown op kind 'lstm'"));
  j = good;
  j["samples"][1]["config"]["output"] = {28, 28};
  EXPECT_THAT(message(j), ::testing::HasSubstr("'output': expected [h, w, c]"));
  j = good;
  j["samples"][1]["config"]["inputs"][0] = {0, 5, 5};
  EXPECT_THAT(message(j), ::testing::HasSubstr("dimensions must be integers >= 1"));
  j = good;
  j["samples"][0]["config"]["groups"] = 5;
  EXPECT_THAT(message(j), ::testing::HasSubstr("divisible by groups"));
  j = good;
  j["samples"][0]["config"]["stride"] = {0, 1};
  EXPECT_THAT(message(j), ::testing::HasSubstr("'stride'"));
  j = good;
  j["samples"][0].erase("device");
  EXPECT_THAT(message(j), ::testing::HasSubstr("sample 0: 'device' missing"));
  j = good;
  j["samples"][0]["config"]["activation"] = "swish2";
  EXPECT_THAT(message(j), ::testing::HasSubstr("unknown activation"));
  // GEMM extents only on a matmul, six positive integers matching the output.
  j = good;
  j["samples"][0]["config"]["matmul"] = {1, 28, 28, 32, 1, 1};
  EXPECT_THAT(message(j), ::testing::HasSubstr("only a matmul has GEMM extents"));
  nlohmann::json matmul = good;
  matmul["samples"][0]["config"]["kind"] = "matmul";
  matmul["samples"][0]["config"]["groups"] = 1;
  for (const nlohmann::json& bad :
       {nlohmann::json({1, 2, 3}), nlohmann::json({1, 28, 28, 0, 1, 1}),
        nlohmann::json({2, 28, 28, 32, 1, 1}), nlohmann::json({1, 28, 28, 32, 2, 1}),
        nlohmann::json({16777216, 16777216, 16777216, 1, 1, 1})}) {
    j = matmul;
    j["samples"][0]["config"]["matmul"] = bad;
    EXPECT_THAT(message(j), ::testing::HasSubstr("sample 0: op config field 'matmul'")) << bad;
  }
  // A stride must be wider than the output it holds.
  for (const nlohmann::json& bad :
       {nlohmann::json(-1), nlohmann::json("wide"), nlohmann::json(StridedConv().output.c)}) {
    j = good;
    j["samples"][1]["config"]["output_pixel_stride"] = bad;
    EXPECT_THAT(message(j), ::testing::HasSubstr("sample 1: op config field 'output_pixel_stride'"))
        << bad;
  }
}

}  // namespace
}  // namespace psched::predictor::host_model
