#include "predictor/host_model/measured_anchors.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "predictor/host_model/calibration_samples.h"

namespace psched::predictor::host_model {
namespace {

using model::SplitAxis;
using ::testing::HasSubstr;

// A 3x3 conv 32 -> 64 channels on 14x14 pixels.
OpConfig Conv(int64_t cin = 32) {
  OpConfig c;
  c.kind = model::OpKind::kConv2d;
  c.inputs = {{14, 14, cin}};
  c.output = {14, 14, 64};
  c.window.kernel_h = c.window.kernel_w = 3;
  c.window.pad_top = c.window.pad_left = c.window.pad_bottom = c.window.pad_right = 1;
  ComputeCost(c);
  return c;
}

// A smooth model: 1 us per MFLOP plus 2 us.
double Base(const OpConfig& c) { return c.flops / 1e6 + 2; }

TEST(MeasuredAnchorsTest, ATimedConfigurationIsPredictedAtItsMedianTime) {
  const OpConfig whole = Conv();
  const std::vector<Anchor> anchors = {{whole, 300}, {whole, 100}, {whole, 120}};
  const MeasuredAnchors m = MeasuredAnchors::Build(anchors, &Base);
  ASSERT_EQ(m.anchors().size(), 1u);
  EXPECT_DOUBLE_EQ(m.anchors()[0].measured_us, 120);
  ASSERT_TRUE(m.PredictUs(whole).has_value());
  EXPECT_NEAR(*m.PredictUs(whole), 120, 1e-9);
}

TEST(MeasuredAnchorsTest, ACutBetweenAnchorsInterpolatesMeasuredOverBase) {
  const OpConfig whole = Conv();
  const OpConfig quarter = SubtaskConfig(whole, SplitAxis::kOutputChannels, 0, 16);
  const OpConfig half = SubtaskConfig(whole, SplitAxis::kOutputChannels, 0, 32);
  const OpConfig cut24 = SubtaskConfig(whole, SplitAxis::kOutputChannels, 0, 24);
  const OpConfig cut8 = SubtaskConfig(whole, SplitAxis::kOutputChannels, 0, 8);
  const MeasuredAnchors m = MeasuredAnchors::Build(
      std::vector<Anchor>{
          {whole, 4 * Base(whole)}, {quarter, 3 * Base(quarter)}, {half, 2 * Base(half)}},
      &Base);
  // 24 channels lie halfway between 16 (measured 3x base) and 32 (2x base).
  ASSERT_TRUE(m.PredictUs(cut24).has_value());
  EXPECT_NEAR(*m.PredictUs(cut24), 2.5 * Base(cut24), 1e-9);
  // Below the smallest anchor: the nearest anchor's ratio.
  EXPECT_NEAR(*m.PredictUs(cut8), 3 * Base(cut8), 1e-9);
  // 48 channels: halfway between 32 (2x) and the whole op's 64 (4x).
  const OpConfig cut48 = SubtaskConfig(whole, SplitAxis::kOutputChannels, 0, 48);
  EXPECT_NEAR(*m.PredictUs(cut48), 3 * Base(cut48), 1e-9);
}

TEST(MeasuredAnchorsTest, RowCutsFollowTheRowAnchorsAndTheNearerGroupWins) {
  const OpConfig whole = Conv();
  const OpConfig top_half = SubtaskConfig(whole, SplitAxis::kRows, 0, 7);
  const OpConfig top_rows = SubtaskConfig(whole, SplitAxis::kRows, 0, 6);
  const MeasuredAnchors m = MeasuredAnchors::Build(
      std::vector<Anchor>{{whole, 2 * Base(whole)}, {top_half, 5 * Base(top_half)}}, &Base);
  // 6 rows lie below both row anchors (7 and 14 rows): the nearer one's ratio, 7 rows' 5x.
  ASSERT_TRUE(m.PredictUs(top_rows).has_value());
  EXPECT_NEAR(*m.PredictUs(top_rows), 5 * Base(top_rows), 1e-9);
  // The whole op is in both groups; its own time wins at distance 0.
  EXPECT_NEAR(*m.PredictUs(whole), 2 * Base(whole), 1e-9);
}

TEST(MeasuredAnchorsTest, OtherOpsAndPartialSumsAreNotPredictedFromAnOpsCuts) {
  const OpConfig whole = Conv();
  const MeasuredAnchors m = MeasuredAnchors::Build(std::vector<Anchor>{{whole, 500}}, &Base);
  // Another input channel count is another op: its output-channel cuts are not this one's.
  EXPECT_FALSE(m.PredictUs(Conv(48)).has_value());
  EXPECT_FALSE(m.PredictUs(SubtaskConfig(Conv(48), SplitAxis::kOutputChannels, 0, 32)).has_value());
  // An input-channel partial sum reads the output back: its own group, here without anchors.
  EXPECT_FALSE(m.PredictUs(SubtaskConfig(whole, SplitAxis::kInputChannels, 0, 16)).has_value());
  // ... which its own anchors fill.
  const OpConfig cin_half = SubtaskConfig(whole, SplitAxis::kInputChannels, 0, 16);
  const MeasuredAnchors with_cin = MeasuredAnchors::Build(
      std::vector<Anchor>{{whole, 500}, {cin_half, 3 * Base(cin_half)}}, &Base);
  const OpConfig cin_quarter = SubtaskConfig(whole, SplitAxis::kInputChannels, 0, 8);
  ASSERT_TRUE(with_cin.PredictUs(cin_quarter).has_value());
  EXPECT_NEAR(*with_cin.PredictUs(cin_quarter), 3 * Base(cin_quarter), 1e-9);
}

TEST(MeasuredAnchorsTest, AnOpWritingIntoAConcatIsNotPredictedFromTheDenseOnesAnchors) {
  const OpConfig dense = Conv();
  OpConfig into_concat = dense;
  into_concat.output_pixel_stride = 128;
  const MeasuredAnchors m = MeasuredAnchors::Build(
      std::vector<Anchor>{
          {dense, 500},
          {into_concat, 650},
          {SubtaskConfig(into_concat, SplitAxis::kOutputChannels, 0, 32),
           3 * Base(SubtaskConfig(into_concat, SplitAxis::kOutputChannels, 0, 32))}},
      &Base);
  EXPECT_NEAR(*m.PredictUs(dense), 500, 1e-9);
  EXPECT_NEAR(*m.PredictUs(into_concat), 650, 1e-9);
  // A cut of the strided op follows its own anchors (3x base at 32 channels), not the dense op's.
  const OpConfig cut16 = SubtaskConfig(into_concat, SplitAxis::kOutputChannels, 0, 16);
  EXPECT_EQ(cut16.output_pixel_stride, 128);
  ASSERT_TRUE(m.PredictUs(cut16).has_value());
  EXPECT_NEAR(*m.PredictUs(cut16), 3 * Base(cut16), 1e-9);
}

TEST(MeasuredAnchorsTest, DigestFollowsTheAnchorsNotTheirOrder) {
  const OpConfig whole = Conv();
  const OpConfig half = SubtaskConfig(whole, SplitAxis::kOutputChannels, 0, 32);
  const MeasuredAnchors a =
      MeasuredAnchors::Build(std::vector<Anchor>{{whole, 500}, {half, 260}}, &Base);
  const MeasuredAnchors b =
      MeasuredAnchors::Build(std::vector<Anchor>{{half, 260}, {whole, 500}}, &Base);
  const MeasuredAnchors c =
      MeasuredAnchors::Build(std::vector<Anchor>{{half, 261}, {whole, 500}}, &Base);
  EXPECT_EQ(a.digest(), b.digest());
  EXPECT_NE(a.digest(), c.digest());
  EXPECT_EQ(a.digest().size(), 64u);
}

TEST(MeasuredAnchorsTest, JsonRoundTrips) {
  const OpConfig whole = Conv();
  const OpConfig half = SubtaskConfig(whole, SplitAxis::kRows, 0, 7);
  const MeasuredAnchors m =
      MeasuredAnchors::Build(std::vector<Anchor>{{whole, 500}, {half, 260}}, &Base);
  absl::StatusOr<std::vector<Anchor>> back = AnchorsFromJson(AnchorsToJson(m.anchors()), "here");
  ASSERT_TRUE(back.ok()) << back.status();
  const MeasuredAnchors rebuilt = MeasuredAnchors::Build(*back, &Base);
  EXPECT_EQ(rebuilt.digest(), m.digest());
  EXPECT_NEAR(*rebuilt.PredictUs(half), 260, 1e-9);
}

TEST(MeasuredAnchorsTest, MalformedJsonIsRefusedNamingTheEntry) {
  const nlohmann::json config = OpConfigToJson(Conv());
  const auto error = [](const nlohmann::json& j) {
    absl::StatusOr<std::vector<Anchor>> parsed = AnchorsFromJson(j, "device 2 ('gpu')");
    return parsed.ok() ? std::string("ok") : std::string(parsed.status().message());
  };
  EXPECT_THAT(error(nlohmann::json::object()), HasSubstr("device 2 ('gpu'): 'anchors' must be"));
  EXPECT_THAT(error(nlohmann::json::array({{{"config", config}, {"us", 1.0}}, {{"us", 2.0}}})),
              HasSubstr("device 2 ('gpu'): anchor 1: expected"));
  EXPECT_THAT(error(nlohmann::json::array({{{"config", config}, {"us", -3.0}}})),
              HasSubstr("anchor 0: 'us' must be a time > 0, not -3.0"));
  EXPECT_THAT(error(nlohmann::json::array({{{"config", config}, {"us", "fast"}}})),
              HasSubstr("anchor 0: 'us' must be a time > 0, not \"fast\""));
  nlohmann::json broken = config;
  broken["output"] = {14, 14};
  EXPECT_THAT(error(nlohmann::json::array({{{"config", broken}, {"us", 5.0}}})),
              HasSubstr("anchor 0: op config field 'output'"));
}

}  // namespace
}  // namespace psched::predictor::host_model
