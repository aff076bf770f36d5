#include "executor/cpu/cpu_kernel.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "executor/common/activation.h"
#include "executor/cpu/cpu_threadpool.h"
#include "executor/cpu/kernel_choice.h"
#include "executor/cpu/parallel_slices_kernel.h"
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

// A conv over a 7x6 input with `cin_g` input and `cout_g` output channels per group, a 3x2
// window with stride (2, 1), dilation (1, 2) and uneven padding.
SlicedOp ConvOp(int64_t groups, model::Activation act, int64_t cin_g = 4, int64_t cout_g = 3,
                std::pair<int64_t, int64_t> in_hw = {7, 6}) {
  GraphBuilder b;
  const model::Shape in{in_hw.first, in_hw.second, cin_g * groups};
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
  const int64_t cout = cout_g * groups;
  conv.filter = b.AddConstant({cout, 3, 2, cin_g},
                              RandomVector(static_cast<size_t>(cout * 3 * 2 * cin_g), 1));
  conv.bias = b.AddConstant({cout}, RandomVector(static_cast<size_t>(cout), 2));
  // Rows: (h + 3 - 3) / 2 + 1 (4 for 7); columns: (w + 1 - 3) / 1 + 1 (5 for 6).
  b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, {in.h / 2 + 1, in.w - 1, cout}, conv, act));
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
// applied once. `pad_in` / `pad_out` extra floats per pixel make the views strided (a
// concat's channel slice); every kernel must come from a library starting with `library`.
void ExpectSlicesMatch(const SlicedOp& op, SplitAxis axis, const std::vector<int64_t>& cuts,
                       KernelLibrary library = KernelLibrary::kAuto,
                       std::string_view expect_library = "", int64_t pad_in = 0,
                       int64_t pad_out = 0, pthreadpool_t threadpool = nullptr) {
  const model::Shape in_shape = op.graph.tensor(op.graph.inputs[0].tensor).shape;
  const model::Shape out_shape = op.graph.output_shape(0);
  const int64_t in_stride = in_shape.c + pad_in, out_stride = out_shape.c + pad_out;
  std::vector<float> input(static_cast<size_t>(in_shape.h * in_shape.w * in_stride) + 16, 7.0f);
  for (int64_t p = 0; p < in_shape.h * in_shape.w; ++p) {
    std::copy_n(op.input.begin() + p * in_shape.c, in_shape.c, input.begin() + p * in_stride);
  }
  // The padding floats of the output must survive: NaN marks them.
  std::vector<float> output(static_cast<size_t>(out_shape.h * out_shape.w * out_stride) + 16,
                            std::nanf(""));
  const TensorView in{input.data(), in_shape, in_stride};
  const TensorView out{output.data(), out_shape, out_stride};
  for (int64_t p = 0; p < out_shape.h * out_shape.w; ++p) {
    std::fill_n(out.data + p * out_stride, out_shape.c, 0.0f);
  }
  const KernelLayout layout{.input_pixel_strides = {in_stride}, .output_pixel_stride = out_stride};
  for (size_t k = 0; k + 1 < cuts.size(); ++k) {
    auto kernel =
        CreateCpuKernel(op.graph, 0, {axis, cuts[k], cuts[k + 1]}, layout, threadpool, library);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_THAT(std::string((*kernel)->library()), ::testing::StartsWith(expect_library));
    ASSERT_TRUE((*kernel)->Setup({&in, 1}, out).ok());
    ASSERT_TRUE((*kernel)->Run().ok());
  }
  if (axis == SplitAxis::kInputChannels) ApplyActivationInPlace(op.graph.op(0).activation, out);
  for (int64_t p = 0; p < out_shape.h * out_shape.w; ++p) {
    for (int64_t c = 0; c < out_stride; ++c) {
      const float got = output[static_cast<size_t>(p * out_stride + c)];
      if (c >= out_shape.c) {
        ASSERT_TRUE(std::isnan(got)) << "pixel " << p << " padding " << c << " overwritten";
        continue;
      }
      const float want = op.expected[static_cast<size_t>(p * out_shape.c + c)];
      ASSERT_NEAR(got, want, 1e-4 * (1.0 + std::fabs(want)))
          << "axis " << model::SplitAxisName(axis) << " pixel " << p << " channel " << c;
    }
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

// A 1x1 conv (oneDNN runs these as matmuls) of 16 > 24 channels over 5x4 unless told.
SlicedOp PointwiseOp(model::Activation act, std::pair<int64_t, int64_t> hw = {5, 4},
                     int64_t cin = 16, int64_t cout = 24) {
  GraphBuilder b;
  auto x = b.AddInput({hw.first, hw.second, cin});
  model::ConvAttrs conv;
  conv.filter = b.AddConstant({cout, 1, 1, cin}, RandomVector(static_cast<size_t>(cout * cin), 7));
  conv.bias = b.AddConstant({cout}, RandomVector(static_cast<size_t>(cout), 8));
  b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, {hw.first, hw.second, cout}, conv, act));
  SlicedOp op{b.Build(), RandomVector(static_cast<size_t>(hw.first * hw.second * cin), 9), {}};
  op.expected = (*reference::RunGraph(op.graph, {op.input}))[0];
  return op;
}

const model::Activation kRelu6{.kind = model::ActivationKind::kClip, .min = 0.0f, .max = 6.0f};

// Every activation kind a oneDNN conv computes as an eltwise post-op, and kErf, which it
// applies in a pass after the primitive.
const model::Activation kOneDnnActivations[] = {
    {},
    kRelu,
    kRelu6,
    kSigmoid,
    {.kind = model::ActivationKind::kSilu},
    {.kind = model::ActivationKind::kHardSwish},
    {.kind = model::ActivationKind::kHardSigmoid, .alpha = 1.0f / 6, .beta = 0.5f},
    {.kind = model::ActivationKind::kTanh},
    {.kind = model::ActivationKind::kGelu},
    {.kind = model::ActivationKind::kErf}};

// oneDNN's convs against the reference: whole ops, cout, row and cin slices (these add into the
// output), strided views in and out, groups, every fused or separate activation.
TEST(CpuKernelOneDnn, ConvSlicesStridesAndActivations) {
  if (!OneDnnAvailable()) GTEST_SKIP() << "built without oneDNN";
  for (const model::Activation& act : kOneDnnActivations) {
    for (const SlicedOp& op : {ConvOp(1, act, 8, 16), ConvOp(1, act), PointwiseOp(act)}) {
      const int64_t rows = op.graph.output_shape(0).h;
      const int64_t cout = op.graph.output_shape(0).c;
      const int64_t cin = op.graph.tensor(op.graph.inputs[0].tensor).shape.c;
      for (const auto& [pad_in, pad_out] : {std::pair<int64_t, int64_t>{0, 0}, {3, 5}}) {
        SCOPED_TRACE(::testing::Message() << "activation " << static_cast<int>(act.kind)
                                          << " strides +" << pad_in << " +" << pad_out);
        ExpectSlicesMatch(op, SplitAxis::kInputChannels, {0, 1, cin / 2 + 1, cin},
                          KernelLibrary::kOneDnn, "onednn:", pad_in, pad_out);
        ExpectSlicesMatch(op, SplitAxis::kNone, {0, 1}, KernelLibrary::kOneDnn, "onednn:", pad_in,
                          pad_out);
        ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, 1, (cout + 2) / 2, cout},
                          KernelLibrary::kOneDnn, "onednn:", pad_in, pad_out);
        ExpectSlicesMatch(op, SplitAxis::kRows, {0, 1, rows - 1, rows}, KernelLibrary::kOneDnn,
                          "onednn:", pad_in, pad_out);
      }
    }
  }
  // Depthwise: oneDNN's brgemm depthwise kernel, which the rule picks, with a post-op SiLU.
  for (const SlicedOp& dw : {ConvOp(24, {.kind = model::ActivationKind::kSilu}, 1, 1),
                             ConvOp(40, kRelu6, 1, 1, {13, 9})}) {
    const int64_t rows = dw.graph.output_shape(0).h;
    const int64_t channels = dw.graph.output_shape(0).c;
    ExpectSlicesMatch(dw, SplitAxis::kNone, {0, 1}, KernelLibrary::kAuto, "onednn:");
    ExpectSlicesMatch(dw, SplitAxis::kOutputChannels, {0, 5, channels}, KernelLibrary::kAuto,
                      "onednn:", 3, 2);
    ExpectSlicesMatch(dw, SplitAxis::kRows, {0, 2, rows}, KernelLibrary::kAuto, "onednn:");
  }
  const SlicedOp grouped = ConvOp(3, kRelu, 8, 8);
  ExpectSlicesMatch(grouped, SplitAxis::kNone, {0, 1}, KernelLibrary::kOneDnn, "onednn:");
  ExpectSlicesMatch(grouped, SplitAxis::kOutputChannels, {0, 2, 3}, KernelLibrary::kOneDnn,
                    "onednn:", 2, 1);
  ExpectSlicesMatch(grouped, SplitAxis::kRows, {0, 2, 4}, KernelLibrary::kOneDnn, "onednn:");
}

// On a multi-thread device a dense conv runs as one-thread oneDNN kernels on parts of the
// slice, one per thread: every part boundary must be seamless, with strided views too.
TEST(CpuKernelOneDnn, ParallelPartsOnAMultiThreadDevice) {
  if (!OneDnnAvailable()) GTEST_SKIP() << "built without oneDNN";
  auto pool = CpuThreadpool::Create(2, {});
  ASSERT_TRUE(pool.ok()) << pool.status();
  // 4-11 MFLOP each: every slice below is worth two parts. More than 16 input channels, so
  // strided outputs stay on oneDNN (kXnnpackStridedMaxInputChannels).
  for (const SlicedOp& op :
       {ConvOp(1, kRelu, 24, 32, {60, 40}), ConvOp(1, kSigmoid, 24, 24, {60, 40}),
        PointwiseOp(kRelu6, {96, 64}, 24, 24)}) {
    const int64_t rows = op.graph.output_shape(0).h;
    const int64_t cout = op.graph.output_shape(0).c;
    for (const auto& [pad_in, pad_out] : {std::pair<int64_t, int64_t>{0, 0}, {3, 5}}) {
      ExpectSlicesMatch(op, SplitAxis::kNone, {0, 1}, KernelLibrary::kAuto, "onednn:", pad_in,
                        pad_out, (*pool)->get());
      ExpectSlicesMatch(op, SplitAxis::kRows, {0, 1, rows}, KernelLibrary::kAuto, "onednn:", pad_in,
                        pad_out, (*pool)->get());
      ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, cout / 2, cout}, KernelLibrary::kAuto,
                        "onednn:", pad_in, pad_out, (*pool)->get());
    }
  }
  // A whole op is cut in two parts.
  const SlicedOp tall = ConvOp(1, kRelu, 16, 48, {60, 40});
  auto kernel = CreateCpuKernel(tall.graph, 0, WorkSlice::Whole(), {}, (*pool)->get());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_THAT(std::string((*kernel)->library()), ::testing::EndsWith(" x2"));
}

TEST(CpuKernelParts, CutsTheSlicesAxisOrTheOneThatSharesLess) {
  using internal::PartsForThreads;
  constexpr double kAnyWork = 1;  // flops per part: cut however little work there is
  // 4 output rows, 8 > 40 channels: the filter (40x3x2x8 = 1920) outweighs the input
  // (7x6x8 = 336), so a whole op is cut by output channels, at multiples of 16.
  const SlicedOp heavy = ConvOp(1, kRelu, 8, 40);
  auto parts = PartsForThreads(heavy.graph, 0, WorkSlice::Whole(), 2, kAnyWork);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].axis, SplitAxis::kOutputChannels);
  EXPECT_EQ(parts[0].end, 16);
  EXPECT_EQ(parts[1].begin, 16);
  EXPECT_EQ(parts[1].end, 40);
  parts = PartsForThreads(heavy.graph, 0, WorkSlice::Whole(), 4, kAnyWork);
  ASSERT_EQ(parts.size(), 3u);  // 16 + 16 + 8
  EXPECT_EQ(parts[2].end, 40);
  // A light filter (3 outputs): by rows, two per thread.
  const SlicedOp light = ConvOp(1, kRelu);
  parts = PartsForThreads(light.graph, 0, WorkSlice::Whole(), 2, kAnyWork);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].axis, SplitAxis::kRows);
  EXPECT_EQ(parts[0].end, 2);
  EXPECT_EQ(parts[1].end, 4);
  // Too few rows for 4 threads and too few channels to cut: one part.
  EXPECT_EQ(PartsForThreads(light.graph, 0, WorkSlice::Whole(), 4, kAnyWork).size(), 1u);
  // A slice keeps its axis; a one-row slice cannot be cut.
  parts = PartsForThreads(heavy.graph, 0, {SplitAxis::kOutputChannels, 8, 40}, 2, kAnyWork);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].begin, 8);
  EXPECT_EQ(parts[0].end, 24);
  EXPECT_EQ(parts[1].end, 40);
  parts = PartsForThreads(heavy.graph, 0, {SplitAxis::kRows, 3, 4}, 2, kAnyWork);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].begin, 3);
  // A cin slice is never cut: its parts would add into the same output at once.
  parts = PartsForThreads(heavy.graph, 0, {SplitAxis::kInputChannels, 2, 8}, 2, kAnyWork);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].axis, SplitAxis::kInputChannels);
  EXPECT_EQ(parts[0].begin, 2);
  // With the default least work per part (1 MFLOP), this 77 KFLOP conv is not worth cutting.
  EXPECT_EQ(PartsForThreads(heavy.graph, 0, WorkSlice::Whole(), 2).size(), 1u);
}

// A pointwise conv is a matrix product over the pixels: a oneDNN matmul, which reads and
// writes strided views in place (its conv kernels would stage them through dense copies).
TEST(CpuKernelOneDnn, PointwiseConvsAreMatmulsOverStridedViews) {
  if (!OneDnnAvailable()) GTEST_SKIP() << "built without oneDNN";
  const SlicedOp op = PointwiseOp(kRelu);
  const KernelLayout strided{.input_pixel_strides = {19}, .output_pixel_stride = 29};
  for (const WorkSlice slice : {WorkSlice::Whole(), WorkSlice{SplitAxis::kRows, 1, 4},
                                WorkSlice{SplitAxis::kOutputChannels, 8, 24}}) {
    auto kernel = CreateCpuKernel(op.graph, 0, slice, strided, nullptr, KernelLibrary::kOneDnn);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    EXPECT_THAT(std::string((*kernel)->library()), ::testing::StartsWith("onednn:"));
    EXPECT_THAT(std::string((*kernel)->library()), ::testing::Not(HasSubstr("conv")));
  }
  ExpectSlicesMatch(op, SplitAxis::kRows, {0, 2, 5}, KernelLibrary::kOneDnn, "onednn:", 3, 5);
}

// cin slices go by the rule of whole ops on one thread; on a multi-thread device to XNNPACK,
// which spreads one slice over the threads (parts of a cin slice would add into one output).
TEST(CpuKernelChoice, CinSlicesByTheRuleOnOneThreadXnnpackOnSeveral) {
  // 31 x 11 output pixels; slices of more than 16 input channels, so the strided output stays
  // on oneDNN (kXnnpackStridedMaxInputChannels).
  const SlicedOp op = ConvOp(1, kRelu, 40, 16, {60, 12});
  const std::string_view one_thread = OneDnnAvailable() ? "onednn:" : "xnnpack";
  ExpectSlicesMatch(op, SplitAxis::kInputChannels, {0, 17, 40}, KernelLibrary::kAuto, one_thread, 1,
                    2);
  auto pool = CpuThreadpool::Create(2, {});
  ASSERT_TRUE(pool.ok()) << pool.status();
  ExpectSlicesMatch(op, SplitAxis::kInputChannels, {0, 17, 40}, KernelLibrary::kAuto, "xnnpack", 1,
                    2, (*pool)->get());
}

// The streaming GEMM against the reference: whole ops, cout and row slices, strided views in
// and out, every fused or separate activation; and shapes that take every path of its
// blocking - several blocks of rows (77 output pixels), filter taps whose channels straddle
// K blocks (300 channels, K blocks of 64), a last panel of 8 columns (40 outputs), padding,
// and a K under one panel row (1x1 over 8 channels).
TEST(CpuKernelStreamingGemm, ConvSlicesStridesAndActivations) {
  if (!StreamingGemmAvailable()) GTEST_SKIP() << "no AVX-512F core or not an x86 build";
  for (const model::Activation& act : {model::Activation{}, kRelu, kRelu6, kSigmoid}) {
    for (const SlicedOp& op :
         {ConvOp(1, act, 8, 16), ConvOp(1, act), PointwiseOp(act), ConvOp(1, act, 300, 40, {21, 8}),
          PointwiseOp(act, {5, 5}, 70, 33), PointwiseOp(act, {5, 4}, 8, 24)}) {
      const int64_t rows = op.graph.output_shape(0).h;
      const int64_t cout = op.graph.output_shape(0).c;
      for (const auto& [pad_in, pad_out] : {std::pair<int64_t, int64_t>{0, 0}, {3, 5}}) {
        SCOPED_TRACE(::testing::Message()
                     << "activation " << static_cast<int>(act.kind) << " strides +" << pad_in
                     << " +" << pad_out << " output " << rows << " rows, " << cout << " channels");
        constexpr KernelLibrary kLib = KernelLibrary::kStreamingGemm;
        constexpr std::string_view kName = "psched:streaming-gemm";
        ExpectSlicesMatch(op, SplitAxis::kNone, {0, 1}, kLib, kName, pad_in, pad_out);
        ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, 1, (cout + 2) / 2, cout}, kLib, kName,
                          pad_in, pad_out);
        ExpectSlicesMatch(op, SplitAxis::kRows, {0, 1, rows - 1, rows}, kLib, kName, pad_in,
                          pad_out);
        const int64_t cin = op.graph.tensor(op.graph.inputs[0].tensor).shape.c;
        ExpectSlicesMatch(op, SplitAxis::kInputChannels, {0, 1, cin / 2 + 1, cin}, kLib, kName,
                          pad_in, pad_out);
      }
    }
  }
  // Grouped convs are not its: forced, it says so.
  const SlicedOp grouped = ConvOp(3, kRelu, 8, 8);
  EXPECT_EQ(CreateCpuKernel(grouped.graph, 0, WorkSlice::Whole(), {}, nullptr,
                            KernelLibrary::kStreamingGemm)
                .status()
                .code(),
            absl::StatusCode::kUnimplemented);
}

// A NaN in the input reaches the outputs that read it as NaN, with or without a fused clamp
// (a clamp written max(sum, lo) would turn it into lo).
TEST(CpuKernelStreamingGemm, ANanInputStaysNan) {
  if (!StreamingGemmAvailable()) GTEST_SKIP() << "no AVX-512F core or not an x86 build";
  for (const model::Activation& act : {model::Activation{}, kRelu6}) {
    SlicedOp op = PointwiseOp(act, {5, 5}, 70, 33);
    op.input[5 * 70 + 3] = std::nanf("");  // pixel 5, channel 3
    auto kernel = CreateCpuKernel(op.graph, 0, WorkSlice::Whole(), {}, nullptr,
                                  KernelLibrary::kStreamingGemm);
    ASSERT_TRUE(kernel.ok()) << kernel.status();
    std::vector<float> out(25 * 33, 0.0f);
    const TensorView in{op.input.data(), {5, 5, 70}, 70};
    ASSERT_TRUE((*kernel)->Setup({&in, 1}, {out.data(), {5, 5, 33}, 33}).ok());
    ASSERT_TRUE((*kernel)->Run().ok());
    for (int64_t p = 0; p < 25; ++p) {
      for (int64_t c = 0; c < 33; ++c) {
        EXPECT_EQ(std::isnan(out[static_cast<size_t>(p * 33 + c)]), p == 5)
            << "pixel " << p << " channel " << c;
      }
    }
  }
}

// A conv with 25 output pixels and a 512 KB filter (6.5 MFLOP): on a 2-thread device, two
// one-thread streaming GEMMs, each on half the output channels.
TEST(CpuKernelStreamingGemm, ParallelPartsOnAMultiThreadDevice) {
  if (!StreamingGemmAvailable()) GTEST_SKIP() << "no AVX-512F core or not an x86 build";
  auto pool = CpuThreadpool::Create(2, {});
  ASSERT_TRUE(pool.ok()) << pool.status();
  const SlicedOp op = PointwiseOp(kRelu, {5, 5}, 512, 256);
  for (const auto& [pad_in, pad_out] : {std::pair<int64_t, int64_t>{0, 0}, {3, 5}}) {
    ExpectSlicesMatch(op, SplitAxis::kNone, {0, 1}, KernelLibrary::kAuto, "psched:streaming-gemm",
                      pad_in, pad_out, (*pool)->get());
    ExpectSlicesMatch(op, SplitAxis::kOutputChannels, {0, 100, 256}, KernelLibrary::kAuto,
                      "psched:streaming-gemm", pad_in, pad_out, (*pool)->get());
  }
  auto kernel = CreateCpuKernel(op.graph, 0, WorkSlice::Whole(), {}, (*pool)->get());
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_EQ(std::string((*kernel)->library()), "psched:streaming-gemm x2");
}

// The per-configuration rule of kernel_choice.h, and that kAuto builds what it chooses.
TEST(CpuKernelChoice, DenseConvsGoToOneDnnOrWithFewPixelsToTheStreamingGemm) {
  const SlicedOp dense = ConvOp(1, kRelu, 8, 16, {60, 12});  // 31 x 11 output pixels
  const SlicedOp grouped = ConvOp(3, kRelu);
  const KernelLibrary fast = OneDnnAvailable() ? KernelLibrary::kOneDnn : KernelLibrary::kXnnpack;
  EXPECT_EQ(ChooseConvLibrary(dense.graph, 0, WorkSlice::Whole()), fast);
  EXPECT_EQ(ChooseConvLibrary(dense.graph, 0, {SplitAxis::kRows, 0, 3}), fast);
  // Few pixels: the conv as a whole (4 x 5 outputs) or a slice of two rows (22 pixels).
  const KernelLibrary few = StreamingGemmAvailable() ? KernelLibrary::kStreamingGemm : fast;
  EXPECT_EQ(ChooseConvLibrary(ConvOp(1, kRelu).graph, 0, WorkSlice::Whole()), few);
  EXPECT_EQ(ChooseConvLibrary(dense.graph, 0, {SplitAxis::kRows, 5, 7}), few);
  // 7 x 7 = 49 pixels: with a 1 MB filter (1x1 512 > 512), not with half of it.
  const SlicedOp wide = PointwiseOp(kRelu, {7, 7}, 512, 512);
  EXPECT_EQ(ChooseConvLibrary(wide.graph, 0, WorkSlice::Whole()), few);
  EXPECT_EQ(ChooseConvLibrary(wide.graph, 0, {SplitAxis::kOutputChannels, 0, 256}), fast);
  EXPECT_EQ(ChooseConvLibrary(wide.graph, 0, {SplitAxis::kRows, 0, 4}), few);
  // cin slices alike, counting the filter columns the slice reads: 1x1 1024 > 512 on 7 x 7
  // has a 2 MB filter, its cin halves 1 MB, its quarters 512 KB.
  EXPECT_EQ(ChooseConvLibrary(ConvOp(1, kRelu).graph, 0, {SplitAxis::kInputChannels, 0, 2}), few);
  EXPECT_EQ(ChooseConvLibrary(dense.graph, 0, {SplitAxis::kInputChannels, 0, 2}), fast);
  const SlicedOp deep = PointwiseOp(kRelu, {7, 7}, 1024, 512);
  EXPECT_EQ(ChooseConvLibrary(deep.graph, 0, {SplitAxis::kInputChannels, 0, 512}), few);
  EXPECT_EQ(ChooseConvLibrary(deep.graph, 0, {SplitAxis::kInputChannels, 256, 512}), fast);
  EXPECT_EQ(ChooseConvLibrary(grouped.graph, 0, WorkSlice::Whole()), KernelLibrary::kXnnpack);
  auto kernel = CreateCpuKernel(dense.graph, 0, WorkSlice::Whole(), {}, nullptr);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  EXPECT_THAT(std::string((*kernel)->library()),
              ::testing::StartsWith(OneDnnAvailable() ? "onednn:" : "xnnpack"));
  if (!OneDnnAvailable()) {
    EXPECT_EQ(
        CreateCpuKernel(dense.graph, 0, WorkSlice::Whole(), {}, nullptr, KernelLibrary::kOneDnn)
            .status()
            .code(),
        absl::StatusCode::kUnimplemented);
  }
  const SlicedOp small = ConvOp(1, kRelu);
  auto small_kernel = CreateCpuKernel(small.graph, 0, WorkSlice::Whole(), {}, nullptr);
  ASSERT_TRUE(small_kernel.ok()) << small_kernel.status();
  if (StreamingGemmAvailable()) {
    EXPECT_EQ(std::string((*small_kernel)->library()), "psched:streaming-gemm");
  } else {
    EXPECT_EQ(CreateCpuKernel(small.graph, 0, WorkSlice::Whole(), {}, nullptr,
                              KernelLibrary::kStreamingGemm)
                  .status()
                  .code(),
              absl::StatusCode::kUnimplemented);
  }
}

// Few input channels and a strided output (a cout slice, or an output inside a concat's
// channel slice): XNNPACK writes it in place where oneDNN would stage it (kernel_choice.h).
TEST(CpuKernelChoice, FewChannelConvsWritingAStridedOutputGoToXnnpack) {
  const KernelLibrary fast = OneDnnAvailable() ? KernelLibrary::kOneDnn : KernelLibrary::kXnnpack;
  const SlicedOp narrow = ConvOp(1, kRelu, kXnnpackStridedMaxInputChannels, 16, {60, 12});
  const SlicedOp wide = ConvOp(1, kRelu, kXnnpackStridedMaxInputChannels + 1, 16, {60, 12});
  const WorkSlice whole = WorkSlice::Whole();
  const WorkSlice cout_half{SplitAxis::kOutputChannels, 0, 8};
  EXPECT_EQ(ChooseConvLibrary(narrow.graph, 0, whole), fast);
  EXPECT_EQ(ChooseConvLibrary(narrow.graph, 0, whole, 16), fast);  // its own channels: dense
  EXPECT_EQ(ChooseConvLibrary(narrow.graph, 0, whole, 32), KernelLibrary::kXnnpack);
  EXPECT_EQ(ChooseConvLibrary(narrow.graph, 0, cout_half), KernelLibrary::kXnnpack);
  EXPECT_EQ(ChooseConvLibrary(narrow.graph, 0, {SplitAxis::kRows, 0, 15}, 32),
            KernelLibrary::kXnnpack);
  EXPECT_EQ(ChooseConvLibrary(wide.graph, 0, whole, 32), fast);
  EXPECT_EQ(ChooseConvLibrary(wide.graph, 0, cout_half), fast);
  // A cin slice reads that many channels: 16 of the wide conv's 17.
  EXPECT_EQ(ChooseConvLibrary(wide.graph, 0, {SplitAxis::kInputChannels, 0, 16}, 32),
            KernelLibrary::kXnnpack);
  // What kAuto builds, and that it writes the strided output right.
  ExpectSlicesMatch(narrow, SplitAxis::kNone, {0, 1}, KernelLibrary::kAuto, "xnnpack", 0, 16);
  ExpectSlicesMatch(narrow, SplitAxis::kOutputChannels, {0, 8, 16}, KernelLibrary::kAuto,
                    "xnnpack");
  ExpectSlicesMatch(wide, SplitAxis::kNone, {0, 1}, KernelLibrary::kAuto,
                    OneDnnAvailable() ? "onednn:" : "xnnpack", 0, 16);
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
