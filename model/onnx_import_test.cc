#include "model/onnx_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>

#include "model/inspect.h"
#include "model/op_cost.h"
#include "source_dir.h"

namespace psched::model {
namespace {

std::string SharedDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return dir != nullptr ? dir : "/work/shared";
}

// model name -> the paper's conv column.
std::map<std::string, int> PaperConvCounts() {
  std::ifstream csv(SharedDir() + "/paper-tables/models.csv");
  std::map<std::string, int> counts;
  std::string line;
  std::getline(csv, line);  // header: model,conv,ops
  while (std::getline(csv, line)) {
    std::stringstream row(line);
    std::string name, conv;
    std::getline(row, name, ',');
    std::getline(row, conv, ',');
    counts[name] = std::stoi(conv);
  }
  return counts;
}

int CountKind(const Graph& g, OpKind kind) {
  int n = 0;
  for (const Op& op : g.ops) n += op.kind == kind ? 1 : 0;
  return n;
}

TEST(OnnxImportTest, AllGraphOnlyModelsMatchPaperConvCounts) {
  const auto counts = PaperConvCounts();
  ASSERT_EQ(counts.size(), 18u);
  for (const auto& [name, conv] : counts) {
    SCOPED_TRACE(name);
    auto g = ImportOnnxFile(SharedDir() + "/models/graph-only/" + name + ".onnx", {});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_EQ(CountKind(*g, OpKind::kConv2d), conv);
    EXPECT_FALSE(g->has_weights);
    EXPECT_EQ(g->name, name);
    for (const Constant& c : g->constants) EXPECT_TRUE(c.data.empty()) << c.name;
    ASSERT_EQ(g->inputs.size(), 1u);
    EXPECT_EQ(g->inputs[0].onnx_dims, (std::vector<int64_t>{1, 3, 224, 224}));
    EXPECT_EQ(g->tensor(g->inputs[0].tensor).shape, (Shape{224, 224, 3}));
    ASSERT_EQ(g->outputs.size(), 1u);
    EXPECT_EQ(g->outputs[0].onnx_dims, (std::vector<int64_t>{1, 1000}));
    EXPECT_EQ(g->tensor(g->outputs[0].tensor).shape, (Shape{1, 1, 1000}));
    // Topological order: every activation input is produced earlier.
    for (OpId i = 0; i < static_cast<OpId>(g->ops.size()); ++i) {
      for (OpId p : g->Predecessors(i)) EXPECT_LT(p, i);
    }
    std::cout << name << ": ops " << g->ops.size() << ", conv2d " << conv << ", flops "
              << GraphFlops(*g) << ", params " << GraphParams(*g) << "\n";
  }
}

TEST(OnnxImportTest, ReferenceModelsImportWithWeights) {
  for (const auto& [name, conv] :
       std::map<std::string, int>{{"squeezenet_v1_1", 26}, {"peleenet", 113}}) {
    SCOPED_TRACE(name);
    auto g = ImportOnnxFile(SharedDir() + "/models/reference/" + name + ".onnx", {});
    ASSERT_TRUE(g.ok()) << g.status();
    EXPECT_TRUE(g->has_weights);
    for (const Constant& c : g->constants) {
      EXPECT_EQ(static_cast<int64_t>(c.data.size()), c.Elements()) << c.name;
    }
    // peleenet keeps BatchNormalization nodes: all fold, leaving the graph-only op list.
    EXPECT_EQ(CountKind(*g, OpKind::kConv2d), conv);
    EXPECT_EQ(CountKind(*g, OpKind::kMul), 0);
    EXPECT_EQ(CountKind(*g, OpKind::kActivation), 0);
    auto graph_only = ImportOnnxFile(SharedDir() + "/models/graph-only/" + name + ".onnx", {});
    ASSERT_TRUE(graph_only.ok()) << graph_only.status();
    EXPECT_EQ(g->ops.size(), graph_only->ops.size());
    EXPECT_EQ(GraphParams(*g), GraphParams(*graph_only));
  }
}

// tests/data/onnx/mixed.onnx (make_models.py): PyTorch's own export of many edge cases.
// The numbers below are what canonicalisation must leave; its output matches PyTorch's
// within 5e-7 when run through executor/reference (checked outside this unit test, which
// must not depend on the executor).
TEST(OnnxImportTest, MixedTorchExport) {
  auto g = ImportOnnxFile(std::string(PSCHED_SOURCE_DIR) + "/tests/data/onnx/mixed.onnx", {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(g->has_weights);
  const std::map<OpKind, int> expected = {{OpKind::kConv2d, 5},    {OpKind::kFullyConnected, 2},
                                          {OpKind::kFlatten, 1},   {OpKind::kResize, 1},
                                          {OpKind::kPad, 1},       {OpKind::kAvgPool, 3},
                                          {OpKind::kMaxPool, 1},   {OpKind::kConcat, 1},
                                          {OpKind::kSub, 1},       {OpKind::kAdd, 1},
                                          {OpKind::kMul, 3},       {OpKind::kGlobalAvgPool, 1}};
  int total = 0;
  for (const auto& [kind, count] : expected) {
    EXPECT_EQ(CountKind(*g, kind), count) << OpKindName(kind);
    total += count;
  }
  EXPECT_EQ(static_cast<int>(g->ops.size()), total);
  // ReLU then Clip(0, 6) became one fused clip on the first conv (with BN folded in).
  EXPECT_EQ(g->ops[0].kind, OpKind::kConv2d);
  EXPECT_EQ(g->ops[0].activation.kind, ActivationKind::kClip);
  EXPECT_EQ(g->ops[0].activation.max, 6.0f);
  // HardSigmoid(x; 1/6, 1/2) * x, opset 13's HardSwish, became one fused activation.
  int hard_swish = 0;
  for (const Op& op : g->ops) hard_swish += op.activation.kind == ActivationKind::kHardSwish;
  EXPECT_EQ(hard_swish, 1);
  // The flatten of [1,14,4,4] feeds the first fully-connected layer.
  for (OpId i = 0; i < static_cast<OpId>(g->ops.size()); ++i) {
    if (g->ops[static_cast<size_t>(i)].kind != OpKind::kFullyConnected) continue;
    EXPECT_EQ(g->op(g->Predecessors(i)[0]).kind, OpKind::kFlatten);
    EXPECT_EQ(g->tensor(g->op(i).inputs[0]).shape, (Shape{1, 1, 224}));
    break;
  }
}

// Reports import times (no threshold: wall-clock limits do not belong in unit tests).
TEST(OnnxImportTest, ImportTimes) {
  for (const std::string name : {"inceptionv3", "hrnetv2_w64"}) {
    const std::string path = SharedDir() + "/models/graph-only/" + name + ".onnx";
    double best_ms = 1e9;
    for (int run = 0; run < 3; ++run) {
      const auto start = std::chrono::steady_clock::now();
      auto g = ImportOnnxFile(path, {});
      const auto end = std::chrono::steady_clock::now();
      ASSERT_TRUE(g.ok()) << g.status();
      best_ms = std::min(best_ms, std::chrono::duration<double, std::milli>(end - start).count());
    }
    std::cout << name << " graph-only import: " << best_ms << " ms (best of 3)\n";
  }
}

}  // namespace
}  // namespace psched::model
