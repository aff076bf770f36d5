// End to end across model/ and executor/: the PyTorch-made models of tests/data/onnx
// (make_models.py) are imported, canonicalised and run by the reference kernels, the CPU
// executor and the co-execution runtime; all must reproduce PyTorch's output. mixed.onnx:
// BatchNorm after conv and MatMul, ReLU6, HardSwish, an SE-style broadcast, a flatten with
// h*w > 1 into an FC, ceil-mode pooling, F.pad, bilinear resize. residual.onnx: two residual
// blocks, whose adds the executors run inside the conv before them. unet_tiny.onnx: strided
// and grouped dilated ConvTranspose, a skip concat and a bilinear upsample.
#include <cmath>
#include <string>
#include <vector>

#include "executor/cpu/cpu_graph_executor.h"
#include "executor/layout.h"
#include "executor/npy.h"
#include "executor/reference/reference_kernels.h"
#include "executor/runtime/coexecution_runtime.h"
#include "executor/runtime/cpu_device.h"
#include "executor/testing/tensor_compare.h"
#include "gtest/gtest.h"
#include "model/onnx_import.h"
#include "source_dir.h"

namespace psched {
namespace {

using executor::testing::RelativeL2;

const std::string kDir = PSCHED_SOURCE_DIR "/tests/data/onnx/";

class PyTorchModelTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    const std::string stem = kDir + GetParam();
    auto graph = model::ImportOnnxFile(stem + ".onnx", {});
    ASSERT_TRUE(graph.ok()) << graph.status();
    graph_ = std::move(*graph);
    ASSERT_TRUE(graph_.has_weights);
    ASSERT_EQ(graph_.inputs.size(), 1u);
    ASSERT_EQ(graph_.outputs.size(), 1u);
    auto input = executor::ReadNpy(stem + ".input.npy");
    ASSERT_TRUE(input.ok()) << input.status();
    auto expected = executor::ReadNpy(stem + ".output.npy");
    ASSERT_TRUE(expected.ok()) << expected.status();
    const model::Tensor& in = graph_.tensor(graph_.inputs[0].tensor);
    input_nhwc_ = in.channels_last ? executor::NchwToNhwc(in.shape, input->data) : input->data;
    expected_ = expected->data;
  }

  // The graph's NHWC output in the model's declared (NCHW) layout.
  std::vector<float> ToDeclaredLayout(const std::vector<float>& nhwc) const {
    const model::Tensor& out = graph_.tensor(graph_.outputs[0].tensor);
    return out.channels_last ? executor::NhwcToNchw(out.shape, nhwc) : nhwc;
  }

  model::Graph graph_;
  std::vector<float> input_nhwc_;
  std::vector<float> expected_;
};

TEST_P(PyTorchModelTest, ReferenceKernelsMatchPyTorch) {
  auto outputs = executor::reference::RunGraph(graph_, {input_nhwc_});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  const std::vector<float> actual = ToDeclaredLayout((*outputs)[0]);
  ASSERT_EQ(actual.size(), expected_.size());
  EXPECT_LT(RelativeL2(actual, expected_), 1e-4);
}

TEST_P(PyTorchModelTest, CpuExecutorMatchesPyTorch) {
  for (int threads : {1, 2}) {
    auto exec = executor::cpu::CpuGraphExecutor::Create(graph_, {.cores = {}, .threads = threads});
    ASSERT_TRUE(exec.ok()) << exec.status();
    // residual.onnx's two blocks end in a conv and its add.
    EXPECT_EQ((*exec)->fused_residual_adds(), GetParam() == "residual" ? 2 : 0);
    // Twice: kernels are created once and must give the same answer on every run.
    for (int run = 0; run < 2; ++run) {
      auto outputs = (*exec)->Run(std::vector<std::vector<float>>{input_nhwc_});
      ASSERT_TRUE(outputs.ok()) << outputs.status();
      const std::vector<float> actual = ToDeclaredLayout((*outputs)[0]);
      ASSERT_EQ(actual.size(), expected_.size());
      EXPECT_LT(RelativeL2(actual, expected_), 1e-4) << threads << " threads, run " << run;
    }
  }
}

TEST_P(PyTorchModelTest, ClusterDeviceMatchesPyTorch) {
  auto cluster = executor::runtime::CpuDevice::Create("cpu", {0, 1}, 2);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  auto rt = executor::runtime::CoExecutionRuntime::Create(
      graph_, {cluster->get()}, executor::runtime::SingleDevicePlan(graph_));
  ASSERT_TRUE(rt.ok()) << rt.status();
  EXPECT_EQ((*rt)->fused_residual_adds(), GetParam() == "residual" ? 2 : 0);
  auto outputs = (*rt)->Run(std::vector<std::vector<float>>{input_nhwc_});
  ASSERT_TRUE(outputs.ok()) << outputs.status();
  EXPECT_LT(RelativeL2(ToDeclaredLayout((*outputs)[0]), expected_), 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Models, PyTorchModelTest,
                         ::testing::Values("mixed", "residual", "shuffle", "encoder", "encoder13",
                                           "sequence", "pooled_head", "unet_tiny"));

}  // namespace
}  // namespace psched
