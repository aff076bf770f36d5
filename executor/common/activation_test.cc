#include "executor/common/activation.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psched::executor {
namespace {

using model::ActivationKind;

TEST(Activation, EveryKind) {
  EXPECT_FLOAT_EQ(ApplyActivation({.kind = ActivationKind::kNone}, -3.0f), -3.0f);
  EXPECT_FLOAT_EQ(ApplyActivation({.kind = ActivationKind::kSigmoid}, 0.0f), 0.5f);
  EXPECT_FLOAT_EQ(ApplyActivation({.kind = ActivationKind::kRelu}, -2.0f), 0.0f);
  EXPECT_FLOAT_EQ(ApplyActivation({.kind = ActivationKind::kClip, .min = -1, .max = 1}, 3.0f),
                  1.0f);
  EXPECT_FLOAT_EQ(
      ApplyActivation({.kind = ActivationKind::kHardSigmoid, .alpha = 0.2f, .beta = 0.5f}, 1.0f),
      0.7f);
  EXPECT_FLOAT_EQ(ApplyActivation({.kind = ActivationKind::kHardSwish}, 3.0f), 3.0f);
  EXPECT_FLOAT_EQ(ApplyActivation({.kind = ActivationKind::kHardSwish}, -1.0f), -1.0f / 3.0f);
  EXPECT_FLOAT_EQ(ApplyActivation({.kind = ActivationKind::kHardSwish}, -4.0f), 0.0f);
}

TEST(Activation, InPlaceTouchesOnlyTheViewsChannels) {
  // A 1x2 view of 2 channels inside pixels 3 floats apart: the third float of each pixel
  // belongs to another tensor and must keep its value.
  std::vector<float> memory{-1, 2, -7, -3, 4, -9};
  const TensorView view{memory.data(), {1, 2, 2}, 3};
  ApplyActivationInPlace({.kind = ActivationKind::kRelu}, view);
  EXPECT_THAT(memory, ::testing::ElementsAre(0, 2, -7, 0, 4, -9));
}

}  // namespace
}  // namespace psched::executor
