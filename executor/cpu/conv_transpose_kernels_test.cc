// kConvTranspose2d on the CPU: XNNPACK's deconvolution (what CreateCpuKernel picks) and the
// hand-written kernel, each against the reference kernel over seeded random data, strided
// views, fused activations and one and two threads.
#include <cmath>
#include <string>
#include <vector>

#include "executor/cpu/cpu_kernel.h"
#include "executor/cpu/cpu_threadpool.h"
#include "executor/cpu/kernel_base.h"
#include "executor/reference/reference_kernels.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psched::executor::cpu {
namespace {

using testing::GraphBuilder;
using testing::RandomVector;

struct Config {
  std::string name;
  model::Shape in;
  int64_t cout;
  int32_t groups;
  model::Window2d window;
  int32_t output_padding_h = 0, output_padding_w = 0;
  model::Activation activation;
  const char* library;  // what CreateCpuKernel picks
};

struct ConvTransposeOp {
  model::Graph graph;
  std::vector<float> input;
  std::vector<float> expected;
};

ConvTransposeOp Build(const Config& c, uint32_t seed) {
  GraphBuilder b;
  auto x = b.AddInput(c.in);
  model::ConvAttrs conv;
  conv.window = c.window;
  conv.groups = c.groups;
  conv.output_padding_h = c.output_padding_h;
  conv.output_padding_w = c.output_padding_w;
  const model::Window2d& w = c.window;
  const int64_t cin_g = c.in.c / c.groups;
  const int64_t filter_size = c.cout * w.kernel_h * w.kernel_w * cin_g;
  conv.filter = b.AddConstant({c.cout, w.kernel_h, w.kernel_w, cin_g},
                              RandomVector(static_cast<size_t>(filter_size), seed));
  conv.bias = b.AddConstant({c.cout}, RandomVector(static_cast<size_t>(c.cout), seed + 1));
  const int64_t oh = (c.in.h - 1) * w.stride_h + (w.kernel_h - 1) * w.dilation_h + 1 +
                     c.output_padding_h - w.pad_top - w.pad_bottom;
  const int64_t ow = (c.in.w - 1) * w.stride_w + (w.kernel_w - 1) * w.dilation_w + 1 +
                     c.output_padding_w - w.pad_left - w.pad_right;
  b.MarkOutput(
      b.AddOp(model::OpKind::kConvTranspose2d, {x}, {oh, ow, c.cout}, conv, c.activation));
  ConvTransposeOp op{b.Build(), RandomVector(static_cast<size_t>(c.in.Elements()), seed + 2), {}};
  auto expected = reference::RunGraph(op.graph, {op.input});
  EXPECT_TRUE(expected.ok()) << expected.status();
  if (expected.ok()) op.expected = (*expected)[0];
  return op;
}

const std::vector<Config>& Configs() {
  static const std::vector<Config> configs = {
      {"stride2_output_padding1",
       {5, 6, 8},
       6,
       1,
       {.kernel_h = 3, .kernel_w = 3, .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
        .pad_bottom = 1, .pad_right = 1},
       1,
       1,
       {.kind = model::ActivationKind::kRelu},
       "xnnpack"},
      {"groups2",
       {4, 5, 6},
       8,
       2,
       {.kernel_h = 4, .kernel_w = 4, .stride_h = 2, .stride_w = 2, .pad_top = 1, .pad_left = 1,
        .pad_bottom = 1, .pad_right = 1},
       0,
       0,
       {},
       "xnnpack"},
      {"dilation2",
       {6, 5, 3},
       5,
       1,
       {.kernel_h = 3, .kernel_w = 3, .dilation_h = 2, .dilation_w = 2, .pad_top = 2,
        .pad_left = 1, .pad_bottom = 0, .pad_right = 1},
       0,
       0,
       {},
       "xnnpack"},
      {"asymmetric_pads",
       {5, 4, 4},
       4,
       1,
       {.kernel_h = 3, .kernel_w = 4, .stride_h = 2, .stride_w = 3, .pad_top = 0,
        .pad_left = 2, .pad_bottom = 1, .pad_right = 0},
       1,
       2,
       {.kind = model::ActivationKind::kSigmoid},
       "xnnpack"},
      // output_padding at the stride: XNNPACK refuses it, the hand-written kernel runs it.
      {"output_padding_at_stride",
       {4, 4, 6},
       6,
       3,
       {.kernel_h = 2, .kernel_w = 3, .dilation_h = 3, .pad_top = 1},
       2,
       1,
       {.kind = model::ActivationKind::kClip, .min = 0.0f, .max = 0.5f},
       "psched"},
  };
  return configs;
}

// Runs `kernel` over views with `pad_in` / `pad_out` extra floats per pixel and compares the
// output with the reference: every element within 1e-5 relative (of the element or of the
// output's RMS, whichever is larger), and the padding floats untouched.
void ExpectMatches(const ConvTransposeOp& op, CpuKernel& kernel, int64_t pad_in,
                   int64_t pad_out) {
  const model::Shape in_shape = op.graph.tensor(op.graph.inputs[0].tensor).shape;
  const model::Shape out_shape = op.graph.output_shape(0);
  const int64_t in_stride = in_shape.c + pad_in, out_stride = out_shape.c + pad_out;
  std::vector<float> input(static_cast<size_t>(in_shape.h * in_shape.w * in_stride) + 16, 7.0f);
  for (int64_t p = 0; p < in_shape.h * in_shape.w; ++p) {
    std::copy_n(op.input.begin() + p * in_shape.c, in_shape.c, input.begin() + p * in_stride);
  }
  std::vector<float> output(static_cast<size_t>(out_shape.h * out_shape.w * out_stride) + 16,
                            std::nanf(""));
  const TensorView in{input.data(), in_shape, in_stride};
  const TensorView out{output.data(), out_shape, out_stride};
  ASSERT_TRUE(kernel.Setup({&in, 1}, out).ok());
  ASSERT_TRUE(kernel.Run().ok());
  double sum_sq = 0, err_sq = 0;
  for (float v : op.expected) sum_sq += double{v} * v;
  const double rms = std::sqrt(sum_sq / static_cast<double>(op.expected.size()));
  for (int64_t p = 0; p < out_shape.h * out_shape.w; ++p) {
    for (int64_t c = 0; c < out_stride; ++c) {
      const float got = output[static_cast<size_t>(p * out_stride + c)];
      if (c >= out_shape.c) {
        ASSERT_TRUE(std::isnan(got)) << "pixel " << p << " padding " << c << " overwritten";
        continue;
      }
      const float want = op.expected[static_cast<size_t>(p * out_shape.c + c)];
      err_sq += (double{got} - want) * (double{got} - want);
      ASSERT_NEAR(got, want, 1e-5 * std::max<double>(std::fabs(want), rms))
          << "pixel " << p << " channel " << c;
    }
  }
  EXPECT_LT(std::sqrt(err_sq / sum_sq), 1e-5);
}

class ConvTransposeKernelTest : public ::testing::TestWithParam<Config> {};

TEST_P(ConvTransposeKernelTest, ChosenKernelMatchesReference) {
  const Config& c = GetParam();
  const ConvTransposeOp op = Build(c, 11);
  for (const auto& [pad_in, pad_out] : {std::pair<int64_t, int64_t>{0, 0}, {3, 2}}) {
    const KernelLayout layout{.input_pixel_strides = {c.in.c + pad_in},
                              .output_pixel_stride = op.graph.output_shape(0).c + pad_out};
    auto kernel = CreateCpuKernel(op.graph, 0, WorkSlice::Whole(), layout, nullptr);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_EQ((*kernel)->library(), c.library);
    ExpectMatches(op, **kernel, pad_in, pad_out);
  }
}

TEST_P(ConvTransposeKernelTest, HandKernelMatchesReferenceOnOneAndTwoThreads) {
  const Config& c = GetParam();
  const ConvTransposeOp op = Build(c, 23);
  auto pool = CpuThreadpool::Create(2, {});
  ASSERT_TRUE(pool.ok()) << pool.status();
  for (pthreadpool_t threads : {static_cast<pthreadpool_t>(nullptr), (*pool)->get()}) {
    const KernelLayout layout{.input_pixel_strides = {c.in.c + 1},
                              .output_pixel_stride = op.graph.output_shape(0).c + 3};
    auto kernel = internal::CreateHandConvTransposeKernel(op.graph, 0, layout, threads);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_EQ((*kernel)->library(), "psched");
    ExpectMatches(op, **kernel, 1, 3);
  }
}

INSTANTIATE_TEST_SUITE_P(Configs, ConvTransposeKernelTest, ::testing::ValuesIn(Configs()),
                         [](const ::testing::TestParamInfo<Config>& test) {
                           return test.param.name;
                         });

TEST(ConvTransposeKernel, MalformedOpIsRefused) {
  Config c = Configs()[0];
  ConvTransposeOp op = Build(c, 5);
  op.graph.tensors[static_cast<size_t>(op.graph.ops[0].output)].shape.h += 1;
  auto kernel = CreateCpuKernel(op.graph, 0, WorkSlice::Whole(), {}, nullptr);
  EXPECT_EQ(kernel.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(kernel.status().message()),
              ::testing::HasSubstr("under the transposed window"));
}

}  // namespace
}  // namespace psched::executor::cpu
