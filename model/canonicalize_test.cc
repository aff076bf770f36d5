// Canonicalisation rules: BatchNormalization folding or lowering, activation fusion,
// identity and dead-op removal.
#include "model/canonicalize.h"

#include <gtest/gtest.h>

#include <cmath>

#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

using ::psched::model::testing::OnnxBuilder;

Graph MustImport(const OnnxBuilder& b, const ImportOptions& options = {}) {
  auto g = ImportOnnx(b.Bytes(), options);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph{};
}

const Constant& ConstantOf(const Graph& g, ConstantId id) {
  return g.constants.at(static_cast<size_t>(id));
}

// BN parameters for 2 channels: scale, bias, mean, var.
void AddBatchNormParams(OnnxBuilder& b, const std::string& prefix) {
  b.Weight(prefix + ".gamma", {2}, {2.0f, 0.5f});
  b.Weight(prefix + ".beta", {2}, {1.0f, -1.0f});
  b.Weight(prefix + ".mean", {2}, {0.5f, 2.0f});
  b.Weight(prefix + ".var", {2}, {3.0f, 0.0f});
}
onnx::NodeProto& BatchNorm(OnnxBuilder& b, const std::string& in, const std::string& out,
                           const std::string& prefix) {
  auto& bn = b.Node("BatchNormalization",
                    {in, prefix + ".gamma", prefix + ".beta", prefix + ".mean", prefix + ".var"},
                    {out}, prefix);
  OnnxBuilder::AttrFloat(bn, "epsilon", 1.0f);
  return bn;
}
// s = gamma / sqrt(var + eps) with eps = 1: {2 / 2, 0.5 / 1}; shift = beta - mean * s.
constexpr float kScale[2] = {1.0f, 0.5f};
constexpr float kShift[2] = {0.5f, -2.0f};

TEST(CanonicalizeTest, BatchNormFoldsIntoConv) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 3, 3});
  b.Weight("w", {2, 1, 1, 1}, {3.0f, 4.0f});
  b.Weight("bias", {2}, {0.25f, 1.0f});
  AddBatchNormParams(b, "bn");
  b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
  BatchNorm(b, "c", "n", "bn");
  b.Node("Relu", {"n"}, {"y"}, "relu");
  b.Output("y");
  auto raw = ImportOnnxRaw(b.Bytes(), {});
  ASSERT_TRUE(raw.ok()) << raw.status();
  ASSERT_EQ(raw->ops.size(), 3u);
  EXPECT_EQ(raw->ops[1].raw_kind, RawOpKind::kBatchNorm);

  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kConv2d);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kRelu);
  EXPECT_EQ(g.tensor(g.ops[0].output).name, "y");
  const auto& conv = std::get<ConvAttrs>(g.ops[0].attrs);
  EXPECT_EQ(ConstantOf(g, conv.filter).data, (std::vector<float>{3.0f * kScale[0], 4.0f * kScale[1]}));
  EXPECT_EQ(ConstantOf(g, conv.bias).data,
            (std::vector<float>{0.25f * kScale[0] + kShift[0], 1.0f * kScale[1] + kShift[1]}));
  EXPECT_EQ(g.constants.size(), 2u);  // BN parameters and the unfolded weights are gone
}

TEST(CanonicalizeTest, BatchNormFoldsIntoMatMulWithoutBias) {
  OnnxBuilder b;
  b.Input("x", {1, 3});
  b.Weight("W", {3, 2}, {1, 2, 3, 4, 5, 6});
  AddBatchNormParams(b, "bn");
  b.Node("MatMul", {"x", "W"}, {"m"}, "fc");
  BatchNorm(b, "m", "y", "bn");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  const auto& fc = std::get<FullyConnectedAttrs>(g.ops[0].attrs);
  // [out][in] = W^T = {{1,3,5},{2,4,6}}, rows scaled.
  EXPECT_EQ(ConstantOf(g, fc.weight).data, (std::vector<float>{1, 3, 5, 1, 2, 3}));
  EXPECT_EQ(ConstantOf(g, fc.bias).data, (std::vector<float>{kShift[0], kShift[1]}));
}

TEST(CanonicalizeTest, BatchNormWithSharedProducerBecomesMulAdd) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  b.Weight("w", {2, 1, 1, 1}, {1.0f, 1.0f});
  AddBatchNormParams(b, "bn");
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  BatchNorm(b, "c", "n", "bn");
  b.Node("Add", {"c", "n"}, {"y"}, "residual");  // conv output read twice
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 4u);
  EXPECT_EQ(g.ops[1].kind, OpKind::kMul);
  EXPECT_EQ(g.ops[2].kind, OpKind::kAdd);
  const Tensor& scale = g.tensor(g.ops[1].inputs[1]);
  const Tensor& shift = g.tensor(g.ops[2].inputs[1]);
  EXPECT_EQ(scale.shape, (Shape{1, 1, 2}));
  EXPECT_EQ(ConstantOf(g, scale.constant).data, (std::vector<float>{kScale[0], kScale[1]}));
  EXPECT_EQ(ConstantOf(g, shift.constant).data, (std::vector<float>{kShift[0], kShift[1]}));
  // The conv itself keeps its original weights.
  EXPECT_EQ(ConstantOf(g, std::get<ConvAttrs>(g.ops[0].attrs).filter).data,
            (std::vector<float>{1.0f, 1.0f}));
  EXPECT_EQ(g.ops[3].inputs[0], g.ops[0].output);
  EXPECT_EQ(g.ops[3].inputs[1], g.ops[2].output);
}

TEST(CanonicalizeTest, BatchNormOnGraphInputBecomesMulAdd) {
  OnnxBuilder b;
  b.Input("x", {1, 2, 3, 3});
  AddBatchNormParams(b, "bn");
  BatchNorm(b, "x", "y", "bn");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(g.ops[0].kind, OpKind::kMul);
  EXPECT_EQ(g.ops[1].kind, OpKind::kAdd);
  EXPECT_EQ(g.outputs[0].tensor, g.ops[1].output);
}

TEST(CanonicalizeTest, FoldingDoesNotChangeSharedWeights) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  b.Weight("w", {2, 1, 1, 1}, {3.0f, 4.0f});
  AddBatchNormParams(b, "bn");
  b.Node("Identity", {"w"}, {"w_alias"}, "share");
  b.Node("Conv", {"x", "w"}, {"c1"}, "conv1");
  b.Node("Conv", {"x", "w_alias"}, {"c2"}, "conv2");
  BatchNorm(b, "c1", "n1", "bn");
  b.Node("Add", {"n1", "c2"}, {"y"}, "add");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 3u);
  EXPECT_EQ(ConstantOf(g, std::get<ConvAttrs>(g.ops[0].attrs).filter).data,
            (std::vector<float>{3.0f, 2.0f}));
  EXPECT_EQ(ConstantOf(g, std::get<ConvAttrs>(g.ops[1].attrs).filter).data,
            (std::vector<float>{3.0f, 4.0f}));
}

TEST(CanonicalizeTest, ReluThenClipBecomesOneClip) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  b.Weight("w", {2, 1, 1, 1});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.Node("Relu", {"c"}, {"r"}, "relu");
  b.ConstFloats("lo", {}, {-1.0f});
  b.ConstFloats("hi", {}, {6.0f});
  b.Node("Clip", {"r", "lo", "hi"}, {"y"}, "clip");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kClip);
  EXPECT_EQ(g.ops[0].activation.min, 0.0f);
  EXPECT_EQ(g.ops[0].activation.max, 6.0f);
}

TEST(CanonicalizeTest, SigmoidAfterReluIsNotMerged) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  b.Weight("w", {2, 1, 1, 1});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.Node("Relu", {"c"}, {"r"}, "relu");
  b.Node("Sigmoid", {"r"}, {"y"}, "sigmoid");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kRelu);
  EXPECT_EQ(g.ops[1].activation.kind, ActivationKind::kSigmoid);
}

TEST(CanonicalizeTest, ActivationWithSharedInputStaysStandalone) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  b.Weight("w", {2, 1, 1, 1});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.Node("Relu", {"c"}, {"r"}, "relu");
  b.Node("Add", {"c", "r"}, {"y"}, "add");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 3u);
  EXPECT_EQ(g.ops[0].activation.kind, ActivationKind::kNone);
  EXPECT_EQ(g.ops[1].kind, OpKind::kActivation);
  EXPECT_EQ(g.ops[1].activation.kind, ActivationKind::kRelu);
}

TEST(CanonicalizeTest, ActivationAfterGraphOutputStaysStandalone) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  b.Weight("w", {2, 1, 1, 1});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  b.Node("Relu", {"c"}, {"y"}, "relu");
  b.Output("c");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(g.outputs[0].tensor, g.ops[0].output);
  EXPECT_EQ(g.outputs[1].tensor, g.ops[1].output);
}

TEST(CanonicalizeTest, ActivationAfterConcatStaysStandalone) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  auto& cat = b.Node("Concat", {"x", "x"}, {"c"}, "concat");
  OnnxBuilder::AttrInt(cat, "axis", 1);
  b.Node("Relu", {"c"}, {"y"}, "relu");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 2u);
  EXPECT_EQ(g.ops[1].kind, OpKind::kActivation);
  EXPECT_FALSE(AcceptsFusedActivation(OpKind::kConcat));
  EXPECT_TRUE(AcceptsFusedActivation(OpKind::kAdd));
}

TEST(CanonicalizeTest, DeadBranchesAndTheirWeightsAreRemoved) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 2, 2});
  b.Weight("used", {2, 1, 1, 1});
  b.Weight("unused", {3, 1, 1, 1});
  b.Node("Conv", {"x", "used"}, {"y"}, "conv");
  b.Node("Conv", {"x", "unused"}, {"dead"}, "dead_conv");
  b.Node("Relu", {"dead"}, {"dead2"}, "dead_relu");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_EQ(g.ops[0].name, "conv");
  ASSERT_EQ(g.constants.size(), 1u);
  EXPECT_EQ(g.constants[0].name, "used");
  EXPECT_EQ(g.tensors.size(), 2u);
}

TEST(CanonicalizeTest, GraphOnlyFoldKeepsShapesWithoutData) {
  OnnxBuilder b;
  b.Input("x", {1, 1, 3, 3});
  b.Weight("w", {2, 1, 1, 1});
  b.Weight("bn.gamma", {2}).Weight("bn.beta", {2}).Weight("bn.mean", {2}).Weight("bn.var", {2});
  b.Node("Conv", {"x", "w"}, {"c"}, "conv");
  BatchNorm(b, "c", "y", "bn");
  b.Output("y");
  Graph g = MustImport(b);
  ASSERT_EQ(g.ops.size(), 1u);
  EXPECT_FALSE(g.has_weights);
  const auto& conv = std::get<ConvAttrs>(g.ops[0].attrs);
  ASSERT_NE(conv.bias, kInvalidId);
  EXPECT_EQ(ConstantOf(g, conv.bias).dims, (std::vector<int64_t>{2}));
  EXPECT_TRUE(ConstantOf(g, conv.bias).data.empty());
  EXPECT_TRUE(ConstantOf(g, conv.filter).data.empty());
}

}  // namespace
}  // namespace psched::model
