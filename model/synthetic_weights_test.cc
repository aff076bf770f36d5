#include "model/synthetic_weights.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace psched::model {
namespace {

using ::psched::model::testing::OnnxBuilder;

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : "/work/shared";
}

// Graph-only conv (weights absent) followed by a mul whose scalar the file does carry.
OnnxBuilder ConvAndScale() {
  OnnxBuilder b;
  b.Input("x", {1, 3, 8, 8});
  b.Weight("w", {16, 3, 3, 3}).Weight("bias", {16});
  b.Node("Conv", {"x", "w", "bias"}, {"c"}, "conv");
  b.Node("Relu", {"c"}, {"r"}, "relu");
  b.ConstFloats("scale", {}, {0.25f});
  b.Node("Mul", {"r", "scale"}, {"y"}, "mul");
  b.Output("y");
  return b;
}

Graph Import(const OnnxBuilder& b, bool synthesize, uint64_t seed) {
  ImportOptions options;
  options.synthesize_weights = synthesize;
  options.seed = seed;
  auto g = ImportOnnx(b.Bytes(), options);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *std::move(g) : Graph{};
}

TEST(SyntheticWeightsTest, GraphOnlyWithoutSynthesisHasNoData) {
  Graph g = Import(ConvAndScale(), false, 0);
  EXPECT_FALSE(g.has_weights);
  for (const Constant& c : g.constants) EXPECT_TRUE(c.data.empty()) << c.name;
}

TEST(SyntheticWeightsTest, FillsEveryConstantWithinHeUniformBounds) {
  Graph g = Import(ConvAndScale(), true, 7);
  EXPECT_TRUE(g.has_weights);
  ASSERT_EQ(g.ops.size(), 2u);
  const auto& conv = std::get<ConvAttrs>(g.ops[0].attrs);
  const Constant& filter = g.constants[static_cast<size_t>(conv.filter)];
  ASSERT_EQ(filter.data.size(), 16u * 27u);
  // ReLU follows: He-uniform, limit sqrt(2) * sqrt(3 / 27) = sqrt(6 / 27).
  const float limit = std::sqrt(6.0f / 27.0f);
  double sum_sq = 0;
  for (float v : filter.data) {
    EXPECT_LE(std::abs(v), limit);
    sum_sq += v * v;
  }
  // Variance of U(-l, l) is l^2 / 3.
  EXPECT_NEAR(sum_sq / filter.data.size(), limit * limit / 3, 0.25 * limit * limit / 3);
  for (float v : g.constants[static_cast<size_t>(conv.bias)].data) EXPECT_LE(std::abs(v), 0.05f);
  // The real scalar the file carries is kept.
  const Tensor& scale = g.tensor(g.ops[1].inputs[1]);
  EXPECT_EQ(g.constants[static_cast<size_t>(scale.constant)].data, (std::vector<float>{0.25f}));
}

TEST(SyntheticWeightsTest, DeterministicPerSeed) {
  Graph a = Import(ConvAndScale(), true, 7);
  Graph b = Import(ConvAndScale(), true, 7);
  Graph c = Import(ConvAndScale(), true, 8);
  ASSERT_EQ(a.constants.size(), b.constants.size());
  for (size_t i = 0; i < a.constants.size(); ++i) {
    EXPECT_EQ(a.constants[i].data, b.constants[i].data) << a.constants[i].name;
  }
  const auto filter = static_cast<size_t>(std::get<ConvAttrs>(a.ops[0].attrs).filter);
  EXPECT_NE(a.constants[filter].data, c.constants[filter].data);
}

TEST(SyntheticWeightsTest, RealWeightsAreNeverReplaced) {
  const std::string path = SharedDir() + "/models/reference/squeezenet_v1_1.onnx";
  ImportOptions synth;
  synth.synthesize_weights = true;
  auto real = ImportOnnxFile(path, {});
  auto with_synth = ImportOnnxFile(path, synth);
  ASSERT_TRUE(real.ok()) << real.status();
  ASSERT_TRUE(with_synth.ok()) << with_synth.status();
  ASSERT_EQ(real->constants.size(), with_synth->constants.size());
  for (size_t i = 0; i < real->constants.size(); ++i) {
    EXPECT_EQ(real->constants[i].data, with_synth->constants[i].data);
  }
}

TEST(SyntheticWeightsTest, GraphOnlyModelBecomesComplete) {
  ImportOptions synth;
  synth.synthesize_weights = true;
  synth.seed = 1;
  auto g = ImportOnnxFile(SharedDir() + "/models/graph-only/squeezenet_v1_0.onnx", synth);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->has_weights);
  for (const Constant& c : g->constants) {
    EXPECT_EQ(static_cast<int64_t>(c.data.size()), c.Elements()) << c.name;
  }
}

}  // namespace
}  // namespace psched::model
