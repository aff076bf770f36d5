#include "executor/cpu/cpu_kernel.h"

#include <cmath>
#include <vector>

#include "executor/common/activation.h"
#include "executor/reference/reference_kernels.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psched::executor::cpu {
namespace {

using model::OpKind;
using model::SplitAxis;
using testing::GraphBuilder;
using ::testing::HasSubstr;
using testing::RandomVector;

struct SlicedOp {
  model::Graph graph;
  std::vector<float> input;
  std::vector<float> expected;
};

SlicedOp ConvOp(int64_t groups, model::Activation act) {
  GraphBuilder b;
  const model::Shape in{7, 6, 4 * groups};
  auto x = b.AddInput(in);
  model::ConvAttrs conv;
  conv.window = {.kernel_h = 3,
                 .kernel_w = 2,
                 .stride_h = 2,
                 .stride_w = 1,
                 .dilation_h = 1,
                 .dilation_w = 2,
                 .pad_top = 1,
                 .pad_left = 1,
                 .pad_bottom = 2,
                 .pad_right = 0};
  conv.groups = static_cast<int32_t>(groups);
  const int64_t cout = 3 * groups;
  conv.filter =
      b.AddConstant({cout, 3, 2, 4}, RandomVector(static_cast<size_t>(cout * 3 * 2 * 4), 1));
  conv.bias = b.AddConstant({cout}, RandomVector(static_cast<size_t>(cout), 2));
  // Rows: (7 + 3 - 3) / 2 + 1 = 4; columns: (6 + 1 - 3) / 1 + 1 = 5.
  b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, {4, 5, cout}, conv, act));
  SlicedOp op{b.Build(), RandomVector(static_cast<size_t>(in.Elements()), 3), {}};
  op.expected = (*reference::RunGraph(op.graph, {op.input}))[0];
  return op;
}

SlicedOp FcOp(model::Activation act) {
  GraphBuilder b;
  auto x = b.AddInput({1, 1, 37});
  model::FullyConnectedAttrs fc;
  fc.weight = b.AddConstant({11, 37}, RandomVector(11 * 37, 4));
  fc.bias = b.AddConstant({11}, RandomVector(11, 5));
  b.MarkOutput(b.AddOp(OpKind::kFullyConnected, {x}, {1, 1, 11}, fc, act));
  SlicedOp op{b.Build(), RandomVector(37, 6), {}};
  op.expected = (*reference::RunGraph(op.graph, {op.input}))[0];
  return op;
}

// Runs op 0 as the slices [cuts[k], cuts[k+1]) of `axis` into one output buffer and compares
// with the reference. cin slices accumulate into a zeroed output, then the activation is
// applied once.
void ExpectSlicesMatch(const SlicedOp& op, SplitAxis axis, const std::vector<int64_t>& cuts) {
  const model::Shape in_shape = op.graph.tensor(op.graph.inputs[0].tensor).shape;
  const model::Shape out_shape = op.graph.output_shape(0);
  std::vector<float> input = op.input;
  std::vector<float> output(static_cast<size_t>(out_shape.Elements()) + 16, 0.0f);
  input.resize(input.size() + 16);  // XNNPACK may read past the end
  const TensorView in{input.data(), in_shape, in_shape.c};
  const TensorView out{output.data(), out_shape, out_shape.c};
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    auto kernel = CreateCpuKernel(op.graph, 0, {axis, cuts[k], cuts[k + 1]}, {}, nullptr);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    ASSERT_TRUE((*kernel)->Setup({&in, 1}, out).ok());
    ASSERT_TRUE((*kernel)->Run().ok());
  }
  if (axis == SplitAxis::kInputChannels) ApplyActivationInPlace(op.graph.op(0).activation, out);
  for (size_t i = 0; i < op.expected.size(); ++i) {
    ASSERT_NEAR(output[i], op.expected[i], 1e-4 * (1.0 + std::fabs(op.expected[i])))
        << "axis " << model::SplitAxisName(axis) << " element " << i;
  }
}

const model::Activation kRelu{.kind = model::ActivationKind::kRelu};
const model::Activation kSigmoid{.kind = model::ActivationKind::kSigmoid};

TEST(CpuKernelSlices, DenseConvEveryAxis) {
  for (const model::Activation& act : {kRelu, kSigmoid}) {
    const SlicedOp op = ConvOp(1, act);
    ExpectSlicesMatch(op, SplitAxis::kNone, {0, 1});
    ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, 1, 3});
    ExpectSlicesMatch(op, SplitAxis::kRows, {0, 1, 3, 4});
    ExpectSlicesMatch(op, SplitAxis::kInputChannels, {0, 3, 4});
  }
}

TEST(CpuKernelSlices, GroupedConvSplitsWholeGroupsAndRows) {
  const SlicedOp op = ConvOp(3, kRelu);
  ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, 2, 3});
  ExpectSlicesMatch(op, SplitAxis::kRows, {0, 2, 4});
  auto cin = CreateCpuKernel(op.graph, 0, {SplitAxis::kInputChannels, 0, 2}, {}, nullptr);
  EXPECT_EQ(cin.status().code(), absl::StatusCode::kUnimplemented);
}

TEST(CpuKernelSlices, FullyConnectedCoutAndCin) {
  for (const model::Activation& act : {kRelu, kSigmoid}) {
    const SlicedOp op = FcOp(act);
    ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, 4, 5, 11});
    ExpectSlicesMatch(op, SplitAxis::kInputChannels, {0, 10, 36, 37});
  }
}

TEST(CpuKernelSlices, RejectsSlicesOutsideTheWork) {
  const SlicedOp op = ConvOp(1, kRelu);
  EXPECT_THAT(
      CreateCpuKernel(op.graph, 0, {SplitAxis::kRows, 2, 5}, {}, nullptr).status().ToString(),
      HasSubstr("outside [0, 4)"));
  EXPECT_THAT(CreateCpuKernel(op.graph, 0, {SplitAxis::kOutputChannels, 2, 2}, {}, nullptr)
                  .status()
                  .ToString(),
              HasSubstr("is empty"));
}

TEST(CpuKernel, SetupChecksViews) {
  const SlicedOp op = FcOp(kRelu);
  auto kernel = CreateCpuKernel(op.graph, 0, {}, {}, nullptr);
  ASSERT_TRUE(kernel.ok());
  std::vector<float> buf(64);
  const TensorView in{buf.data(), {1, 1, 36}, 36};
  const TensorView out{buf.data(), {1, 1, 11}, 11};
  EXPECT_THAT((*kernel)->Setup({&in, 1}, out).ToString(), HasSubstr("does not match"));
  EXPECT_THAT((*kernel)->Setup({}, out).ToString(), HasSubstr("got 0 inputs, expected 1"));
}

TEST(CpuKernel, RejectsStridesTheKindCannotTake) {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 3});
  b.MarkOutput(b.AddOp(OpKind::kAdd, {x, x}, {2, 2, 3}));
  const model::Graph g = b.Build();
  KernelLayout layout{.input_pixel_strides = {5, 3}, .output_pixel_stride = 0};
  EXPECT_THAT(CreateCpuKernel(g, 0, {}, layout, nullptr).status().ToString(),
              HasSubstr("pixel stride 5 is unusable"));
}

}  // namespace
}  // namespace psched::executor::cpu
