#include "executor/cpu/cpu_graph_executor.h"

#include <cmath>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/cpu/kernel_choice.h"
#include "executor/cpu/residual_added_conv.h"
#include "executor/reference/reference_kernels.h"
#include "executor/testing/graph_builder.h"
#include "executor/testing/scoped_affinity.h"
#include "executor/testing/tensor_compare.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psched::executor::cpu {
namespace {

using model::ActivationKind;
using model::OpKind;
using model::Shape;
using testing::GraphBuilder;
using ::testing::HasSubstr;
using testing::RandomConv;
using testing::RandomVector;

// Runs `graph` through the CPU executor and the reference kernels on seeded random inputs
// and expects every output element to agree to 1e-4 relative.
void ExpectMatchesReference(const model::Graph& graph, uint32_t seed,
                            CpuExecutorOptions options = {}) {
  std::vector<std::vector<float>> inputs;
  for (const model::GraphIO& io : graph.inputs) {
    inputs.push_back(RandomVector(static_cast<size_t>(graph.tensor(io.tensor).shape.Elements()),
                                  seed + static_cast<uint32_t>(inputs.size())));
  }
  auto expected = reference::RunGraph(graph, inputs);
  ASSERT_TRUE(expected.ok()) << expected.status();
  auto exec = CpuGraphExecutor::Create(graph, options);
  ASSERT_TRUE(exec.ok()) << exec.status();
  // Twice: kernels must be re-runnable on the same arena.
  for (int run = 0; run < 2; ++run) {
    auto actual = (*exec)->Run(inputs);
    ASSERT_TRUE(actual.ok()) << actual.status();
    ASSERT_EQ(actual->size(), expected->size());
    for (size_t o = 0; o < actual->size(); ++o) {
      const std::vector<float>& a = (*actual)[o];
      const std::vector<float>& e = (*expected)[o];
      ASSERT_EQ(a.size(), e.size());
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_NEAR(a[i], e[i], 1e-4 * (1.0 + std::fabs(e[i])))
            << graph.name << " output " << o << " element " << i;
      }
    }
  }
}

model::Activation RandomActivation(std::mt19937& rng) {
  switch (rng() % 6) {
    case 0:
      return {.kind = ActivationKind::kRelu};
    case 1:
      return {.kind = ActivationKind::kClip, .min = -0.5f, .max = 0.5f};
    case 2:
      return {.kind = ActivationKind::kSigmoid};
    case 3:
      return {.kind = ActivationKind::kHardSigmoid, .alpha = 0.2f, .beta = 0.5f};
    case 4:
      return {.kind = ActivationKind::kHardSwish};
    default:
      return {};
  }
}

int64_t OutSize(int64_t in, int k, int s, int d, int p0, int p1) {
  const int64_t span = in + p0 + p1 - d * (k - 1) - 1;
  return span < 0 ? 0 : span / s + 1;
}

// Whether every window along an axis has at least one tap on real input (frameworks never
// produce windows that lie entirely in padding).
bool EveryWindowTouchesInput(int64_t in, int64_t out, int k, int s, int d, int pad_before) {
  for (int64_t o = 0; o < out; ++o) {
    bool touches = false;
    for (int t = 0; t < k; ++t) {
      const int64_t i = o * s - pad_before + int64_t{t} * d;
      touches |= i >= 0 && i < in;
    }
    if (!touches) return false;
  }
  return true;
}

TEST(CpuExecutorConv, RandomShapesMatchReference) {
  std::mt19937 rng(7);
  int tested = 0;
  for (int trial = 0; tested < 60 && trial < 500; ++trial) {
    const int64_t h = 1 + rng() % 9, w = 1 + rng() % 9;
    const int mode = static_cast<int>(rng() % 3);  // dense, depthwise, grouped
    const int64_t groups = mode == 0 ? 1 : mode == 1 ? 1 + rng() % 5 : 2 + rng() % 2;
    const int64_t cin = groups * (mode == 1 ? 1 : 1 + rng() % 4);
    const int64_t cout = groups * (mode == 1 ? 1 + rng() % 2 : 1 + rng() % 4);
    model::Window2d win;
    win.kernel_h = 1 + static_cast<int>(rng() % 3);
    win.kernel_w = 1 + static_cast<int>(rng() % 3);
    win.stride_h = 1 + static_cast<int>(rng() % 2);
    win.stride_w = 1 + static_cast<int>(rng() % 2);
    win.dilation_h = 1 + static_cast<int>(rng() % 2);
    win.dilation_w = 1 + static_cast<int>(rng() % 2);
    win.pad_top = static_cast<int>(rng() % 3);
    win.pad_left = static_cast<int>(rng() % 3);
    win.pad_bottom = static_cast<int>(rng() % 3);
    win.pad_right = static_cast<int>(rng() % 3);
    const int64_t oh =
        OutSize(h, win.kernel_h, win.stride_h, win.dilation_h, win.pad_top, win.pad_bottom);
    const int64_t ow =
        OutSize(w, win.kernel_w, win.stride_w, win.dilation_w, win.pad_left, win.pad_right);
    if (oh < 1 || ow < 1) continue;
    GraphBuilder b(absl::StrCat("conv_trial", trial));
    auto x = b.AddInput({h, w, cin});
    model::ConvAttrs conv;
    conv.window = win;
    conv.groups = static_cast<int32_t>(groups);
    conv.filter = b.AddConstant(
        {cout, win.kernel_h, win.kernel_w, cin / groups},
        RandomVector(static_cast<size_t>(cout * win.kernel_h * win.kernel_w * cin / groups),
                     static_cast<uint32_t>(trial)));
    if (rng() % 2) conv.bias = b.AddConstant({cout}, RandomVector(static_cast<size_t>(cout), 99));
    b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, {oh, ow, cout}, conv, RandomActivation(rng)));
    ExpectMatchesReference(b.Build(), static_cast<uint32_t>(trial));
    ++tested;
  }
  EXPECT_EQ(tested, 60);
}

TEST(CpuExecutorFullyConnected, MatchesReference) {
  for (uint32_t seed = 0; seed < 5; ++seed) {
    std::mt19937 rng(seed);
    const int64_t in = 1 + rng() % 40, out = 1 + rng() % 20;
    GraphBuilder b;
    auto x = b.AddInput({1, 1, in});
    model::FullyConnectedAttrs fc;
    fc.weight = b.AddConstant({out, in}, RandomVector(static_cast<size_t>(out * in), seed));
    if (seed % 2) fc.bias = b.AddConstant({out}, RandomVector(static_cast<size_t>(out), 3));
    b.MarkOutput(b.AddOp(OpKind::kFullyConnected, {x}, {1, 1, out}, fc, RandomActivation(rng)));
    ExpectMatchesReference(b.Build(), seed);
  }
}

TEST(CpuExecutorPool, RandomWindowsCeilModeAndCountIncludePad) {
  std::mt19937 rng(11);
  int tested = 0;
  for (int trial = 0; tested < 60 && trial < 500; ++trial) {
    const int64_t h = 1 + rng() % 8, w = 1 + rng() % 8, c = 1 + rng() % 5;
    model::PoolAttrs pool;
    model::Window2d& win = pool.window;
    win.kernel_h = 1 + static_cast<int>(rng() % 3);
    win.kernel_w = 1 + static_cast<int>(rng() % 3);
    win.stride_h = 1 + static_cast<int>(rng() % 2);
    win.stride_w = 1 + static_cast<int>(rng() % 2);
    const bool is_max = rng() % 2;
    if (is_max && rng() % 3 == 0) win.dilation_h = win.dilation_w = 2;
    // Pads stay below the kernel so no window lies entirely in padding.
    win.pad_top = static_cast<int>(rng() % win.kernel_h);
    win.pad_left = static_cast<int>(rng() % win.kernel_w);
    pool.declared_pad_bottom = win.pad_bottom = static_cast<int>(rng() % win.kernel_h);
    pool.declared_pad_right = win.pad_right = static_cast<int>(rng() % win.kernel_w);
    pool.count_include_pad = rng() % 2;
    const int64_t eff_h = int64_t{win.dilation_h} * (win.kernel_h - 1) + 1;
    const int64_t eff_w = int64_t{win.dilation_w} * (win.kernel_w - 1) + 1;
    const int64_t span_h = h + win.pad_top + win.pad_bottom - eff_h;
    const int64_t span_w = w + win.pad_left + win.pad_right - eff_w;
    if (span_h < 0 || span_w < 0) continue;
    if (rng() % 2) {
      // ceil_mode: one more output when the stride leaves a remainder, paid for with extra
      // bottom/right padding that count_include_pad must not count.
      if (span_h % win.stride_h) win.pad_bottom += win.stride_h - span_h % win.stride_h;
      if (span_w % win.stride_w) win.pad_right += win.stride_w - span_w % win.stride_w;
    }
    const int64_t oh =
        OutSize(h, win.kernel_h, win.stride_h, win.dilation_h, win.pad_top, win.pad_bottom);
    const int64_t ow =
        OutSize(w, win.kernel_w, win.stride_w, win.dilation_w, win.pad_left, win.pad_right);
    if (!EveryWindowTouchesInput(h, oh, win.kernel_h, win.stride_h, win.dilation_h, win.pad_top) ||
        !EveryWindowTouchesInput(w, ow, win.kernel_w, win.stride_w, win.dilation_w, win.pad_left)) {
      continue;
    }
    GraphBuilder b(absl::StrCat("pool_trial", trial));
    auto x = b.AddInput({h, w, c});
    b.MarkOutput(b.AddOp(is_max ? OpKind::kMaxPool : OpKind::kAvgPool, {x}, {oh, ow, c}, pool,
                         RandomActivation(rng)));
    ExpectMatchesReference(b.Build(), static_cast<uint32_t>(trial));
    ++tested;
  }
  EXPECT_EQ(tested, 60);
}

TEST(CpuExecutorPool, GlobalAverage) {
  GraphBuilder b;
  auto x = b.AddInput({5, 3, 7});
  b.MarkOutput(
      b.AddOp(OpKind::kGlobalAvgPool, {x}, {1, 1, 7}, {}, {.kind = ActivationKind::kRelu}));
  ExpectMatchesReference(b.Build(), 1);
}

TEST(CpuExecutorBinary, BroadcastsAndConstants) {
  const Shape out{3, 4, 5};
  const Shape shapes[] = {{3, 4, 5}, {1, 1, 5}, {3, 4, 1}, {1, 4, 5}, {1, 1, 1}, {3, 1, 5}};
  uint32_t seed = 0;
  for (OpKind kind : {OpKind::kAdd, OpKind::kMul, OpKind::kSub}) {
    for (const Shape& s : shapes) {
      for (bool constant_first : {false, true}) {
        GraphBuilder b(absl::StrCat("binary", seed));
        auto x = b.AddInput(out);
        auto c = b.AddConstantTensor(s, RandomVector(static_cast<size_t>(s.Elements()), seed));
        b.MarkOutput(b.AddOp(kind, constant_first ? std::vector{c, x} : std::vector{x, c}, out, {},
                             {.kind = ActivationKind::kRelu}));
        ExpectMatchesReference(b.Build(), ++seed);
      }
    }
    GraphBuilder b;
    auto x = b.AddInput({3, 1, 5});
    auto y = b.AddInput({1, 4, 1});
    b.MarkOutput(b.AddOp(kind, {x, y}, out));
    ExpectMatchesReference(b.Build(), ++seed);
  }
}

model::ConvAttrs PointwiseConv(GraphBuilder& b, int64_t cin, int64_t cout, uint32_t seed) {
  model::ConvAttrs conv;
  conv.filter =
      b.AddConstant({cout, 1, 1, cin}, RandomVector(static_cast<size_t>(cin * cout), seed));
  return conv;
}

TEST(CpuExecutorConcat, BranchesWriteInPlaceAndNestedConcatsChain) {
  GraphBuilder b;
  auto x = b.AddInput({5, 6, 3});
  auto a = b.AddOp(OpKind::kConv2d, {x}, {5, 6, 4}, PointwiseConv(b, 3, 4, 1),
                   {.kind = ActivationKind::kRelu});
  auto c = b.AddOp(OpKind::kConv2d, {x}, {5, 6, 2}, PointwiseConv(b, 3, 2, 2));
  model::PoolAttrs pool;
  pool.window = {
      .kernel_h = 3, .kernel_w = 3, .pad_top = 1, .pad_left = 1, .pad_bottom = 1, .pad_right = 1};
  auto p = b.AddOp(OpKind::kMaxPool, {x}, {5, 6, 3}, pool);
  auto inner = b.AddOp(OpKind::kConcat, {a, c}, {5, 6, 6});
  auto outer = b.AddOp(OpKind::kConcat, {inner, p}, {5, 6, 9});
  // `a` is also read by a strided consumer; `x` (a graph input) must be copied.
  auto tail = b.AddOp(OpKind::kConv2d, {a}, {5, 6, 2}, PointwiseConv(b, 4, 2, 3));
  auto with_input = b.AddOp(OpKind::kConcat, {outer, x, tail}, {5, 6, 14});
  b.MarkOutput(with_input);
  b.MarkOutput(a);
  const model::Graph g = b.Build();
  const ArenaPlan plan = PlanArena(g);
  // a, c -> inner; inner, p -> outer; outer, tail -> with_input. x stays outside.
  EXPECT_EQ(plan.in_place_concat_inputs, 6);
  EXPECT_EQ(plan.tensors[static_cast<size_t>(a)].pixel_stride, 14);
  EXPECT_EQ(plan.tensors[static_cast<size_t>(p)].offset,
            plan.tensors[static_cast<size_t>(with_input)].offset + 6);
  ExpectMatchesReference(g, 5);
}

TEST(CpuExecutorConcat, ContiguousConsumerForcesACopy) {
  GraphBuilder b;
  auto x = b.AddInput({2, 3, 4});
  auto a = b.AddOp(OpKind::kConv2d, {x}, {2, 3, 4}, PointwiseConv(b, 4, 4, 1));
  auto sum = b.AddOp(OpKind::kAdd, {a, x}, {2, 3, 4});  // XNNPACK add reads contiguous input
  auto cat = b.AddOp(OpKind::kConcat, {a, sum}, {2, 3, 8});
  b.MarkOutput(cat);
  const model::Graph g = b.Build();
  EXPECT_EQ(PlanArena(g).in_place_concat_inputs, 0);
  ExpectMatchesReference(g, 2);
}

TEST(CpuExecutorHandKernels, PadResizeFlattenActivationSoftmax) {
  GraphBuilder b;
  auto x = b.AddInput({3, 5, 4});
  model::PadAttrs pad{.top = 1,
                      .left = 2,
                      .bottom = 0,
                      .right = 1,
                      .channels_before = 1,
                      .channels_after = 2,
                      .value = 0.5f};
  auto padded = b.AddOp(OpKind::kPad, {x}, {4, 8, 7}, pad);
  auto act =
      b.AddOp(OpKind::kActivation, {padded}, {4, 8, 7}, {}, {.kind = ActivationKind::kHardSwish});
  auto sm = b.AddOp(OpKind::kSoftmax, {act}, {4, 8, 7});
  b.MarkOutput(b.AddOp(OpKind::kFlatten, {sm}, {1, 1, 4 * 8 * 7}));
  ExpectMatchesReference(b.Build(), 3);
}

TEST(CpuExecutorHandKernels, ResizeEveryModeAndTransform) {
  using model::CoordinateTransform;
  using model::NearestRounding;
  uint32_t seed = 0;
  for (auto mode : {model::ResizeMode::kNearest, model::ResizeMode::kLinear}) {
    for (auto t : {CoordinateTransform::kHalfPixel, CoordinateTransform::kAsymmetric,
                   CoordinateTransform::kAlignCorners, CoordinateTransform::kPytorchHalfPixel}) {
      for (auto r : {NearestRounding::kRoundPreferFloor, NearestRounding::kRoundPreferCeil,
                     NearestRounding::kFloor, NearestRounding::kCeil}) {
        for (Shape out : {Shape{8, 10, 3}, Shape{2, 3, 3}, Shape{1, 7, 3}}) {
          GraphBuilder b;
          auto x = b.AddInput({4, 5, 3});
          model::ResizeAttrs attrs{mode, t, r, static_cast<float>(out.h) / 4.0f,
                                   static_cast<float>(out.w) / 5.0f};
          b.MarkOutput(b.AddOp(OpKind::kResize, {x}, out, attrs));
          ExpectMatchesReference(b.Build(), ++seed);
        }
      }
    }
  }
}

// Outputs of 33 rows and over 32K floats: two threads take a band of rows each (16 and 17).
TEST(CpuExecutorHandKernels, TwoThreadsSplitRowsAndAgreeWithTheReference) {
  uint32_t seed = 100;
  for (auto mode : {model::ResizeMode::kNearest, model::ResizeMode::kLinear}) {
    GraphBuilder b;
    auto x = b.AddInput({11, 20, 48});
    model::ResizeAttrs resize{mode, model::CoordinateTransform::kHalfPixel,
                              model::NearestRounding::kRoundPreferFloor, 3.0f, 2.0f};
    auto up = b.AddOp(OpKind::kResize, {x}, {33, 40, 48}, resize, {.kind = ActivationKind::kRelu});
    model::PadAttrs pad{.top = 1, .left = 0, .bottom = 0, .right = 1, .channels_after = 1};
    auto padded = b.AddOp(OpKind::kPad, {up}, {34, 41, 49}, pad);
    auto act = b.AddOp(OpKind::kActivation, {padded}, {34, 41, 49}, {},
                       {.kind = ActivationKind::kHardSwish});
    auto sm = b.AddOp(OpKind::kSoftmax, {act}, {34, 41, 49});
    // Dilated and padded: XNNPACK rejects it, so the hand pool runs.
    model::PoolAttrs pool;
    pool.window = {.kernel_h = 3,
                   .kernel_w = 3,
                   .dilation_h = 2,
                   .dilation_w = 2,
                   .pad_top = 2,
                   .pad_left = 2,
                   .pad_bottom = 2,
                   .pad_right = 2};
    auto pooled = b.AddOp(OpKind::kMaxPool, {sm}, {34, 41, 49}, pool);
    // `act` is also read by the softmax, so the concat copies it.
    b.MarkOutput(b.AddOp(OpKind::kConcat, {pooled, act}, {34, 41, 98}));
    ExpectMatchesReference(b.Build(), ++seed, {.cores = {}, .threads = 2});
  }
}

// x -> conv (relu) -> conv -> add(x), relu -> conv: a residual block whose add can run inside
// the second conv's kernel. With two threads the second conv runs as two oneDNN parts: by rows
// for a tall input, by output channels where the filter outweighs the input (6x6x64).
TEST(CpuExecutorResidualAdd, FusedIntoTheConvBeforeAndAgreesWithTheReference) {
  uint32_t seed = 200;
  for (const Shape& in : {Shape{20, 18, 32}, Shape{6, 6, 64}}) {
    for (int threads : {1, 2}) {
      GraphBuilder b;
      auto x = b.AddInput(in);
      auto a = b.AddOp(OpKind::kConv2d, {x}, in, RandomConv(b, in.c, in.c, 3, 1, 1, 1, 1, ++seed),
                       {.kind = ActivationKind::kRelu});
      auto body =
          b.AddOp(OpKind::kConv2d, {a}, in, RandomConv(b, in.c, in.c, 3, 1, 1, 1, 1, ++seed));
      auto sum = b.AddOp(OpKind::kAdd, {x, body}, in, {}, {.kind = ActivationKind::kRelu});
      b.MarkOutput(b.AddOp(OpKind::kConv2d, {sum}, {in.h, in.w, 8}, PointwiseConv(b, in.c, 8, 9)));
      const model::Graph g = b.Build();
      ExpectMatchesReference(g, ++seed, {.cores = {}, .threads = threads});
      auto exec = CpuGraphExecutor::Create(g, {.cores = {}, .threads = threads});
      ASSERT_TRUE(exec.ok()) << exec.status();
      EXPECT_EQ((*exec)->fused_residual_adds(), 1) << in.h << "x" << in.w << " " << threads;
      auto unfused = CpuGraphExecutor::Create(
          g, {.cores = {}, .threads = threads, .fuse_residual_adds = false});
      ASSERT_TRUE(unfused.ok()) << unfused.status();
      EXPECT_EQ((*unfused)->fused_residual_adds(), 0);
      ExpectMatchesReference(g, seed,
                             {.cores = {}, .threads = threads, .fuse_residual_adds = false});
    }
  }
}

// Where the conv runs on oneDNN the add is its binary post-op (the conv's output never
// written): whole convs, parts by rows, and a pointwise conv's parts by output channels
// (strided views of the residual and output). A direct conv cut by output channels (its
// parts' outputs are strided) and a conv whose own activation oneDNN cannot fuse before the
// add keep the add as a pass after each part. Every case agrees with the reference.
TEST(CpuExecutorResidualAdd, TheAddRunsAsAPostOpWhereOneDnnCanAndAsAPassElsewhere) {
  struct Case {
    Shape in;
    int k;
    int threads;
    ActivationKind body_activation;
    bool post_op;  // on builds with oneDNN
  };
  const Case cases[] = {
      {{20, 18, 32}, 3, 1, ActivationKind::kNone, true},
      {{20, 18, 32}, 3, 2, ActivationKind::kNone, true},      // parts by rows
      {{7, 7, 256}, 1, 2, ActivationKind::kNone, true},       // matmul parts by channels
      {{6, 6, 64}, 3, 2, ActivationKind::kNone, false},       // direct conv by channels
      {{20, 18, 32}, 3, 1, ActivationKind::kSilu, true},      // activation, then the add
      {{20, 18, 32}, 3, 1, ActivationKind::kErf, false},      // no eltwise post-op for it
  };
  uint32_t seed = 300;
  for (const Case& c : cases) {
    GraphBuilder b;
    auto x = b.AddInput(c.in);
    auto a =
        b.AddOp(OpKind::kConv2d, {x}, c.in, RandomConv(b, c.in.c, c.in.c, 3, 1, 1, 1, 1, ++seed),
                {.kind = ActivationKind::kRelu});
    auto body = b.AddOp(OpKind::kConv2d, {a}, c.in,
                        RandomConv(b, c.in.c, c.in.c, c.k, 1, 1, c.k / 2, 1, ++seed),
                        {.kind = c.body_activation});
    auto sum = b.AddOp(OpKind::kAdd, {x, body}, c.in, {}, {.kind = ActivationKind::kRelu});
    b.MarkOutput(
        b.AddOp(OpKind::kConv2d, {sum}, {c.in.h, c.in.w, 8}, PointwiseConv(b, c.in.c, 8, 9)));
    const model::Graph g = b.Build();
    const std::string where =
        absl::StrCat(c.in.h, "x", c.in.w, "x", c.in.c, " k", c.k, " threads ", c.threads);
    ExpectMatchesReference(g, ++seed, {.cores = {}, .threads = c.threads});
    auto exec = CpuGraphExecutor::Create(g, {.cores = {}, .threads = c.threads});
    ASSERT_TRUE(exec.ok()) << exec.status();
    ASSERT_EQ((*exec)->fused_residual_adds(), 1) << where;
    std::string library;
    ASSERT_TRUE(
        (*exec)
            ->CallOnWorker([&](std::span<const std::unique_ptr<CpuKernel>> kernels, pthreadpool_t) {
              library = std::string(kernels[1]->library());
              return absl::OkStatus();
            })
            .ok());
    const bool post_op = c.post_op && OneDnnAvailable();
    EXPECT_EQ(library.find("add post-op") != std::string::npos, post_op)
        << where << ": " << library;
    EXPECT_NE(library.find("+ add"), std::string::npos) << where << ": " << library;
  }
}

TEST(CpuExecutorResidualAdd, PairsThatCannotFuseRunApart) {
  const Shape in{8, 8, 16};
  for (int variant = 0; variant < 3; ++variant) {
    GraphBuilder b;
    auto x = b.AddInput(in);
    auto conv = b.AddOp(OpKind::kConv2d, {x}, in, RandomConv(b, 16, 16, 3, 1, 1, 1, 1, 30));
    if (variant == 0) {
      // The conv's output has a second reader.
      b.MarkOutput(b.AddOp(OpKind::kGlobalAvgPool, {conv}, {1, 1, 16}));
    } else if (variant == 1) {
      // Another conv runs between the conv and its add.
      b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, in, PointwiseConv(b, 16, 16, 31)));
    } else {
      // The conv's output is a graph output.
      b.MarkOutput(conv);
    }
    b.MarkOutput(b.AddOp(OpKind::kAdd, {conv, x}, in));
    const model::Graph g = b.Build();
    auto exec = CpuGraphExecutor::Create(g, {.cores = {}, .threads = 2});
    ASSERT_TRUE(exec.ok()) << exec.status();
    EXPECT_EQ((*exec)->fused_residual_adds(), 0) << "variant " << variant;
    ExpectMatchesReference(g, 40 + static_cast<uint32_t>(variant), {.cores = {}, .threads = 2});
  }
}

TEST(CpuExecutorResidualAdd, TheFusedKernelRefusesWhatItCannotRun) {
  const Shape in{6, 6, 16};
  GraphBuilder b;
  auto x = b.AddInput(in);
  auto conv = b.AddOp(OpKind::kConv2d, {x}, in, RandomConv(b, 16, 16, 3, 1, 1, 1, 1, 50));
  auto sum = b.AddOp(OpKind::kAdd, {conv, x}, in);
  b.MarkOutput(b.AddOp(OpKind::kGlobalAvgPool, {sum}, {1, 1, 16}));
  const model::Graph g = b.Build();
  // Not a conv and its residual add.
  EXPECT_THAT(CreateResidualAddedConv(g, 1, 2, {}, nullptr).status().message(),
              HasSubstr("is not a residual add of op 1"));
  auto kernel = CreateResidualAddedConv(g, 0, 1, {}, nullptr);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  std::vector<float> buf(4 * 6 * 6 * 16);
  auto view = [&](int k) { return TensorView{buf.data() + k * 6 * 6 * 16, in, 16}; };
  const TensorView x_view = view(0), conv_view = view(1), res_view = view(2), out_view = view(3);
  // Wrong view count, a residual of another shape, an output over the conv's input.
  EXPECT_THAT((*kernel)->Setup(std::vector{x_view, conv_view}, out_view).message(),
              HasSubstr("expected 3"));
  const TensorView small{buf.data(), {3, 6, 16}, 16};
  EXPECT_THAT((*kernel)->Setup(std::vector{x_view, conv_view, small}, out_view).message(),
              HasSubstr("must have the conv's shape"));
  EXPECT_THAT((*kernel)->Setup(std::vector{x_view, conv_view, res_view}, x_view).message(),
              HasSubstr("overlaps a tensor the conv's parts may still read"));
  // In place over the residual is fine.
  EXPECT_TRUE((*kernel)->Setup(std::vector{x_view, conv_view, res_view}, res_view).ok());
  if (OneDnnAvailable()) {
    // The post-op kernel was built for a dense residual: one of another pixel stride is
    // refused, not read wrong.
    ASSERT_NE(std::string((*kernel)->library()).find("add post-op"), std::string::npos);
    std::vector<float> wide(6 * 6 * 32);
    const TensorView strided_residual{wide.data(), in, 32};
    EXPECT_THAT(
        (*kernel)->Setup(std::vector{x_view, conv_view, strided_residual}, out_view).message(),
        HasSubstr("residual view does not match"));
  }
}

TEST(CpuExecutor, TwoXnnpackThreadsGiveTheSameResult) {
  GraphBuilder b;
  auto x = b.AddInput({9, 9, 8});
  model::ConvAttrs conv = PointwiseConv(b, 8, 16, 4);
  conv.window.kernel_h = conv.window.kernel_w = 1;
  b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, {9, 9, 16}, conv));
  ExpectMatchesReference(b.Build(), 4, {.cores = {}, .threads = 2});
}

// An executor on cores {0, 1} with a thread per core runs on a caller on either core (in
// its worker's place; on core 1 by moving the pool's thread there to core 0), and from a
// thread on neither through its worker. Every way gives the reference's output.
TEST(CpuExecutor, RunsOnACallerOnEitherOfItsCores) {
  if (std::thread::hardware_concurrency() < 2) GTEST_SKIP() << "needs two cores";
  GraphBuilder b;
  auto x = b.AddInput({40, 40, 8});
  auto a = b.AddOp(OpKind::kConv2d, {x}, {40, 40, 16}, RandomConv(b, 8, 16, 3, 1, 1, 1, 1, 5));
  model::PoolAttrs pool;
  pool.window = {.kernel_h = 2, .kernel_w = 2, .stride_h = 2, .stride_w = 2};
  b.MarkOutput(b.AddOp(OpKind::kMaxPool, {a}, {20, 20, 16}, pool));
  const model::Graph graph = b.Build();
  auto exec = CpuGraphExecutor::Create(graph, {.cores = {0, 1}, .threads = 2});
  ASSERT_TRUE(exec.ok()) << exec.status();
  for (int core : {1, 0, 1}) {
    testing::ScopedAffinity on_core({core});
    ASSERT_TRUE(on_core.ok());
    const std::vector<std::vector<float>> input{RandomVector(40 * 40 * 8, 30 + core)};
    auto actual = (*exec)->Run(input);
    ASSERT_TRUE(actual.ok()) << actual.status();
    auto expected = reference::RunGraph(graph, input);
    ASSERT_TRUE(expected.ok());
    EXPECT_LT(testing::RelativeL2((*actual)[0], (*expected)[0]), 1e-5) << "caller on core " << core;
  }
}

TEST(CpuExecutor, RecordsOpTimingsInOrder) {
  GraphBuilder b;
  auto x = b.AddInput({6, 6, 4});
  auto a = b.AddOp(OpKind::kConv2d, {x}, {6, 6, 8}, PointwiseConv(b, 4, 8, 1));
  b.MarkOutput(b.AddOp(OpKind::kGlobalAvgPool, {a}, {1, 1, 8}));
  auto exec = CpuGraphExecutor::Create(b.Build(), {});
  ASSERT_TRUE(exec.ok());
  ASSERT_TRUE((*exec)->Run({RandomVector(144, 1)}).ok());
  const auto& t = (*exec)->last_op_timings();
  ASSERT_EQ(t.size(), 2u);
  EXPECT_LE(t[0].start_ns, t[0].end_ns);
  EXPECT_LE(t[0].end_ns, t[1].start_ns);
  EXPECT_LE(t[1].start_ns, t[1].end_ns);
}

TEST(CpuExecutor, PinsToCoreZero) {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 2});
  b.MarkOutput(b.AddOp(OpKind::kGlobalAvgPool, {x}, {1, 1, 2}));
  ExpectMatchesReference(b.Build(), 4, {.cores = {0}, .threads = 1});
}

model::Graph SmallGraph() {
  GraphBuilder b;
  auto x = b.AddInput({2, 2, 3});
  b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, {2, 2, 2}, PointwiseConv(b, 3, 2, 1)));
  return b.Build();
}

TEST(CpuExecutor, GraphNeedNotOutliveTheExecutor) {
  // Weights are packed or copied at Create, so the temporary graph may go away.
  auto exec = CpuGraphExecutor::Create(SmallGraph(), {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  const std::vector<std::vector<float>> input{RandomVector(12, 9)};
  auto actual = (*exec)->Run(input);
  ASSERT_TRUE(actual.ok());
  auto expected = reference::RunGraph(SmallGraph(), input);
  ASSERT_TRUE(expected.ok());
  for (size_t i = 0; i < (*expected)[0].size(); ++i) {
    EXPECT_NEAR((*actual)[0][i], (*expected)[0][i], 1e-5);
  }
}

TEST(CpuExecutorErrors, WrongInputSizeAndCount) {
  auto exec = CpuGraphExecutor::Create(SmallGraph(), {});
  ASSERT_TRUE(exec.ok()) << exec.status();
  auto wrong_size = (*exec)->Run(std::vector<std::vector<float>>{std::vector<float>(11)});
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_THAT(wrong_size.status().ToString(), HasSubstr("holds 11 floats, expected 12"));
  auto wrong_count = (*exec)->Run(std::vector<std::vector<float>>{});
  ASSERT_FALSE(wrong_count.ok());
  EXPECT_THAT(wrong_count.status().ToString(), HasSubstr("takes 1 inputs, got 0"));
  float out[4];
  float* outs[] = {out};
  const float* null_in[] = {nullptr};
  EXPECT_THAT((*exec)->Run(null_in, outs).ToString(), HasSubstr("null input"));
}

TEST(CpuExecutorErrors, RejectsGraphsWithoutWeightsBadOptionsAndBadOps) {
  model::Graph no_weights = SmallGraph();
  no_weights.has_weights = false;
  EXPECT_THAT(CpuGraphExecutor::Create(no_weights, {}).status().ToString(),
              HasSubstr("has no weights"));
  EXPECT_THAT(CpuGraphExecutor::Create(SmallGraph(), {.cores = {-3}}).status().ToString(),
              HasSubstr("core id -3"));
  EXPECT_THAT(
      CpuGraphExecutor::Create(SmallGraph(), {.cores = {}, .threads = 0}).status().ToString(),
      HasSubstr("threads must be >= 1"));
  model::Graph bad = SmallGraph();
  bad.constants[0].dims = {2, 1, 1, 4};
  EXPECT_THAT(CpuGraphExecutor::Create(bad, {}).status().ToString(),
              HasSubstr("expected [2,1,1,3]"));
}

}  // namespace
}  // namespace psched::executor::cpu
