// End to end across model/ and executor/: tests/data/onnx/mixed.onnx (made by
// tests/data/onnx/make_models.py with PyTorch: BatchNorm after conv and MatMul, ReLU6,
// HardSwish, an SE-style broadcast, a flatten with h*w > 1 into an FC, ceil-mode pooling,
// F.pad, bilinear resize) is imported, canonicalised and run by the reference kernels and
// by the XNNPACK executor; both must reproduce PyTorch's output.
#include <cmath>
#include <string>
#include <vector>

#include "executor/cpu/cpu_graph_executor.h"
#include "executor/layout.h"
#include "executor/npy.h"
#include "executor/reference/reference_kernels.h"
#include "executor/testing/tensor_compare.h"
#include "gtest/gtest.h"
#include "model/onnx_import.h"
#include "source_dir.h"

namespace psched {
namespace {

using executor::testing::RelativeL2;

const std::string kStem = PSCHED_SOURCE_DIR "/tests/data/onnx/mixed";

class MixedModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto graph = model::ImportOnnxFile(kStem + ".onnx", {});
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = std::move(*graph);
    ASSERT_TRUE(graph_.has_weights);
    ASSERT_EQ(graph_.inputs.size(), 1u);
    ASSERT_EQ(graph_.outputs.size(), 1u);
    auto input = executor::ReadNpy(kStem + ".input.npy");
    ASSERT_TRUE(input.ok()) << input.status();
    auto expected = executor::ReadNpy(kStem + ".output.npy");
    ASSERT_TRUE(expected.ok()) << expected.status();
    const model::Tensor& in = graph_.tensor(graph_.inputs[0].tensor);
    input_nhwc_ = in.onnx_rank == 4 ? executor::NchwToNhwc(in.shape, input->data) : input->data;
    expected_ = expected->data;
  }

  // The graph's NHWC output in the model's declared (NCHW) layout.
  std::vector<float> ToDeclaredLayout(const std::vector<float>& nhwc) const {
    const model::Tensor& out = graph_.tensor(graph_.outputs[0].tensor);
    return out.onnx_rank == 4 ? executor::NhwcToNchw(out.shape, nhwc) : nhwc;
  }

  model::Graph graph_;
  std::vector<float> input_nhwc_;
  std::vector<float> expected_;
};

TEST_F(MixedModelTest, ReferenceKernelsMatchPyTorch) {
  auto outputs = executor::reference::RunGraph(graph_, {input_nhwc_});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  const std::vector<float> actual = ToDeclaredLayout((*outputs)[0]);
  ASSERT_EQ(actual.size(), expected_.size());
  EXPECT_LT(RelativeL2(actual, expected_), 1e-4);
}

TEST_F(MixedModelTest, XnnpackExecutorMatchesPyTorch) {
  auto exec = executor::cpu::CpuGraphExecutor::Create(graph_, {.cores = {}, .threads = 1});
  ASSERT_TRUE(exec.ok()) << exec.status();
  // Twice: kernels are created once and must give the same answer on every run.
  for (int run = 0; run < 2; ++run) {
    auto outputs = (*exec)->Run(std::vector<std::vector<float>>{input_nhwc_});
    ASSERT_TRUE(outputs.ok()) << outputs.status();
    const std::vector<float> actual = ToDeclaredLayout((*outputs)[0]);
    ASSERT_EQ(actual.size(), expected_.size());
    EXPECT_LT(RelativeL2(actual, expected_), 1e-4) << "run " << run;
  }
}

}  // namespace
}  // namespace psched
