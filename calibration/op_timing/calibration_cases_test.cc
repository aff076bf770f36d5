#include "calibration/op_timing/calibration_cases.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>
#include <string>

#include "calibration/op_timing/transformer_shapes.h"
#include "model/onnx_import.h"
#include "model/op_validation.h"
#include "model/synthetic_weights.h"
#include "predictor/gbdt/features.h"
#include "predictor/host_model/calibration_samples.h"

namespace psched::calibration {
namespace {

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : "/work/shared";
}

model::Graph Import(const std::string& name) {
  absl::StatusOr<model::Graph> g = model::ImportOnnxFile(
      SharedDir() + "/models/graph-only/" + name + ".onnx", model::ImportOptions{});
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? std::move(*g) : model::Graph{};
}

model::Graph Squeezenet() { return Import("squeezenet_v1_1"); }

std::string Key(const predictor::OpConfig& c) {
  return predictor::host_model::OpConfigToJson(c).dump();
}

TEST(ExtractOpTest, OneOpGraphHasTheSameConfiguration) {
  const model::Graph g = Squeezenet();
  ASSERT_FALSE(g.ops.empty());
  for (model::OpId id = 0; id < static_cast<model::OpId>(g.ops.size()); ++id) {
    const model::Graph one = ExtractOp(g, id);
    ASSERT_EQ(one.ops.size(), 1u);
    // The same but for where the output lives: the op alone writes a tensor of its own.
    predictor::OpConfig in_model = predictor::WholeOpConfig(g, id);
    in_model.output_pixel_stride = 0;
    EXPECT_EQ(Key(predictor::WholeOpConfig(one, 0)), Key(in_model)) << g.op(id).name;
    for (model::TensorId t : one.ActivationInputs(0)) {
      EXPECT_TRUE(std::any_of(one.inputs.begin(), one.inputs.end(),
                              [t](const model::GraphIO& io) { return io.tensor == t; }));
    }
    EXPECT_EQ(one.output_shape(0), g.output_shape(id));
    for (model::SplitAxis axis : model::kAllSplitAxes) {
      EXPECT_EQ(model::WorkSize(one, 0, axis), model::WorkSize(g, id, axis));
    }
  }
}

TEST(BuildCasesTest, DistinctConfigurationsWithSlicesInterleavedByCategory) {
  const model::Graph g = Squeezenet();
  const std::vector<model::Graph> models = {g, g};  // the second copy adds nothing
  const std::vector<CalibrationCase> cases = BuildCases(models);
  ASSERT_GT(cases.size(), 20u);
  std::set<std::string> keys;
  std::set<std::string> categories;
  int slices = 0;
  int strided = 0;
  for (const CalibrationCase& c : cases) {
    EXPECT_TRUE(keys.insert(Key(c.config)).second) << "duplicate " << c.source;
    categories.insert(c.category);
    ASSERT_EQ(c.graph->ops.size(), 1u);
    // The case keeps where its op writes in the model (the runner times it so).
    predictor::OpConfig alone = c.config;
    if (alone.output_pixel_stride != 0) {
      ++strided;
      EXPECT_GT(alone.output_pixel_stride, c.graph->output_shape(0).c) << c.source;
      alone.output_pixel_stride = 0;
    }
    EXPECT_EQ(Key(alone), Key(predictor::SubtaskConfig(*c.graph, 0, c.axis, c.begin, c.end)));
    if (c.axis != model::SplitAxis::kNone) {
      ++slices;
      EXPECT_LT(c.begin, c.end);
      EXPECT_LE(c.end, model::WorkSize(*c.graph, 0, c.axis));
      EXPECT_THAT(c.category, ::testing::EndsWith("/slice"));
    }
  }
  EXPECT_GT(slices, 10);
  // squeezenet's expand convs write into their fire module's concat: 4 shapes x 1x1 and 3x3,
  // whole and cut.
  EXPECT_GT(strided, 8);
  EXPECT_TRUE(categories.contains("conv_1x1"));
  EXPECT_TRUE(categories.contains("conv_3x3"));
  EXPECT_TRUE(categories.contains("concat"));
  EXPECT_TRUE(categories.contains("pool"));
  // Round-robin: the first |categories| cases cover every category.
  std::set<std::string> head;
  for (size_t i = 0; i < categories.size(); ++i) head.insert(cases[i].category);
  EXPECT_EQ(head, categories);
}

TEST(BuildCasesTest, SeededAndOptionalSlices) {
  const std::vector<model::Graph> models = {Squeezenet()};
  const std::vector<CalibrationCase> a =
      BuildCases(models, {.seed = 3, .include_slices = true, .priority_models = {}});
  const std::vector<CalibrationCase> b =
      BuildCases(models, {.seed = 3, .include_slices = true, .priority_models = {}});
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].source, b[i].source);
  const std::vector<CalibrationCase> whole =
      BuildCases(models, {.seed = 3, .include_slices = false, .priority_models = {}});
  EXPECT_LT(whole.size(), a.size());
  for (const CalibrationCase& c : whole) EXPECT_EQ(c.axis, model::SplitAxis::kNone);
  EXPECT_TRUE(BuildCases(std::vector<model::Graph>{}, {.transformer_shapes = false}).empty());
}

TEST(BuildCasesTest, PriorityModelsLeadEveryCategoryWithAllSliceSizes) {
  const std::vector<model::Graph> models = {Squeezenet(), Import("peleenet")};
  ASSERT_EQ(models[1].name, "peleenet");
  const std::vector<CalibrationCase> cases =
      BuildCases(models, {.seed = 1, .include_slices = true, .priority_models = {"peleenet"}});
  std::set<std::string> categories_with_others;
  std::map<std::string, int> cout_slices;  // per priority op
  int priority = 0;
  for (const CalibrationCase& c : cases) {
    EXPECT_EQ(c.priority, c.source.starts_with("peleenet/")) << c.source;
    if (!c.priority) {
      categories_with_others.insert(c.category);
      continue;
    }
    ++priority;
    EXPECT_FALSE(categories_with_others.contains(c.category))
        << c.source << " comes after another model's " << c.category << " case";
    if (const size_t at = c.source.find(" cout["); at != std::string::npos) {
      ++cout_slices[c.source.substr(0, at)];
    }
  }
  EXPECT_GT(priority, 100);
  EXPECT_FALSE(categories_with_others.empty());
  int with_three = 0;
  for (const auto& [op, n] : cout_slices) {
    EXPECT_LE(n, 3) << op;
    with_three += n == 3 ? 1 : 0;
  }
  EXPECT_GT(with_three, 20);
  // Without priorities the same models give one slice per axis and op.
  for (const CalibrationCase& c : BuildCases(models)) EXPECT_FALSE(c.priority) << c.source;
}

TEST(TransformerShapesTest, EveryGraphIsValidAndEveryNewFamilyHasCases) {
  const std::vector<model::Graph> graphs = TransformerShapeGraphs();
  ASSERT_EQ(graphs.size(), 4u);
  for (model::Graph g : graphs) {
    model::SynthesizeWeights(1, &g);  // as the runner does
    for (model::OpId id = 0; id < static_cast<model::OpId>(g.ops.size()); ++id) {
      EXPECT_TRUE(model::ValidateOp(g, id).ok()) << g.name << ": " << model::ValidateOp(g, id);
    }
  }
  const std::vector<CalibrationCase> cases = BuildCases(std::vector<model::Graph>{});
  std::map<std::string, int> per_category;
  std::map<predictor::gbdt::OpFamily, int> per_family;
  std::set<std::string> groups;
  for (const CalibrationCase& c : cases) {
    ++per_category[c.category];
    ++per_family[predictor::gbdt::FamilyOf(c.config)];
    groups.insert(c.source.substr(0, c.source.find('/')));
    // The one-op graph keeps the tensors' dims, so its configuration is the same.
    EXPECT_EQ(Key(predictor::SubtaskConfig(*c.graph, 0, c.axis, c.begin, c.end)), Key(c.config))
        << c.source;
  }
  EXPECT_EQ(groups, (std::set<std::string>{"shapes_small", "shapes_swin_t", "shapes_vit_b16",
                                           "shapes_vit_b32"}));
  // Per attention block (6 of them): Q.K^T and A.V; the softmax and layer norm; the qkv
  // transpose, slice, K^T, head merge and reshape. Per ViT head (4): a copying concat, a slice
  // and a mean; Swin adds its window partition and a mean.
  EXPECT_EQ(per_category["matmul"], 6 * 2);
  // Each matmul also has a slice of its rows (heads), its columns and its reduction K.
  EXPECT_EQ(per_family[predictor::gbdt::OpFamily::kMatMul], 6 * 2 * (1 + 3));
  // The softmax and layer norm of each block have a row slice too; the means have none.
  EXPECT_EQ(per_family[predictor::gbdt::OpFamily::kNormalization], 6 * 2 * 2 + 4 + 1);
  EXPECT_EQ(per_family[predictor::gbdt::OpFamily::kDataMovement], 6 * 5 + 4 * 2 + 1);
  // 24 token-matrix FCs, each with a cout, a cin and a token-row slice, less 3 slices equal to
  // a whole op (seed 1 cuts Swin stage 1's 96 -> 384 MLP to 288 outputs, its qkv layer).
  EXPECT_EQ(per_category["fully_connected"], 24);
  EXPECT_EQ(per_category["fully_connected/slice"], 24 * 3 - 3);
  // With a GELU, a residual add and a division per block, each with a row slice as well:
  // docs/calibration.md's count.
  EXPECT_EQ(per_category["elementwise"], 6 * 3);
  EXPECT_EQ(cases.size(), 245u);
  const CalibrationCase* scores = nullptr;
  for (const CalibrationCase& c : cases) {
    if (c.source.starts_with("shapes_vit_b16/") && c.source.ends_with("'block/scores'")) {
      scores = &c;
    }
  }
  ASSERT_NE(scores, nullptr);
  EXPECT_EQ(scores->config.matmul, (predictor::MatMulDims{12, 197, 197, 64, 12, 12}));
}

}  // namespace
}  // namespace psched::calibration
