#include "executor/common/activation.h"

#include <algorithm>
#include <cmath>
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

// The in-place pass vectorizes its own exp: it must agree with the per-element definition
// across the range, at the clamps and beyond, on dense and strided views.
TEST(Activation, InPlaceMatchesPerElementOverTheRange) {
  std::vector<float> values;
  for (float x = -120.0f; x <= 120.0f; x += 0.0625f) values.push_back(x);
  for (float x : {-1e30f, -88.5f, -87.0f, -1e-30f, 0.0f, 1e-30f, 87.0f, 88.5f, 1e30f}) {
    values.push_back(x);
  }
  const int64_t channels = 5;
  const auto pixels = static_cast<int64_t>(values.size() + channels - 1) / channels;
  values.resize(static_cast<size_t>(pixels * channels), 0.5f);
  for (ActivationKind kind :
       {ActivationKind::kRelu, ActivationKind::kClip, ActivationKind::kSigmoid,
        ActivationKind::kSilu, ActivationKind::kHardSigmoid, ActivationKind::kHardSwish,
        ActivationKind::kTanh, ActivationKind::kGelu}) {
    const model::Activation a{.kind = kind, .min = -2.0f, .max = 3.0f};
    for (int64_t stride : {channels, channels + 3}) {
      std::vector<float> memory(static_cast<size_t>(pixels * stride), -7.0f);
      for (int64_t p = 0; p < pixels; ++p) {
        std::copy_n(values.begin() + p * channels, channels, memory.begin() + p * stride);
      }
      ApplyActivationInPlace(a, TensorView{memory.data(), {1, pixels, channels}, stride});
      for (int64_t p = 0; p < pixels; ++p) {
        for (int64_t c = 0; c < stride; ++c) {
          const float got = memory[static_cast<size_t>(p * stride + c)];
          if (c >= channels) {
            ASSERT_EQ(got, -7.0f) << "padding overwritten";
            continue;
          }
          const float x = values[static_cast<size_t>(p * channels + c)];
          const float want = ApplyActivation(a, x);
          ASSERT_NEAR(got, want, 2e-6f * (1.0f + std::fabs(want)))
              << "kind " << static_cast<int>(kind) << " x " << x;
        }
      }
    }
  }
}

}  // namespace
}  // namespace psched::executor
