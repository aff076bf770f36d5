#include "model/inspect.h"

#include <gtest/gtest.h>

#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"
#include "model/op_cost.h"

namespace psched::model {
namespace {

using ::psched::model::testing::OnnxBuilder;

// x [1,3,8,8] -> conv 4x3x3x3 pad 1 (+relu) -> avg pool 2x2 -> global avg pool -> fc 10.
Graph SmallNet() {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  b.Weight("w", {4, 3, 3, 3}).Weight("bias", {4}).Weight("fc.w", {10, 4}).Weight("fc.b", {10});
  auto& conv = b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
  OnnxBuilder::AttrInts(conv, "pads", {1, 1, 1, 1});
  b.Node("Relu", {"c"}, {"r"}, "relu");
  auto& pool = b.Node("AveragePool", {"r"}, {"a"}, "pool");
  OnnxBuilder::AttrInts(pool, "kernel_shape", {2, 2});
  OnnxBuilder::AttrInts(pool, "strides", {2, 2});
  b.Node("GlobalAveragePool", {"a"}, {"p"}, "gap");
  b.Node("Flatten", {"p"}, {"f"}, "flatten");
  auto& gemm = b.Node("Gemm", {"f", "fc.w", "fc.b"}, {"y"}, "fc");
  OnnxBuilder::AttrInt(gemm, "transB", 1);
  b.Output("y", {1, 10});
  auto g = ImportOnnx(b.Bytes(), {.name = "small"});
  EXPECT_TRUE(g.ok()) << g.status();
  return *std::move(g);
}

TEST(OpCostTest, CountsMultiplyAddsAsTwo) {
  Graph g = SmallNet();
  ASSERT_EQ(g.ops.size(), 4u);
  // conv: 8*8*4 outputs * 27 MACs * 2, plus the fused relu on 256 outputs.
  EXPECT_EQ(OpFlops(g, 0), 2 * 256 * 27 + 256);
  EXPECT_EQ(OpFlops(g, 1), 4 * 4 * 4 * 4);  // avg pool: 64 outputs * 4 taps
  EXPECT_EQ(OpFlops(g, 2), 4 * 4 * 4);      // global pool reads 64 values
  EXPECT_EQ(OpFlops(g, 3), 2 * 4 * 10);
  EXPECT_EQ(OpParams(g, 0), 108 + 4);
  EXPECT_EQ(OpParams(g, 1), 0);
  EXPECT_EQ(OpParams(g, 3), 40 + 10);
  EXPECT_EQ(GraphFlops(g), 14080 + 256 + 64 + 80);
  EXPECT_EQ(GraphParams(g), 162);
}

TEST(InspectTest, JsonSummary) {
  const nlohmann::json j = InspectJson(SmallNet());
  EXPECT_EQ(j["name"], "small");
  EXPECT_EQ(j["ops"], 4);
  EXPECT_EQ(j["op_counts"]["conv2d"], 1);
  EXPECT_EQ(j["op_counts"]["avg_pool"], 1);
  EXPECT_EQ(j["op_counts"]["fully_connected"], 1);
  EXPECT_EQ(j["op_counts"]["softmax"], 0);
  EXPECT_EQ(j["op_counts"].size(), static_cast<size_t>(kNumOpKinds));
  EXPECT_EQ(j["fused_activations"], 1);
  EXPECT_EQ(j["flops"], 14480);
  EXPECT_EQ(j["params"], 162);
  EXPECT_EQ(j["has_weights"], false);
  EXPECT_EQ(j["inputs"][0]["name"], "x");
  EXPECT_EQ(j["inputs"][0]["dims"], nlohmann::json({1, 3, 8, 8}));
  EXPECT_EQ(j["outputs"][0]["dims"], nlohmann::json({1, 10}));
}

}  // namespace
}  // namespace psched::model
