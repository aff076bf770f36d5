#include "model/onnx_import.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "model/inspect.h"
#include "model/op_cost.h"

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
    std::cout << name << ": " << InspectJson(*g).dump() << "\n";
  }
}

}  // namespace
}  // namespace psched::model
