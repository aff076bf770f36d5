// The decomposed forms exporters write for SiLU, HardSwish, GELU and LayerNorm become single
// ops at import, and stay decomposed when an inner tensor is read elsewhere.
#include "model/fuse_patterns.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

using ::psched::model::testing::OnnxBuilder;

Graph MustImport(const OnnxBuilder& b) {
  auto g = ImportOnnx(b.Bytes(), {});
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph{};
}

TEST(FusePatternsTest, ConvTimesSigmoidIsAConvWithSilu) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 5, 5});
  b.Weight("w", {4, 4, 1, 1}, std::vector<float>(16, 0.25f));
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.Node("Sigmoid", {"c"}, {"s"});
  b.Node("Mul", {"c", "s"}, {"y"});
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kConv2d);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kSilu);
}

TEST(FusePatternsTest, HardSigmoidGateIsHardSwish) {
  OnnxBuilder b;
  b.Input("x", {1, 4, 5, 5});
  b.Weight("w", {4, 4, 1, 1}, std::vector<float>(16, 0.25f));
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  auto& hs = b.Node("HardSigmoid", {"c"}, {"s"});
  OnnxBuilder::AttrFloat(hs, "alpha", 1.0f / 6);
  OnnxBuilder::AttrFloat(hs, "beta", 0.5f);
  b.Node("Mul", {"s", "c"}, {"y"});
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kHardSwish);
}

TEST(FusePatternsTest, ErfFormIsGelu) {
  OnnxBuilder b;
  b.Input("x", {2, 8});
  b.ConstFloats("sqrt2", {}, {std::sqrt(2.0f)});
  b.ConstFloats("one", {}, {1.0f});
  b.ConstFloats("half", {}, {0.5f});
  b.Node("Div", {"x", "sqrt2"}, {"d"});
  b.Node("Erf", {"d"}, {"e"});
  b.Node("Add", {"e", "one"}, {"a"});
  b.Node("Mul", {"x", "a"}, {"m"});
  b.Node("Mul", {"m", "half"}, {"y"});
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kActivation);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kGelu);
  EXPECT_EQ(g.ops[0].inputs, std::vector<TensorId>{g.inputs[0].tensor});
}

// The opset 13 LayerNorm with eps 1e-5 and per-channel gamma and beta.
OnnxBuilder DecomposedLayerNorm(bool expose_variance) {
  OnnxBuilder b;
  b.Input("x", {3, 8});
  b.Weight("gamma", {8}, {1, 2, 3, 4, 5, 6, 7, 8});
  b.Weight("beta", {8}, {0, 0, 0, 0, 1, 1, 1, 1});
  b.ConstFloats("two", {}, {2.0f});
  b.ConstFloats("eps", {}, {1e-5f});
  OnnxBuilder::AttrInts(b.Node("ReduceMean", {"x"}, {"m"}), "axes", {-1});
  b.Node("Sub", {"x", "m"}, {"d"});
  b.Node("Pow", {"d", "two"}, {"p"});
  OnnxBuilder::AttrInts(b.Node("ReduceMean", {"p"}, {"v"}), "axes", {-1});
  b.Node("Add", {"v", "eps"}, {"q"});
  b.Node("Sqrt", {"q"}, {"s"});
  b.Node("Div", {"d", "s"}, {"n"});
  b.Node("Mul", {"n", "gamma"}, {"g"});
  b.Node("Add", {"g", "beta"}, {"y"});
  b.Output("y");
  if (expose_variance) b.Output("v");
  return b;
}

TEST(FusePatternsTest, DecomposedLayerNormIsOneOp) {
  Graph g = MustImport(DecomposedLayerNorm(false));
  ASSERT_EQ(g.ops.size(), 1u);
  ASSERT_EQ(g.ops[0].kind, OpKind::kLayerNorm);
  const auto& ln = std::get<LayerNormAttrs>(g.ops[0].attrs);
  EXPECT_FLOAT_EQ(ln.epsilon, 1e-5f);
  EXPECT_EQ(g.constants.at(static_cast<size_t>(ln.scale)).data,
            (std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8}));
  ASSERT_NE(ln.bias, kInvalidId);
  EXPECT_EQ(g.constants.at(static_cast<size_t>(ln.bias)).data,
            (std::vector<float>{0, 0, 0, 0, 1, 1, 1, 1}));
}

TEST(FusePatternsTest, AnInnerTensorReadElsewhereKeepsTheDecomposedForm) {
  Graph g = MustImport(DecomposedLayerNorm(true));
  EXPECT_GT(g.ops.size(), 5u);
  for (const Op& op : g.ops) EXPECT_NE(op.kind, OpKind::kLayerNorm);
}

}  // namespace
}  // namespace psched::model
