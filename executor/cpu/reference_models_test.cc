// End-to-end accuracy: the full-weight reference models run through the CPU executor must
// reproduce the outputs PyTorch computed for the stored inputs.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "executor/cpu/cpu_graph_executor.h"
#include "executor/layout.h"
#include "executor/npy.h"
#include "executor/reference/reference_kernels.h"
#include "gtest/gtest.h"
#include "model/onnx_import.h"
#include "source_dir.h"

namespace psched::executor::cpu {
namespace {

std::string ReferenceDir() {
  const char* dir = std::getenv("PSCHED_SHARED_DIR");
  return std::string(dir != nullptr ? dir : PSCHED_SOURCE_DIR "/../shared") + "/models/reference/";
}

struct ErrorStats {
  double relative_l2 = 0.0;
  double max_abs = 0.0;
};

ErrorStats Compare(const std::vector<float>& actual, const std::vector<float>& expected) {
  double diff = 0.0, norm = 0.0;
  ErrorStats stats;
  for (size_t i = 0; i < expected.size(); ++i) {
    const double d = double{actual[i]} - expected[i];
    diff += d * d;
    norm += double{expected[i]} * expected[i];
    stats.max_abs = std::max(stats.max_abs, std::fabs(d));
  }
  stats.relative_l2 = std::sqrt(diff / norm);
  return stats;
}

class ReferenceModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(ReferenceModelTest, MatchesPyTorchOutput) {
  const std::string stem = ReferenceDir() + GetParam();
  auto graph = model::ImportOnnxFile(stem + ".onnx", {});
  ASSERT_TRUE(graph.ok()) << graph.status();
  ASSERT_EQ(graph->inputs.size(), 1u);
  ASSERT_EQ(graph->outputs.size(), 1u);
  auto input = ReadNpy(stem + ".input.npy");
  ASSERT_TRUE(input.ok()) << input.status();
  auto expected = ReadNpy(stem + ".output.npy");
  ASSERT_TRUE(expected.ok()) << expected.status();

  const model::Shape in_shape = graph->tensor(graph->inputs[0].tensor).shape;
  const model::Shape out_shape = graph->tensor(graph->outputs[0].tensor).shape;
  ASSERT_EQ(static_cast<int64_t>(input->data.size()), in_shape.Elements());
  ASSERT_EQ(static_cast<int64_t>(expected->data.size()), out_shape.Elements());

  auto exec = CpuGraphExecutor::Create(*graph, {.cores = {}, .threads = 1});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto outputs = (*exec)->Run({NchwToNhwc(in_shape, input->data)});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  const ErrorStats stats = Compare(NhwcToNchw(out_shape, (*outputs)[0]), expected->data);
  std::printf(
      "%s: %zu ops, arena %.1f MiB, %lld concat inputs in place, relative L2 %.3g, "
      "max abs error %.3g\n",
      GetParam(), graph->ops.size(),
      static_cast<double>((*exec)->arena_plan().size) * 4.0 / (1 << 20),
      static_cast<long long>((*exec)->arena_plan().in_place_concat_inputs), stats.relative_l2,
      stats.max_abs);
  EXPECT_LE(stats.relative_l2, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Models, ReferenceModelTest,
                         ::testing::Values("squeezenet_v1_1", "peleenet"));

}  // namespace
}  // namespace psched::executor::cpu
