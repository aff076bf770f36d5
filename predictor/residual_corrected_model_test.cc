#include "predictor/residual_corrected_model.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/onnx_import.h"
#include "model/split.h"
#include "predictor/profiles.h"
#include "source_dir.h"

namespace psched::predictor {
namespace {

using ::testing::HasSubstr;

class ResidualCorrectedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<model::Graph> graph = model::ImportOnnxFile(
        std::string(PSCHED_SOURCE_DIR) + "/tests/daemon/data/tiny_cnn.onnx", {});
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = *std::move(graph);
    base_ = HostProfile(2).model;
    ASSERT_EQ(graph_.ops[0].kind, model::OpKind::kConv2d);
    conv_ = WholeOpConfig(graph_, 0);
    conv_half_ = SubtaskConfig(graph_, 0, model::SplitAxis::kOutputChannels, 0, 4);
  }

  // `config` on `device` measured `factor` times what `model` predicts.
  ResidualSample Measured(const LatencyModel& model, const OpConfig& config, int device,
                          double factor) {
    const double predicted = model.PredictUs(config, device);
    return {config, device, predicted * factor, predicted};
  }

  model::Graph graph_;
  std::shared_ptr<const LatencyModel> base_;
  OpConfig conv_;
  OpConfig conv_half_;
};

TEST_F(ResidualCorrectedModelTest, ScalesMeasuredConfigsAndTheirKindAndDevice) {
  const std::vector<ResidualSample> samples = {Measured(*base_, conv_, 0, 2.0),
                                               Measured(*base_, conv_, 0, 2.2),
                                               Measured(*base_, conv_, 0, 1.8)};
  auto corrected = ResidualCorrectedModel::Make(base_, nullptr, samples);
  ASSERT_TRUE(corrected.ok()) << corrected.status();
  EXPECT_NEAR((*corrected)->PredictUs(conv_, 0), 2.0 * base_->PredictUs(conv_, 0), 1e-9);
  // An unmeasured slice of a measured kind takes the kind's factor; another device none.
  EXPECT_NEAR((*corrected)->Factor(conv_half_, 0), 2.0, 1e-12);
  EXPECT_NEAR((*corrected)->Factor(conv_, 1), 1.0, 1e-12);
  const OpConfig other_kind = WholeOpConfig(graph_, static_cast<model::OpId>(1));
  ASSERT_NE(other_kind.kind, model::OpKind::kConv2d);
  EXPECT_NEAR((*corrected)->Factor(other_kind, 0), 2.0, 1e-12);  // the device's factor

  std::vector<double> batch(2);
  const std::vector<OpConfig> configs = {conv_, conv_half_};
  (*corrected)->PredictBatch(configs, 0, batch);
  EXPECT_DOUBLE_EQ(batch[0], (*corrected)->PredictUs(conv_, 0));
  EXPECT_DOUBLE_EQ(batch[1], (*corrected)->PredictUs(conv_half_, 0));
}

TEST_F(ResidualCorrectedModelTest, VersionNamesTheInnerModelAndTheFactors) {
  const std::vector<ResidualSample> twice = {Measured(*base_, conv_, 0, 2.0)};
  const std::vector<ResidualSample> thrice = {Measured(*base_, conv_, 0, 3.0)};
  auto a = ResidualCorrectedModel::Make(base_, nullptr, twice);
  auto b = ResidualCorrectedModel::Make(base_, nullptr, twice);
  auto c = ResidualCorrectedModel::Make(base_, nullptr, thrice);
  ASSERT_TRUE(a.ok() && b.ok() && c.ok());
  EXPECT_THAT((*a)->Version(), HasSubstr(base_->Version()));
  EXPECT_NE((*a)->Version(), base_->Version());
  EXPECT_EQ((*a)->Version(), (*b)->Version());
  EXPECT_NE((*a)->Version(), (*c)->Version());
}

TEST_F(ResidualCorrectedModelTest, ARefinementMultipliesTheEarlierFactors) {
  const std::vector<ResidualSample> first = {Measured(*base_, conv_, 0, 2.0)};
  auto once = ResidualCorrectedModel::Make(base_, nullptr, first);
  ASSERT_TRUE(once.ok());
  // Measured against the corrected predictions: still 1.5x slower.
  const std::vector<ResidualSample> second = {Measured(**once, conv_, 0, 1.5),
                                              Measured(**once, conv_half_, 1, 0.5)};
  auto twice = ResidualCorrectedModel::Make(base_, once->get(), second);
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_NEAR((*twice)->Factor(conv_, 0), 3.0, 1e-9);
  EXPECT_NEAR((*twice)->Factor(conv_half_, 1), 0.5, 1e-9);
  EXPECT_EQ((*twice)->measured_configs(), 2u);
}

TEST_F(ResidualCorrectedModelTest, BadSamplesAreSkippedAndNoneLeftIsAnError) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<ResidualSample> bad = {{conv_, 5, 10, 5},  {conv_, -1, 10, 5},
                                           {conv_, 0, 0, 5},   {conv_, 0, 10, -1},
                                           {conv_, 0, inf, 5}, {conv_, 0, std::nan(""), 5}};
  auto none = ResidualCorrectedModel::Make(base_, nullptr, bad);
  EXPECT_EQ(none.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(none.status().message(), HasSubstr("no usable measurement"));

  std::vector<ResidualSample> mixed = bad;
  mixed.push_back(Measured(*base_, conv_, 0, 1000.0));  // clamped
  auto clamped = ResidualCorrectedModel::Make(base_, nullptr, mixed);
  ASSERT_TRUE(clamped.ok()) << clamped.status();
  EXPECT_DOUBLE_EQ((*clamped)->Factor(conv_, 0), ResidualCorrectedModel::kMaxFactor);
}

TEST_F(ResidualCorrectedModelTest, RefiningACorrectionOfAnotherModelIsAnError) {
  const std::vector<ResidualSample> samples = {Measured(*base_, conv_, 0, 2.0)};
  auto of_base = ResidualCorrectedModel::Make(base_, nullptr, samples);
  ASSERT_TRUE(of_base.ok());
  std::shared_ptr<const LatencyModel> other = HostProfile(4).model;
  auto refined = ResidualCorrectedModel::Make(other, of_base->get(), samples);
  EXPECT_EQ(refined.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(refined.status().message(), HasSubstr("not of"));
}

}  // namespace
}  // namespace psched::predictor
