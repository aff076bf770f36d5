#include "executor/reference/reference_kernels.h"

#include <cmath>
#include <vector>

#include "executor/layout.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psched::executor::reference {
namespace {

using model::OpKind;
using model::Shape;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using testing::GraphBuilder;
using ::testing::HasSubstr;
using ::testing::Pointwise;

// Runs a one-op graph built with `b` (its last op) on `inputs`.
std::vector<float> RunSingle(GraphBuilder& b, model::TensorId out,
                             const std::vector<std::vector<float>>& inputs) {
  b.MarkOutput(out);
  const model::Graph g = b.Build();
  auto result = RunGraph(g, inputs);
  EXPECT_TRUE(result.ok()) << result.status();
  return result.ok() ? (*result)[0] : std::vector<float>{};
}

std::vector<float> Iota(int n, float start = 1.0f) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = start + static_cast<float>(i);
  return v;
}

model::ConvAttrs Conv(GraphBuilder& b, model::Window2d w, int groups, std::vector<int64_t> dims,
                      std::vector<float> filter, std::vector<float> bias = {}) {
  model::ConvAttrs attrs;
  attrs.window = w;
  attrs.groups = groups;
  const int64_t cout = dims[0];
  attrs.filter = b.AddConstant(std::move(dims), std::move(filter));
  if (!bias.empty()) attrs.bias = b.AddConstant({cout}, std::move(bias));
  return attrs;
}

TEST(ReferenceConv, SamePaddingWithBias) {
  GraphBuilder b;
  auto x = b.AddInput({3, 3, 1});
  model::Window2d w{
      .kernel_h = 3, .kernel_w = 3, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  auto y = b.AddOp(OpKind::kConv2d, {x}, {3, 3, 1},
                   Conv(b, w, 1, {1, 3, 3, 1}, std::vector<float>(9, 1.0f), {1.0f}));
  // Each output is 1 + the sum of the in-bounds 3x3 neighbourhood of 1..9.
  EXPECT_THAT(RunSingle(b, y, {Iota(9)}), ElementsAre(13, 22, 17, 28, 46, 34, 25, 40, 29));
}

TEST(ReferenceConv, AsymmetricPadsAndStride) {
  GraphBuilder b;
  auto x = b.AddInput({4, 4, 1});
  model::Window2d w{
      .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_right = 1};
  auto y = b.AddOp(OpKind::kConv2d, {x}, {2, 2, 1},
                   Conv(b, w, 1, {1, 2, 2, 1}, std::vector<float>(4, 1.0f)));
  EXPECT_THAT(RunSingle(b, y, {Iota(16, 0.0f)}), ElementsAre(1, 5, 26, 34));
}

TEST(ReferenceConv, DepthwiseDilated) {
  GraphBuilder b;
  auto x = b.AddInput({3, 3, 2});
  std::vector<float> in(18);
  for (int p = 0; p < 9; ++p) {
    in[static_cast<size_t>(2 * p)] = static_cast<float>(p + 1);
    in[static_cast<size_t>(2 * p + 1)] = 10.0f * static_cast<float>(p + 1);
  }
  model::Window2d w{.kernel_h = 2, .kernel_w = 2, .dilation_h = 2, .dilation_w = 2};
  // OHWI [2][2][2][1]: channel 0 all ones, channel 1 = [[1, 0], [0, -1]].
  auto y = b.AddOp(OpKind::kConv2d, {x}, {1, 1, 2},
                   Conv(b, w, 2, {2, 2, 2, 1}, {1, 1, 1, 1, 1, 0, 0, -1}));
  // Taps at (0,0), (0,2), (2,0), (2,2): 1+3+7+9 and 10*1 - 10*9.
  EXPECT_THAT(RunSingle(b, y, {in}), ElementsAre(20, -80));
}

TEST(ReferenceConv, GroupedWithFusedRelu) {
  GraphBuilder b;
  auto x = b.AddInput({1, 1, 4});
  model::Activation relu{.kind = model::ActivationKind::kRelu};
  auto y =
      b.AddOp(OpKind::kConv2d, {x}, {1, 1, 2}, Conv(b, {}, 2, {2, 1, 1, 2}, {1, 1, 1, -1}), relu);
  // Group 0: 1 + 2; group 1: 3 - 4 -> relu -> 0.
  EXPECT_THAT(RunSingle(b, y, {{1, 2, 3, 4}}), ElementsAre(3, 0));
}

TEST(ReferenceFullyConnected, BiasAndClip) {
  GraphBuilder b;
  auto x = b.AddInput({1, 1, 3});
  model::FullyConnectedAttrs fc;
  fc.weight = b.AddConstant({2, 3}, {1, 0, -1, 2, 2, 2});
  fc.bias = b.AddConstant({2}, {0.5f, -1.0f});
  model::Activation relu6{.kind = model::ActivationKind::kClip, .min = 0.0f, .max = 6.0f};
  auto y = b.AddOp(OpKind::kFullyConnected, {x}, {1, 1, 2}, fc, relu6);
  // [1-3+0.5, 2+4+6-1] = [-1.5, 11] clipped to [0, 6].
  EXPECT_THAT(RunSingle(b, y, {{1, 2, 3}}), ElementsAre(0, 6));
}

model::PoolAttrs CeilModePool(bool count_include_pad) {
  // 3x3 input, 2x2 window, stride 2, ceil_mode: one extra bottom row / right column.
  model::PoolAttrs pool;
  pool.window = {
      .kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2, .pad_bottom = 1, .pad_right = 1};
  pool.count_include_pad = count_include_pad;
  return pool;
}

TEST(ReferencePool, MaxCeilMode) {
  GraphBuilder b;
  auto x = b.AddInput({3, 3, 1});
  auto y = b.AddOp(OpKind::kMaxPool, {x}, {2, 2, 1}, CeilModePool(false));
  EXPECT_THAT(RunSingle(b, y, {Iota(9)}), ElementsAre(5, 6, 8, 9));
}

TEST(ReferencePool, AvgCeilModeNeverCountsTheExtension) {
  GraphBuilder b;
  auto x = b.AddInput({3, 3, 1});
  auto y = b.AddOp(OpKind::kAvgPool, {x}, {2, 2, 1}, CeilModePool(true));
  EXPECT_THAT(RunSingle(b, y, {Iota(9)}), ElementsAre(3, 4.5, 7.5, 9));
}

TEST(ReferencePool, AvgCountIncludePad) {
  for (bool include : {true, false}) {
    GraphBuilder b;
    auto x = b.AddInput({3, 3, 1});
    model::PoolAttrs pool;
    pool.window = {
        .kernel_h = 3, .kernel_w = 3, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
    pool.declared_pad_bottom = 1;
    pool.declared_pad_right = 1;
    pool.count_include_pad = include;
    auto y = b.AddOp(OpKind::kAvgPool, {x}, {3, 3, 1}, pool);
    const std::vector<float> out = RunSingle(b, y, {Iota(9)});
    // Corner: (1+2+4+5) over 9 taps or over the 4 real ones; centre: 45 / 9 either way.
    EXPECT_FLOAT_EQ(out[0], include ? 12.0f / 9.0f : 3.0f);
    EXPECT_FLOAT_EQ(out[4], 5.0f);
    EXPECT_FLOAT_EQ(out[1], include ? 21.0f / 9.0f : 3.5f);
  }
}

TEST(ReferencePool, GlobalAverage) {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 2});
  auto y = b.AddOp(OpKind::kGlobalAvgPool, {x}, {1, 1, 2});
  EXPECT_THAT(RunSingle(b, y, {{1, 10, 2, 20, 3, 30, 4, 40}}), ElementsAre(2.5, 25));
}

TEST(ReferenceBinary, AddBroadcastsConstantOverPixels) {
  GraphBuilder b;
  auto x = b.AddInput({2, 1, 2});
  auto c = b.AddConstantTensor({1, 1, 2}, {10, 20});
  auto y = b.AddOp(OpKind::kAdd, {x, c}, {2, 1, 2});
  EXPECT_THAT(RunSingle(b, y, {{1, 2, 3, 4}}), ElementsAre(11, 22, 13, 24));
}

TEST(ReferenceBinary, MulBroadcastsBothOperands) {
  GraphBuilder b;
  auto x = b.AddInput({1, 2, 1});  // one value per column
  auto z = b.AddInput({2, 1, 1});  // one value per row
  auto y = b.AddOp(OpKind::kMul, {x, z}, {2, 2, 1});
  b.MarkOutput(y);
  auto result = RunGraph(b.Build(), {{2, 3}, {5, 7}});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT((*result)[0], ElementsAre(10, 15, 14, 21));
}

TEST(ReferenceBinary, SubKeepsOperandOrderWithConstantFirst) {
  GraphBuilder b;
  auto x = b.AddInput({1, 1, 3});
  auto c = b.AddConstantTensor({1, 1, 1}, {1});
  auto y = b.AddOp(OpKind::kSub, {c, x}, {1, 1, 3});
  EXPECT_THAT(RunSingle(b, y, {{1, 2, 3}}), ElementsAre(0, -1, -2));
}

TEST(ReferenceConcat, InterleavesChannelsPerPixel) {
  GraphBuilder b;
  auto x = b.AddInput({1, 2, 1});
  auto z = b.AddInput({1, 2, 2});
  auto y = b.AddOp(OpKind::kConcat, {x, z}, {1, 2, 3});
  b.MarkOutput(y);
  auto result = RunGraph(b.Build(), {{1, 2}, {3, 4, 5, 6}});
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT((*result)[0], ElementsAre(1, 3, 4, 2, 5, 6));
}

TEST(ReferencePad, PadsRowsColumnsAndChannels) {
  GraphBuilder b;
  auto x = b.AddInput({1, 1, 1});
  model::PadAttrs pad{.top = 1, .right = 1, .channels_before = 1, .value = -1.0f};
  auto y = b.AddOp(OpKind::kPad, {x}, {2, 2, 2}, pad);
  EXPECT_THAT(RunSingle(b, y, {{5}}), ElementsAre(-1, -1, -1, -1, -1, 5, -1, -1));
}

std::vector<float> Resize1d(std::vector<float> in, int64_t out_w, model::ResizeAttrs attrs) {
  GraphBuilder b;
  auto x = b.AddInput({1, static_cast<int64_t>(in.size()), 1});
  attrs.scale_w = static_cast<float>(out_w) / static_cast<float>(in.size());
  auto y = b.AddOp(OpKind::kResize, {x}, {1, out_w, 1}, attrs);
  return RunSingle(b, y, {in});
}

TEST(ReferenceResize, NearestRoundingModes) {
  using model::CoordinateTransform;
  using model::NearestRounding;
  using model::ResizeMode;
  EXPECT_THAT(
      Resize1d({1, 2}, 4,
               {ResizeMode::kNearest, CoordinateTransform::kAsymmetric, NearestRounding::kFloor}),
      ElementsAre(1, 1, 2, 2));
  // Half-pixel, 6 -> 3... sources (x + 0.5) * 2 - 0.5 = 0.5, 2.5: exact halves.
  EXPECT_THAT(Resize1d({1, 2, 3, 4}, 2,
                       {ResizeMode::kNearest, CoordinateTransform::kHalfPixel,
                        NearestRounding::kRoundPreferFloor}),
              ElementsAre(1, 3));
  EXPECT_THAT(Resize1d({1, 2, 3, 4}, 2,
                       {ResizeMode::kNearest, CoordinateTransform::kHalfPixel,
                        NearestRounding::kRoundPreferCeil}),
              ElementsAre(2, 4));
  EXPECT_THAT(
      Resize1d({1, 2, 3, 4}, 2,
               {ResizeMode::kNearest, CoordinateTransform::kAsymmetric, NearestRounding::kCeil}),
      ElementsAre(1, 3));
}

TEST(ReferenceResize, LinearCoordinateTransforms) {
  using model::CoordinateTransform;
  using model::ResizeMode;
  auto linear = [](CoordinateTransform t) {
    return model::ResizeAttrs{.mode = ResizeMode::kLinear, .transform = t};
  };
  // Sources -0.25, 0.25, 0.75, 1.25, clamped to [0, 1].
  EXPECT_THAT(Resize1d({1, 2}, 4, linear(CoordinateTransform::kHalfPixel)),
              Pointwise(FloatNear(1e-6), {1.0f, 1.25f, 1.75f, 2.0f}));
  EXPECT_THAT(Resize1d({1, 2}, 4, linear(CoordinateTransform::kPytorchHalfPixel)),
              Pointwise(FloatNear(1e-6), {1.0f, 1.25f, 1.75f, 2.0f}));
  EXPECT_THAT(Resize1d({1, 2}, 4, linear(CoordinateTransform::kAlignCorners)),
              Pointwise(FloatNear(1e-6), {1.0f, 4.0f / 3, 5.0f / 3, 2.0f}));
  EXPECT_THAT(Resize1d({1, 2}, 4, linear(CoordinateTransform::kAsymmetric)),
              Pointwise(FloatNear(1e-6), {1.0f, 1.5f, 2.0f, 2.0f}));
  // A single output pixel: pytorch_half_pixel reads index 0, half_pixel the midpoint.
  EXPECT_THAT(Resize1d({1, 2}, 1, linear(CoordinateTransform::kPytorchHalfPixel)), ElementsAre(1));
  EXPECT_THAT(Resize1d({1, 2}, 1, linear(CoordinateTransform::kHalfPixel)), ElementsAre(1.5));
}

TEST(ReferenceResize, BilinearMixesRowsAndColumns) {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 1});
  model::ResizeAttrs attrs{.mode = model::ResizeMode::kLinear,
                           .transform = model::CoordinateTransform::kAlignCorners,
                           .scale_h = 1.5f,
                           .scale_w = 1.5f};
  auto y = b.AddOp(OpKind::kResize, {x}, {3, 3, 1}, attrs);
  EXPECT_THAT(RunSingle(b, y, {{0, 2, 4, 6}}), ElementsAre(0, 1, 2, 2, 3, 4, 4, 5, 6));
}

TEST(ReferenceFlatten, ProducesNchwOrder) {
  GraphBuilder b;
  auto x = b.AddInput({1, 2, 2});
  auto y = b.AddOp(OpKind::kFlatten, {x}, {1, 1, 4});
  // NHWC [1,3,2,4] is channel 0 = [1,2], channel 1 = [3,4].
  EXPECT_THAT(RunSingle(b, y, {{1, 3, 2, 4}}), ElementsAre(1, 2, 3, 4));
}

TEST(ReferenceActivation, StandaloneActivationOp) {
  using model::ActivationKind;
  GraphBuilder b;
  auto x = b.AddInput({1, 1, 2});
  auto y = b.AddOp(OpKind::kActivation, {x}, {1, 1, 2}, {}, {.kind = ActivationKind::kRelu});
  EXPECT_THAT(RunSingle(b, y, {{-1, 2}}), ElementsAre(0, 2));
}

TEST(ReferenceSoftmax, PerPixelOverChannels) {
  GraphBuilder b;
  auto x = b.AddInput({1, 2, 2});
  auto y = b.AddOp(OpKind::kSoftmax, {x}, {1, 2, 2});
  const float l3 = std::log(3.0f);
  EXPECT_THAT(RunSingle(b, y, {{0, l3, 100, 100}}),
              Pointwise(FloatNear(1e-6), {0.25f, 0.75f, 0.5f, 0.5f}));
}

TEST(ReferenceGraph, ChainsOps) {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 1});
  // 1x1 conv doubling, relu, flatten (no-op order for C=1), FC summing.
  auto c = b.AddOp(OpKind::kConv2d, {x}, {2, 2, 1}, Conv(b, {}, 1, {1, 1, 1, 1}, {2.0f}),
                   {.kind = model::ActivationKind::kRelu});
  auto f = b.AddOp(OpKind::kFlatten, {c}, {1, 1, 4});
  model::FullyConnectedAttrs fc;
  fc.weight = b.AddConstant({1, 4}, {1, 1, 1, 1});
  auto y = b.AddOp(OpKind::kFullyConnected, {f}, {1, 1, 1}, fc);
  // 2 * (1 + 0 + 3 + 0) after relu of [1, -2, 3, -4].
  EXPECT_THAT(RunSingle(b, y, {{1, -2, 3, -4}}), ElementsAre(8));
}

TEST(ReferenceErrors, WrongInputSize) {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 1});
  auto y = b.AddOp(OpKind::kActivation, {x}, {2, 2, 1});
  b.MarkOutput(y);
  auto result = RunGraph(b.Build(), {{1, 2, 3}});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().ToString(), HasSubstr("holds 3 floats, expected 4"));
}

TEST(ReferenceErrors, MissingWeights) {
  GraphBuilder b;
  auto x = b.AddInput({1, 1, 2});
  model::FullyConnectedAttrs fc;
  fc.weight = b.AddConstant({1, 2}, {});
  auto y = b.AddOp(OpKind::kFullyConnected, {x}, {1, 1, 1}, fc);
  b.MarkOutput(y);
  auto result = RunGraph(b.Build(), {{1, 2}});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().ToString(), HasSubstr("graph has no weights"));
}

TEST(ReferenceErrors, WrongConvOutputShape) {
  GraphBuilder b;
  auto x = b.AddInput({4, 4, 1});
  model::Window2d w{.kernel_h = 3, .kernel_w = 3};
  auto y = b.AddOp(OpKind::kConv2d, {x}, {4, 4, 1},
                   Conv(b, w, 1, {1, 3, 3, 1}, std::vector<float>(9, 1.0f)));
  b.MarkOutput(y);
  auto result = RunGraph(b.Build(), {Iota(16)});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().ToString(), HasSubstr("expected 2x2 pixels"));
}

TEST(ReferenceErrors, FilterDimsMismatch) {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 3});
  auto y = b.AddOp(OpKind::kConv2d, {x}, {2, 2, 1}, Conv(b, {}, 1, {1, 1, 1, 2}, {1.0f, 1.0f}));
  b.MarkOutput(y);
  auto result = RunGraph(b.Build(), {Iota(12)});
  ASSERT_FALSE(result.ok());
  EXPECT_THAT(result.status().ToString(), HasSubstr("expected [1,1,1,3]"));
}

TEST(ReferenceErrors, AttrsOfWrongKindAndBadBroadcast) {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 3});
  auto z = b.AddInput({2, 2, 2});
  b.AddOp(OpKind::kMaxPool, {x}, {2, 2, 3});  // no PoolAttrs
  b.AddOp(OpKind::kAdd, {x, z}, {2, 2, 3});   // 2 channels do not broadcast to 3
  b.AddOp(OpKind::kAdd, {x, x}, {2, 2, 3});
  const model::Graph g = b.Build();
  const float buf[12] = {};
  const float* in[] = {buf};
  float out[12];
  EXPECT_THAT(RunOp(g, 0, in, out).ToString(), HasSubstr("attrs do not match"));
  const float* two[] = {buf, buf};
  EXPECT_THAT(RunOp(g, 1, two, out).ToString(), HasSubstr("does not broadcast"));
  EXPECT_THAT(RunOp(g, 2, in, out).ToString(), HasSubstr("got 1 input buffers, expected 2"));
  EXPECT_THAT(RunOp(g, 7, in, out).ToString(), HasSubstr("out of range"));
}

TEST(Layout, RoundTripsNchwAndNhwc) {
  const Shape s{2, 3, 2};
  std::vector<float> nchw = Iota(12, 0.0f);
  std::vector<float> nhwc = NchwToNhwc(s, nchw);
  // NHWC pixel (h=0, w=1) holds channel 0 value 1 and channel 1 value 7.
  EXPECT_EQ(nhwc[2], 1.0f);
  EXPECT_EQ(nhwc[3], 7.0f);
  EXPECT_EQ(NhwcToNchw(s, nhwc), nchw);
}

}  // namespace
}  // namespace psched::executor::reference
