// ONNX ConvTranspose import: the output extent and pads under every attribute that sets them
// (pads, output_padding, output_shape, auto_pad), groups, and the weight's move to OHWI.
// ImportOnnx also runs ONNX's own shape inference, so each extent here agrees with it.
#include <gtest/gtest.h>

#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

using ::psched::model::testing::Iota;
using ::psched::model::testing::OnnxBuilder;

Graph MustImport(const OnnxBuilder& b) {
  auto g = ImportOnnx(b.Bytes(), {});
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph{};
}

const ConvAttrs& AttrsOf(const Graph& g) { return std::get<ConvAttrs>(g.ops.at(0).attrs); }

TEST(OnnxConvTransposeTest, StrideTwoWithOutputPadding) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 5, 6});
  b.Weight("w", {4, 3, 3, 3}, Iota(108)).Weight("b", {3}, {0.5f, 1.5f, 2.5f});
  auto& node = b.Node("ConvTranspose", {"x", "w", "b"}, {"y"}, "up");
  OnnxBuilder::AttrInts(node, "strides", {2, 2});
  OnnxBuilder::AttrInts(node, "pads", {1, 1, 1, 1});
  OnnxBuilder::AttrInts(node, "output_padding", {1, 1});
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kConvTranspose2d);
  // (5 - 1) * 2 + 3 + 1 - 2 = 10; (6 - 1) * 2 + 3 + 1 - 2 = 12.
  EXPECT_EQ(g.output_shape(0), (Shape{10, 12, 3}));
  const ConvAttrs& a = AttrsOf(g);
  EXPECT_EQ(a.window.stride_h, 2);
  EXPECT_EQ(a.window.pad_top, 1);
  EXPECT_EQ(a.window.pad_right, 1);
  EXPECT_EQ(a.output_padding_h, 1);
  EXPECT_EQ(a.output_padding_w, 1);
  EXPECT_EQ(g.constants.at(static_cast<size_t>(a.bias)).data,
            (std::vector<float>{0.5f, 1.5f, 2.5f}));
}

TEST(OnnxConvTransposeTest, GroupedFilterBecomesOhwi) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 3, 3});
  // [C=4, M/group=3, 2, 2] with group 2: M = 6, two input channels per group.
  b.Weight("w", {4, 3, 2, 2}, Iota(48));
  auto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  OnnxBuilder::AttrInt(node, "group", 2);
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.output_shape(0), (Shape{4, 4, 6}));
  const ConvAttrs& a = AttrsOf(g);
  EXPECT_EQ(a.groups, 2);
  const Constant& f = g.constants.at(static_cast<size_t>(a.filter));
  ASSERT_EQ(f.dims, (std::vector<int64_t>{6, 2, 2, 2}));
  for (int grp = 0; grp < 2; ++grp)
    for (int m = 0; m < 3; ++m)
      for (int y = 0; y < 2; ++y)
        for (int x = 0; x < 2; ++x)
          for (int c = 0; c < 2; ++c)
            EXPECT_EQ(f.data[static_cast<size_t>((((grp * 3 + m) * 2 + y) * 2 + x) * 2 + c)],
                      static_cast<float>((((grp * 2 + c) * 3 + m) * 2 + y) * 2 + x));
}

TEST(OnnxConvTransposeTest, DilationAndAsymmetricPads) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 4, 4});
  b.Weight("w", {2, 2, 3, 3});
  auto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  OnnxBuilder::AttrInts(node, "dilations", {2, 1});
  OnnxBuilder::AttrInts(node, "pads", {0, 2, 1, 0});
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  // h: 3 + 5 - 0 - 1 = 7; w: 3 + 3 - 2 - 0 = 4.
  EXPECT_EQ(g.output_shape(0), (Shape{7, 4, 2}));
  const ConvAttrs& a = AttrsOf(g);
  EXPECT_EQ(a.window.dilation_h, 2);
  EXPECT_EQ(a.window.pad_left, 2);
  EXPECT_EQ(a.window.pad_bottom, 1);
}

TEST(OnnxConvTransposeTest, OutputShapeSetsPads) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4});
  b.Weight("w", {1, 1, 3, 3});
  auto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  OnnxBuilder::AttrInts(node, "strides", {2, 2});
  OnnxBuilder::AttrInts(node, "output_shape", {8, 9});
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.output_shape(0), (Shape{8, 9, 1}));
  const ConvAttrs& a = AttrsOf(g);
  // Full output 9: h crops 1, the odd pixel at the start (NOTSET); w crops nothing.
  EXPECT_EQ(a.window.pad_top, 1);
  EXPECT_EQ(a.window.pad_bottom, 0);
  EXPECT_EQ(a.window.pad_left, 0);
  EXPECT_EQ(a.window.pad_right, 0);
}

TEST(OnnxConvTransposeTest, OutputShapeBeyondFullOutputGrowsAtTheEnd) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4});
  b.Weight("w", {1, 1, 2, 2});
  auto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  OnnxBuilder::AttrInts(node, "strides", {2, 2});
  OnnxBuilder::AttrInts(node, "output_shape", {1, 1, 9, 8});
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.output_shape(0), (Shape{9, 8, 1}));
  EXPECT_EQ(AttrsOf(g).output_padding_h, 1);
  EXPECT_EQ(AttrsOf(g).output_padding_w, 0);
}

TEST(OnnxConvTransposeTest, AutoPadSameUpperAndLower) {
  for (const char* mode : {"SAME_UPPER", "SAME_LOWER"}) {
    OnnxBuilder b;
    b.Input("x", {1, 1, 4, 4});
    b.Weight("w", {1, 1, 4, 4});
    auto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
    OnnxBuilder::AttrInts(node, "strides", {2, 2});
    OnnxBuilder::AttrString(node, "auto_pad", mode);
    b.Output("y");
    Graph g = MustImport(b);
    ASSERT_EQ(g.ops.size(), 1u) << mode;
    EXPECT_EQ(g.output_shape(0), (Shape{8, 8, 1})) << mode;
    // Full output 10, total padding 2: even, so both modes split it 1 / 1.
    EXPECT_EQ(AttrsOf(g).window.pad_top, 1) << mode;
    EXPECT_EQ(AttrsOf(g).window.pad_bottom, 1) << mode;
  }
  OnnxBuilder b;
  b.Input("x", {1, 1, 4, 4});
  b.Weight("w", {1, 1, 3, 3});
  auto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  OnnxBuilder::AttrInts(node, "strides", {2, 2});
  OnnxBuilder::AttrString(node, "auto_pad", "SAME_UPPER");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.output_shape(0), (Shape{8, 8, 1}));
  // Full output 9, total padding 1: SAME_UPPER crops it at the end.
  EXPECT_EQ(AttrsOf(g).window.pad_top, 0);
  EXPECT_EQ(AttrsOf(g).window.pad_bottom, 1);
}

TEST(OnnxConvTransposeTest, ValidIgnoresPads) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 3, 3});
  b.Weight("w", {1, 2, 2, 2});
  auto& node = b.Node("ConvTranspose", {"x", "w"}, {"y"}, "up");
  OnnxBuilder::AttrString(node, "auto_pad", "VALID");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.output_shape(0), (Shape{4, 4, 2}));
}

TEST(OnnxConvTransposeTest, FollowingReluFuses) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 3, 3});
  b.Weight("w", {2, 2, 2, 2});
  auto& node = b.Node("ConvTranspose", {"x", "w"}, {"t"}, "up");
  OnnxBuilder::AttrInts(node, "strides", {2, 2});
  b.Node("Relu", {"t"}, {"y"}, "relu");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kRelu);
}

TEST(OnnxConvTransposeTest, FollowingBatchNormFoldsPerOutputChannel) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  // Output channel m's weights are w[0][m]: 1 and 10.
  b.Weight("w", {1, 2, 1, 1}, {1.0f, 10.0f});
  b.Weight("gamma", {2}, {2.0f, 3.0f}).Weight("beta", {2}, {0.5f, -0.5f});
  b.Weight("mean", {2}, {1.0f, 0.0f}).Weight("var", {2}, {1.0f, 1.0f});
  b.Node("ConvTranspose", {"x", "w"}, {"t"}, "up");
  auto& bn = b.Node("BatchNormalization", {"t", "gamma", "beta", "mean", "var"}, {"y"}, "bn");
  OnnxBuilder::AttrFloat(bn, "epsilon", 0.0f);
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  const ConvAttrs& a = AttrsOf(g);
  EXPECT_EQ(g.constants.at(static_cast<size_t>(a.filter)).data,
            (std::vector<float>{2.0f, 30.0f}));
  ASSERT_NE(a.bias, kInvalidId);
  // beta - mean * gamma / sqrt(var).
  EXPECT_EQ(g.constants.at(static_cast<size_t>(a.bias)).data, (std::vector<float>{-1.5f, -0.5f}));
}

}  // namespace
}  // namespace psched::model
