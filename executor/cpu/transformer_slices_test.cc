// The row, column and K slices of the transformer kinds (model/split.h) against the reference
// oracle: every slice computed in place into one output buffer, as the runtime runs them.
#include <cmath>
#include <string>
#include <vector>

#include "executor/common/activation.h"
#include "executor/cpu/cpu_kernel.h"
#include "executor/reference/reference_kernels.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/split.h"

namespace psched::executor::cpu {
namespace {

using model::OpKind;
using model::SplitAxis;
using testing::GraphBuilder;
using testing::RandomVector;

const model::Activation kGelu{.kind = model::ActivationKind::kGelu};

// Gives tensor `t` row-major physical `dims` (the three-axis view follows).
void MakeRowMajor(model::Graph& g, model::TensorId t, std::vector<int64_t> dims) {
  model::Tensor& tensor = g.tensors[static_cast<size_t>(t)];
  tensor.shape = model::ViewOf(dims, false);
  tensor.channels_last = false;
  tensor.onnx_rank = static_cast<int32_t>(dims.size());
  if (tensor.constant != model::kInvalidId) {
    g.constants[static_cast<size_t>(tensor.constant)].dims = dims;
  }
  for (model::GraphIO& io : g.inputs) {
    if (io.tensor == t) io.onnx_dims = dims;
  }
  for (model::GraphIO& io : g.outputs) {
    if (io.tensor == t) io.onnx_dims = dims;
  }
  tensor.dims = std::move(dims);
}

struct RowMajorOp {
  model::Graph graph;
  std::vector<std::vector<float>> inputs;  // one per graph input, in op order
  std::vector<float> expected;
};

// Finishes `g` (op 0 computing the output) with seeded inputs and the reference's result.
RowMajorOp Finish(model::Graph g) {
  RowMajorOp op{std::move(g), {}, {}};
  uint32_t seed = 40;
  for (const model::GraphIO& io : op.graph.inputs) {
    op.inputs.push_back(RandomVector(
        static_cast<size_t>(op.graph.tensor(io.tensor).shape.Elements()), seed++));
  }
  auto expected = reference::RunGraph(op.graph, op.inputs);
  EXPECT_TRUE(expected.ok()) << expected.status();
  if (expected.ok()) op.expected = (*expected)[0];
  return op;
}

// Runs op 0 as the slices [cuts[k], cuts[k+1]) of `axis` into one zeroed output buffer and
// compares with the reference; K (cin) slices add into it and the activation comes after all.
void ExpectSlicesMatch(const RowMajorOp& op, SplitAxis axis, const std::vector<int64_t>& cuts) {
  ASSERT_EQ(model::WorkSize(op.graph, 0, axis), cuts.back()) << model::SplitAxisName(axis);
  std::vector<TensorView> in;
  std::vector<std::vector<float>> copies = op.inputs;
  for (size_t i = 0; i < copies.size(); ++i) {
    const model::Shape s = op.graph.tensor(op.graph.inputs[i].tensor).shape;
    copies[i].resize(copies[i].size() + 16, 0.0f);  // XNNPACK reads past the end
    in.push_back(TensorView{copies[i].data(), s, s.c});
  }
  const model::Shape out_shape = op.graph.output_shape(0);
  std::vector<float> output(static_cast<size_t>(out_shape.Elements()) + 16, 0.0f);
  const TensorView out{output.data(), out_shape, out_shape.c};
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    auto kernel = CreateCpuKernel(op.graph, 0, {axis, cuts[k], cuts[k + 1]}, {}, nullptr);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    ASSERT_TRUE((*kernel)->Setup(in, out).ok());
    ASSERT_TRUE((*kernel)->Run().ok());
  }
  if (axis == SplitAxis::kInputChannels) ApplyActivationInPlace(op.graph.op(0).activation, out);
  for (int64_t i = 0; i < out_shape.Elements(); ++i) {
    const float want = op.expected[static_cast<size_t>(i)];
    ASSERT_NEAR(output[static_cast<size_t>(i)], want, 1e-4 * (1.0 + std::fabs(want)))
        << model::SplitAxisName(axis) << " element " << i;
  }
}

// Tokens [6, 16] through a fully-connected layer to [6, 10] with a GELU.
RowMajorOp TokenFc() {
  GraphBuilder b;
  auto x = b.AddInput({6, 1, 16});
  model::FullyConnectedAttrs fc;
  fc.weight = b.AddConstant({10, 16}, RandomVector(160, 1));
  fc.bias = b.AddConstant({10}, RandomVector(10, 2));
  auto y = b.AddOp(OpKind::kFullyConnected, {x}, {6, 1, 10}, fc, kGelu);
  b.MarkOutput(y);
  model::Graph g = b.Build();
  MakeRowMajor(g, x, {6, 16});
  MakeRowMajor(g, y, {6, 10});
  return Finish(std::move(g));
}

// [2, 3, 5, 4] x [3, 4, 6] (the right operand broadcast over the first batch dim), with
// `act` fused.
RowMajorOp BatchedMatMul(model::Activation act) {
  GraphBuilder b;
  auto a = b.AddInput({30, 1, 4});
  auto w = b.AddInput({12, 1, 6});
  auto y = b.AddOp(OpKind::kMatMul, {a, w}, {30, 1, 6}, {}, act);
  b.MarkOutput(y);
  model::Graph g = b.Build();
  MakeRowMajor(g, a, {2, 3, 5, 4});
  MakeRowMajor(g, w, {3, 4, 6});
  MakeRowMajor(g, y, {2, 3, 5, 6});
  return Finish(std::move(g));
}

RowMajorOp Unary(OpKind kind, model::Activation act, model::OpAttrs attrs = {}) {
  GraphBuilder b;
  auto x = b.AddInput({40, 1, 7});
  if (kind == OpKind::kLayerNorm) {
    model::LayerNormAttrs ln;
    ln.scale = b.AddConstant({7}, RandomVector(7, 3));
    ln.bias = b.AddConstant({7}, RandomVector(7, 4));
    attrs = ln;
  }
  auto y = b.AddOp(kind, {x}, {40, 1, 7}, attrs, act);
  b.MarkOutput(y);
  model::Graph g = b.Build();
  MakeRowMajor(g, x, {2, 4, 5, 7});
  MakeRowMajor(g, y, {2, 4, 5, 7});
  return Finish(std::move(g));
}

// [4, 5, 8] `kind` [8] (a constant row broadcast to every row), or [4, 5, 8] `kind` [4, 5, 8].
RowMajorOp Binary(OpKind kind, bool broadcast) {
  GraphBuilder b;
  auto x = b.AddInput({20, 1, 8});
  model::TensorId other = broadcast ? b.AddConstantTensor({1, 1, 8}, RandomVector(8, 5, 0.5f, 2.0f))
                                    : b.AddInput({20, 1, 8});
  auto y = b.AddOp(kind, {x, other}, {20, 1, 8}, {}, kGelu);
  b.MarkOutput(y);
  model::Graph g = b.Build();
  MakeRowMajor(g, x, {4, 5, 8});
  MakeRowMajor(g, other, broadcast ? std::vector<int64_t>{8} : std::vector<int64_t>{4, 5, 8});
  MakeRowMajor(g, y, {4, 5, 8});
  return Finish(std::move(g));
}

TEST(CpuKernelTransformerSlices, FullyConnectedTokenRowsColumnsAndK) {
  const RowMajorOp op = TokenFc();
  ExpectSlicesMatch(op, SplitAxis::kRows, {0, 2, 6});
  ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, 4, 10});
  ExpectSlicesMatch(op, SplitAxis::kInputChannels, {0, 5, 16});
}

TEST(CpuKernelTransformerSlices, BatchedMatMulRowsHeadsColumnsAndK) {
  for (const model::Activation& act : {model::Activation{}, kGelu}) {
    const RowMajorOp op = BatchedMatMul(act);
    // Row ranges across matrix boundaries, and whole matrices (a split by heads).
    ExpectSlicesMatch(op, SplitAxis::kRows, {0, 7, 15, 30});
    ExpectSlicesMatch(op, SplitAxis::kRows, {0, 10, 30});
    ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, 2, 6});
    ExpectSlicesMatch(op, SplitAxis::kInputChannels, {0, 1, 4});
  }
}

TEST(CpuKernelTransformerSlices, RowWiseOpsByRows) {
  ExpectSlicesMatch(Unary(OpKind::kSoftmax, {}), SplitAxis::kRows, {0, 13, 40});
  ExpectSlicesMatch(Unary(OpKind::kLayerNorm, {}), SplitAxis::kRows, {0, 1, 39, 40});
  ExpectSlicesMatch(Unary(OpKind::kActivation, kGelu), SplitAxis::kRows, {0, 20, 40});
}

TEST(CpuKernelTransformerSlices, BinaryOpsByRowsWithBroadcastOperands) {
  for (OpKind kind : {OpKind::kAdd, OpKind::kMul, OpKind::kSub, OpKind::kDiv}) {
    SCOPED_TRACE(std::string(model::OpKindName(kind)));
    ExpectSlicesMatch(Binary(kind, /*broadcast=*/true), SplitAxis::kRows, {0, 3, 20});
    ExpectSlicesMatch(Binary(kind, /*broadcast=*/false), SplitAxis::kRows, {0, 11, 20});
  }
}

TEST(CpuKernelTransformerSlices, AxesTheKindDoesNotHaveAreRefused) {
  const RowMajorOp softmax = Unary(OpKind::kSoftmax, {});
  EXPECT_EQ(model::WorkSize(softmax.graph, 0, SplitAxis::kOutputChannels), 0);
  auto kernel = CreateCpuKernel(softmax.graph, 0, {SplitAxis::kOutputChannels, 0, 3}, {}, nullptr);
  ASSERT_FALSE(kernel.ok());
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(kernel.status().message()), ::testing::HasSubstr("cout"));
  auto outside = CreateCpuKernel(softmax.graph, 0, {SplitAxis::kRows, 30, 41}, {}, nullptr);
  EXPECT_EQ(outside.status().code(), absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psched::executor::cpu
