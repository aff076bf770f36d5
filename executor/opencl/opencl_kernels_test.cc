// Every OpenCL kernel against the reference kernels, on seeded random small shapes; each slice
// kind tiled across 2-3 slices must reproduce the whole output.
#include "executor/opencl/opencl_kernels.h"

#include <gtest/gtest.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <optional>
#include <functional>
#include <string>
#include <vector>

#include "executor/opencl/opencl_test_util.h"
#include "executor/reference/reference_kernels.h"
#include "executor/testing/graph_builder.h"

namespace psched::executor::opencl {
namespace {

using executor::testing::GraphBuilder;
using executor::testing::RandomVector;
using model::Activation;
using model::ActivationKind;
using model::Graph;
using model::OpKind;
using model::Shape;
using model::SplitAxis;

// Gap between tensors in the test arena, filled with a sentinel: a kernel writing outside its
// tensor shows up as a changed sentinel.
constexpr int64_t kGuard = 7;
constexpr float kSentinel = -12345.0f;

// A graph laid out in an arena: every non-constant tensor at its own offset, inputs filled with
// seeded random values.
struct Fixture {
  Graph graph;
  std::unique_ptr<SvmArena> arena;
  std::vector<int64_t> offsets;
  std::unique_ptr<KernelFactory> factory;
};

// `spare` floats of free arena follow the tensors; inputs are drawn from [lo, hi).
Fixture Prepare(OpenClDevice* device, Graph graph, uint32_t seed,
                std::optional<MemoryMode> mode = {}, int64_t spare = 0, float lo = -1.0f,
                float hi = 1.0f) {
  Fixture f;
  f.graph = std::move(graph);
  int64_t next = kGuard;
  for (const model::Tensor& t : f.graph.tensors) {
    if (t.constant != model::kInvalidId) {
      f.offsets.push_back(-1);
      continue;
    }
    f.offsets.push_back(next);
    next += t.shape.Elements() + kGuard;
  }
  next += spare;
  absl::StatusOr<std::unique_ptr<SvmArena>> arena =
      SvmArena::Create(device, static_cast<size_t>(next), mode);
  EXPECT_TRUE(arena.ok()) << arena.status();
  f.arena = std::move(*arena);
  std::vector<float> init(static_cast<size_t>(next), kSentinel);
  for (size_t t = 0; t < f.graph.tensors.size(); ++t) {
    const model::Tensor& tensor = f.graph.tensors[t];
    if (tensor.constant != model::kInvalidId || tensor.producer != model::kInvalidId) continue;
    std::vector<float> values =
        RandomVector(static_cast<size_t>(tensor.shape.Elements()), seed + t, lo, hi);
    std::copy(values.begin(), values.end(), init.begin() + f.offsets[t]);
  }
  EXPECT_TRUE(f.arena->Write(0, init).ok());
  absl::StatusOr<std::unique_ptr<KernelFactory>> factory =
      KernelFactory::Create(device, &f.graph, f.arena.get(), f.offsets);
  EXPECT_TRUE(factory.ok()) << factory.status();
  f.factory = std::move(*factory);
  return f;
}

std::vector<float> ReadTensor(const Fixture& f, model::TensorId t) {
  std::vector<float> out(static_cast<size_t>(f.graph.tensor(t).shape.Elements()));
  EXPECT_TRUE(f.arena->Read(static_cast<size_t>(f.offsets[t]), out).ok());
  return out;
}

std::vector<float> Reference(const Fixture& f, model::OpId id) {
  std::vector<std::vector<float>> inputs;
  std::vector<const float*> pointers;
  for (model::TensorId t : f.graph.ActivationInputs(id)) inputs.push_back(ReadTensor(f, t));
  for (const auto& v : inputs) pointers.push_back(v.data());
  std::vector<float> out(static_cast<size_t>(f.graph.output_shape(id).Elements()));
  absl::Status s = reference::RunOp(f.graph, id, pointers, out.data());
  EXPECT_TRUE(s.ok()) << s;
  return out;
}

void ExpectNear(const std::vector<float>& got, const std::vector<float>& want,
                const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const float tol = 1e-4f + 1e-4f * std::fabs(want[i]);
    if (!(std::fabs(got[i] - want[i]) <= tol) && reported++ < 5) {
      ADD_FAILURE() << what << ": element " << i << " is " << got[i] << ", reference "
                    << want[i];
    }
  }
}

void ExpectGuardsIntact(const Fixture& f) {
  std::vector<float> all(f.arena->size());
  ASSERT_TRUE(f.arena->Read(0, all).ok());
  int64_t begin = 0;
  for (size_t t = 0; t <= f.graph.tensors.size(); ++t) {
    if (t < f.graph.tensors.size() && f.offsets[t] < 0) continue;
    const int64_t end = t < f.graph.tensors.size() ? f.offsets[t] : begin + kGuard;
    for (int64_t i = begin; i < end; ++i) {
      ASSERT_EQ(all[static_cast<size_t>(i)], kSentinel) << "guard word " << i << " overwritten";
    }
    if (t < f.graph.tensors.size()) begin = end + f.graph.tensors[t].shape.Elements();
  }
}

// Runs the op whole, then tiled into `parts` slices along every axis the OpenCL kernels take,
// comparing each result with the reference; the CPU-only splits must be refused. Inputs are drawn from [lo, hi).
void CheckOpAllSlices(OpenClDevice* device, Graph graph, const std::string& label,
                      int parts = 3, float lo = -1.0f, float hi = 1.0f) {
  Fixture f = Prepare(device, std::move(graph), 17, {}, 0, lo, hi);
  const model::OpId id = static_cast<model::OpId>(f.graph.ops.size()) - 1;
  const model::TensorId out = f.graph.op(id).output;
  const std::vector<float> want = Reference(f, id);

  absl::StatusOr<std::unique_ptr<OpKernel>> whole = f.factory->Create(id);
  ASSERT_TRUE(whole.ok()) << label << ": " << whole.status();
  ASSERT_TRUE((*whole)->Enqueue().ok());
  ExpectNear(ReadTensor(f, out), want, label + " whole");
  ExpectGuardsIntact(f);

  for (SplitAxis axis : {SplitAxis::kOutputChannels, SplitAxis::kRows,
                         SplitAxis::kInputChannels}) {
    const int64_t work = model::WorkSize(f.graph, id, axis);
    if (work < 2) continue;
    const OpKind kind = f.graph.op(id).kind;
    if (kind != OpKind::kConv2d && (kind != OpKind::kFullyConnected || axis == SplitAxis::kRows)) {
      // The row and matmul splits are CPU-only (scheduler/device_capability.h).
      absl::StatusOr<std::unique_ptr<OpKernel>> refused =
          f.factory->Create(id, WorkSlice{axis, 0, 1});
      EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnimplemented)
          << label << " " << model::SplitAxisName(axis) << ": " << refused.status();
      continue;
    }
    for (bool atomic : {true, false}) {
      if (axis != SplitAxis::kInputChannels && !atomic) continue;
      const std::string what = label + " " + std::string(model::SplitAxisName(axis)) +
                               (axis == SplitAxis::kInputChannels
                                    ? (atomic ? " atomic" : " plain")
                                    : "");
      // Poison the output so a slice that misses part of it cannot pass by accident.
      std::vector<float> poison(want.size(), 999.0f);
      ASSERT_TRUE(f.arena->Write(static_cast<size_t>(f.offsets[out]), poison).ok());
      if (axis == SplitAxis::kInputChannels) {
        absl::StatusOr<std::unique_ptr<OpKernel>> zero = f.factory->CreateZeroFill(id);
        ASSERT_TRUE(zero.ok()) << zero.status();
        ASSERT_TRUE((*zero)->Enqueue().ok());
      }
      const int n = static_cast<int>(std::min<int64_t>(parts, work));
      for (int p = 0; p < n; ++p) {
        WorkSlice slice{axis, work * p / n, work * (p + 1) / n};
        absl::StatusOr<std::unique_ptr<OpKernel>> k =
            f.factory->Create(id, slice, KernelOptions{atomic});
        ASSERT_TRUE(k.ok()) << what << ": " << k.status();
        ASSERT_TRUE((*k)->Enqueue().ok());
      }
      if (axis == SplitAxis::kInputChannels) {
        absl::StatusOr<std::unique_ptr<OpKernel>> epilogue =
            f.factory->CreateActivationEpilogue(id);
        ASSERT_TRUE(epilogue.ok()) << epilogue.status();
        ASSERT_TRUE((*epilogue)->Enqueue().ok());
      }
      ExpectNear(ReadTensor(f, out), want, what);
      ExpectGuardsIntact(f);
    }
  }
}

struct ConvCase {
  std::string name;
  Shape in;
  int cout;
  int kh, kw, sh, sw, dh, dw, pt, pl, pb, pr;
  int groups;
  bool bias;
  Activation act;
};

int64_t ConvOut(int64_t in, int k, int s, int d, int p0, int p1) {
  return (in + p0 + p1 - (static_cast<int64_t>(k) - 1) * d - 1) / s + 1;
}

Graph ConvGraph(const ConvCase& c, uint32_t seed) {
  GraphBuilder b(c.name);
  model::TensorId x = b.AddInput(c.in);
  model::ConvAttrs attrs;
  attrs.window = {c.kh, c.kw, c.sh, c.sw, c.dh, c.dw, c.pt, c.pl, c.pb, c.pr};
  attrs.groups = c.groups;
  const int64_t cig = c.in.c / c.groups;
  attrs.filter = b.AddConstant({c.cout, c.kh, c.kw, cig},
                               RandomVector(static_cast<size_t>(c.cout * c.kh * c.kw * cig),
                                            seed));
  if (c.bias) attrs.bias = b.AddConstant({c.cout}, RandomVector(c.cout, seed + 1));
  Shape out{ConvOut(c.in.h, c.kh, c.sh, c.dh, c.pt, c.pb),
            ConvOut(c.in.w, c.kw, c.sw, c.dw, c.pl, c.pr), c.cout};
  b.MarkOutput(b.AddOp(OpKind::kConv2d, {x}, out, attrs, c.act));
  return b.Build();
}

Activation Act(ActivationKind kind, float lo = 0.0f, float hi = 6.0f) {
  Activation a;
  a.kind = kind;
  if (kind == ActivationKind::kClip) {
    a.min = lo;
    a.max = hi;
  }
  return a;
}

class ConvKernelTest : public ::testing::TestWithParam<ConvCase> {};

TEST_P(ConvKernelTest, MatchesReferenceWholeAndTiled) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device, ConvGraph(GetParam(), 3), GetParam().name);
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, ConvKernelTest,
    ::testing::Values(
        ConvCase{"k3_pad1_odd", {9, 11, 5}, 7, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true,
                 Act(ActivationKind::kRelu)},
        ConvCase{"k1_no_bias", {6, 5, 8}, 12, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 1, false, {}},
        ConvCase{"k3_stride2_asym_pads", {10, 9, 6}, 9, 3, 3, 2, 2, 1, 1, 0, 1, 1, 0, 1, true,
                 Act(ActivationKind::kClip)},
        ConvCase{"k3_dilation2", {11, 10, 4}, 5, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 1, true,
                 Act(ActivationKind::kHardSwish)},
        ConvCase{"k5x3_stride_1x2", {9, 13, 3}, 6, 5, 3, 1, 2, 1, 1, 2, 1, 2, 1, 1, true,
                 Act(ActivationKind::kSigmoid)},
        ConvCase{"grouped_2", {7, 7, 6}, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, true,
                 Act(ActivationKind::kHardSigmoid)},
        ConvCase{"grouped_3_small_groups", {5, 6, 9}, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 3, false,
                 {}},
        ConvCase{"depthwise", {9, 10, 10}, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 10, true,
                 Act(ActivationKind::kClip)},
        ConvCase{"depthwise_stride2", {12, 11, 7}, 7, 3, 3, 2, 2, 1, 1, 1, 1, 0, 0, 7, true,
                 Act(ActivationKind::kRelu)},
        ConvCase{"depthwise_multiplier2_dilated", {8, 9, 3}, 6, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 3,
                 true, {}},
        ConvCase{"wide_channels", {4, 5, 33}, 37, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, {}},
        // A newer activation, fused and, for cin slices, in the epilogue.
        ConvCase{"k3_tanh", {6, 7, 5}, 9, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true,
                 Act(ActivationKind::kTanh)}),
    [](const auto& param_info) { return param_info.param.name; });

Graph FullyConnectedGraph(Shape in, int out, bool bias, Activation act) {
  GraphBuilder b("fc");
  model::TensorId x = b.AddInput(in);
  model::FullyConnectedAttrs attrs;
  attrs.weight = b.AddConstant({out, in.Elements()},
                               RandomVector(static_cast<size_t>(out * in.Elements()), 5));
  if (bias) attrs.bias = b.AddConstant({out}, RandomVector(out, 6));
  b.MarkOutput(b.AddOp(OpKind::kFullyConnected, {x}, Shape{1, 1, out}, attrs, act));
  return b.Build();
}

TEST(FullyConnectedKernelTest, MatchesReferenceWholeAndTiled) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device, FullyConnectedGraph({1, 1, 37}, 19, true, Act(ActivationKind::kRelu)),
                   "fc_37x19_relu");
  CheckOpAllSlices(device, FullyConnectedGraph({1, 1, 64}, 10, false, {}), "fc_64x10", 2);
  CheckOpAllSlices(device, FullyConnectedGraph({1, 1, 40}, 13, true, Act(ActivationKind::kErf)),
                   "fc_40x13_erf");
}

// Single-op graphs for the kinds that are never split.
Graph OneOp(OpKind kind, std::vector<Shape> inputs, Shape out, model::OpAttrs attrs = {},
            Activation act = {}) {
  GraphBuilder b(std::string(model::OpKindName(kind)));
  std::vector<model::TensorId> ids;
  for (const Shape& s : inputs) ids.push_back(b.AddInput(s));
  b.MarkOutput(b.AddOp(kind, ids, out, std::move(attrs), act));
  return b.Build();
}

model::PoolAttrs Pool(int k, int s, int pad, bool include, int extra = 0, int d = 1) {
  model::PoolAttrs p;
  p.window = {k, k, s, s, d, d, pad, pad, pad + extra, pad + extra};
  p.count_include_pad = include;
  p.declared_pad_bottom = pad;
  p.declared_pad_right = pad;
  return p;
}

TEST(PoolKernelTest, MaxAndAveragePoolingMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device, OneOp(OpKind::kMaxPool, {{9, 11, 6}}, {5, 6, 6}, Pool(3, 2, 1, false)),
                   "max_3x3_s2_p1");
  CheckOpAllSlices(device, OneOp(OpKind::kAvgPool, {{9, 11, 6}}, {5, 6, 6}, Pool(3, 2, 1, true)),
                   "avg_include_pad");
  CheckOpAllSlices(device, OneOp(OpKind::kAvgPool, {{9, 11, 6}}, {5, 6, 6}, Pool(3, 2, 1, false)),
                   "avg_exclude_pad");
  // ceil_mode: 8x8, k2 s2... with k3 s2 p0: floor gives 3, ceil gives 4 via one extra row/col.
  CheckOpAllSlices(device, OneOp(OpKind::kAvgPool, {{8, 8, 5}}, {4, 4, 5}, Pool(3, 2, 0, true, 1)),
                   "avg_ceil_mode_include_pad");
  CheckOpAllSlices(device, OneOp(OpKind::kMaxPool, {{8, 8, 5}}, {4, 4, 5}, Pool(3, 2, 0, false, 1)),
                   "max_ceil_mode");
  CheckOpAllSlices(device, OneOp(OpKind::kMaxPool, {{9, 9, 3}}, {5, 5, 3}, Pool(3, 1, 0, false, 0, 2)),
                   "max_dilated");
  CheckOpAllSlices(device, OneOp(OpKind::kGlobalAvgPool, {{7, 5, 13}}, {1, 1, 13}),
                   "global_avg_pool");
}

Graph BinaryGraph(OpKind kind, Shape a, Shape b, Shape out, int constant_input,
                  Activation act = {}) {
  GraphBuilder builder("binary");
  std::vector<model::TensorId> ids;
  const Shape shapes[] = {a, b};
  for (int i = 0; i < 2; ++i) {
    ids.push_back(i == constant_input
                      ? builder.AddConstantTensor(
                            shapes[i], RandomVector(static_cast<size_t>(shapes[i].Elements()), 9))
                      : builder.AddInput(shapes[i]));
  }
  builder.MarkOutput(builder.AddOp(kind, ids, out, {}, act));
  return builder.Build();
}

TEST(BinaryKernelTest, BroadcastAndConstantOperandsMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device, BinaryGraph(OpKind::kAdd, {5, 6, 7}, {5, 6, 7}, {5, 6, 7}, -1,
                                       Act(ActivationKind::kRelu)),
                   "add_same_shape_relu");
  CheckOpAllSlices(device, BinaryGraph(OpKind::kMul, {5, 6, 7}, {1, 1, 7}, {5, 6, 7}, 1),
                   "mul_channel_constant");
  CheckOpAllSlices(device, BinaryGraph(OpKind::kSub, {1, 1, 7}, {5, 6, 7}, {5, 6, 7}, 0),
                   "sub_constant_first");
  CheckOpAllSlices(device, BinaryGraph(OpKind::kAdd, {5, 6, 1}, {5, 6, 7}, {5, 6, 7}, -1),
                   "add_broadcast_channels");
  CheckOpAllSlices(device, BinaryGraph(OpKind::kMul, {5, 6, 7}, {1, 1, 7}, {5, 6, 7}, -1),
                   "mul_broadcast_hw_activation_input");
}

TEST(LayoutKernelTest, ConcatPadFlattenMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device, OneOp(OpKind::kConcat, {{4, 5, 3}, {4, 5, 6}, {4, 5, 1}}, {4, 5, 10}),
                   "concat3");
  model::PadAttrs pad;
  pad.top = 1;
  pad.left = 2;
  pad.bottom = 0;
  pad.right = 3;
  pad.channels_before = 1;
  pad.channels_after = 2;
  pad.value = 0.5f;
  CheckOpAllSlices(device, OneOp(OpKind::kPad, {{4, 5, 3}}, {5, 10, 6}, pad), "pad");
  CheckOpAllSlices(device, OneOp(OpKind::kFlatten, {{3, 4, 5}}, {1, 1, 60}), "flatten");
}

TEST(ResizeKernelTest, EveryModeTransformAndRoundingMatchesReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const model::CoordinateTransform transforms[] = {
      model::CoordinateTransform::kHalfPixel, model::CoordinateTransform::kAsymmetric,
      model::CoordinateTransform::kAlignCorners, model::CoordinateTransform::kPytorchHalfPixel};
  const model::NearestRounding roundings[] = {
      model::NearestRounding::kRoundPreferFloor, model::NearestRounding::kRoundPreferCeil,
      model::NearestRounding::kFloor, model::NearestRounding::kCeil};
  for (model::CoordinateTransform transform : transforms) {
    for (int mode = 0; mode < 2; ++mode) {
      for (model::NearestRounding rounding : roundings) {
        if (mode == 1 && rounding != roundings[0]) continue;
        model::ResizeAttrs attrs;
        attrs.mode = mode == 0 ? model::ResizeMode::kNearest : model::ResizeMode::kLinear;
        attrs.transform = transform;
        attrs.rounding = rounding;
        // Up 2x in h, 7/4 in w (non-integer), so ties and non-ties both occur; both scales
        // are exact in float, so source coordinates match the double-precision reference.
        attrs.scale_h = 2.0f;
        attrs.scale_w = 7.0f / 4.0f;
        const std::string label =
            "resize mode " + std::to_string(mode) + " transform " +
            std::to_string(static_cast<int>(transform)) + " rounding " +
            std::to_string(static_cast<int>(rounding));
        CheckOpAllSlices(device, OneOp(OpKind::kResize, {{4, 4, 5}}, {8, 7, 5}, attrs), label);
      }
    }
  }
  model::ResizeAttrs down;
  down.mode = model::ResizeMode::kLinear;
  down.transform = model::CoordinateTransform::kHalfPixel;
  down.scale_h = 0.5f;
  down.scale_w = 0.5f;
  CheckOpAllSlices(device, OneOp(OpKind::kResize, {{8, 6, 3}}, {4, 3, 3}, down), "resize_down");
}

TEST(ElementwiseKernelTest, ActivationsAndSoftmaxMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  // Every kind, over [-3, 3) (past hard-swish's and hard-sigmoid's knees); log, sqrt and the
  // fractional power over (0.1, 3) where they are defined.
  for (int k = 1; k <= static_cast<int>(ActivationKind::kPow); ++k) {
    const auto kind = static_cast<ActivationKind>(k);
    Activation act = Act(kind, -0.25f, 0.5f);
    const bool positive = kind == ActivationKind::kLog || kind == ActivationKind::kSqrt ||
                          kind == ActivationKind::kPow;
    for (float exponent : {2.0f, 0.5f, 3.0f}) {
      if (kind != ActivationKind::kPow && exponent != 2.0f) continue;
      if (kind == ActivationKind::kPow) act.alpha = exponent;
      CheckOpAllSlices(device, OneOp(OpKind::kActivation, {{3, 5, 7}}, {3, 5, 7}, {}, act),
                       "activation " + std::to_string(k) + " alpha " + std::to_string(exponent),
                       3, positive ? 0.1f : -3.0f, 3.0f);
    }
  }
  CheckOpAllSlices(device, OneOp(OpKind::kSoftmax, {{2, 3, 11}}, {2, 3, 11}), "softmax");
  CheckOpAllSlices(device,
                   OneOp(OpKind::kSoftmax, {{1, 1, 9}}, {1, 1, 9}, {},
                         Act(ActivationKind::kClip, 0.0f, 0.2f)),
                   "softmax_clip");
}

// One op over row-major tensors of the given physical dims; input `constant_input` (-1: none)
// is a seeded random constant.
Graph RowMajorOp(OpKind kind, const std::vector<std::vector<int64_t>>& inputs,
                 const std::vector<int64_t>& out, model::OpAttrs attrs = {}, Activation act = {},
                 int constant_input = -1) {
  GraphBuilder b(std::string(model::OpKindName(kind)));
  std::vector<model::TensorId> ids;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Shape view = model::ViewOf(inputs[i], /*channels_last=*/false);
    ids.push_back(static_cast<int>(i) == constant_input
                      ? b.AddConstantTensor(view, RandomVector(static_cast<size_t>(
                                                                   view.Elements()),
                                                               23))
                      : b.AddInput(view));
  }
  b.MarkOutput(b.AddOp(kind, ids, model::ViewOf(out, false), std::move(attrs), act));
  Graph g = b.Build();
  std::vector<std::vector<int64_t>> all = inputs;
  all.push_back(out);
  for (size_t t = 0; t < all.size(); ++t) {
    model::Tensor& tensor = g.tensors[t];
    tensor.dims = all[t];
    tensor.channels_last = false;
    tensor.onnx_rank = static_cast<int32_t>(all[t].size());
    if (tensor.constant != model::kInvalidId) {
      g.constants[static_cast<size_t>(tensor.constant)].dims = all[t];
    }
  }
  return g;
}

// Sizes straddle the 32x64 output tile, a work-item's 8 columns and the 16-deep k step;
// batches broadcast either operand, across ranks, and a constant operand comes from the op's
// weights.
TEST(MatMulKernelTest, BatchedBroadcastAndOddSizesMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device, RowMajorOp(OpKind::kMatMul, {{1, 1}, {1, 1}}, {1, 1}), "1x1x1");
  CheckOpAllSlices(device, RowMajorOp(OpKind::kMatMul, {{37, 19}, {19, 45}}, {37, 45}),
                   "37x19x45");
  CheckOpAllSlices(device, RowMajorOp(OpKind::kMatMul, {{64, 32}, {32, 64}}, {64, 64}),
                   "64x32x64 exact tiles");
  CheckOpAllSlices(device, RowMajorOp(OpKind::kMatMul, {{33, 70}, {70, 131}}, {33, 131}),
                   "33x70x131");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kMatMul, {{3, 33, 17}, {3, 17, 31}}, {3, 33, 31}),
                   "batched 3");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kMatMul, {{2, 3, 5, 7}, {3, 7, 9}}, {2, 3, 5, 9}),
                   "b broadcast over the leading dim");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kMatMul, {{2, 1, 5, 7}, {1, 4, 7, 6}}, {2, 4, 5, 6}),
                   "both broadcast");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kMatMul, {{1, 2, 1, 3, 1, 40}, {2, 1, 2, 1, 40, 3}},
                              {2, 2, 2, 3, 1, 3}),
                   "rank 6");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kMatMul, {{2, 50, 70}, {70, 33}}, {2, 50, 33}, {},
                              Act(ActivationKind::kGelu), /*constant_input=*/1),
                   "constant b, gelu");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kMatMul, {{9, 21}, {4, 21, 10}}, {4, 9, 10}, {},
                              Act(ActivationKind::kRelu), /*constant_input=*/0),
                   "constant a broadcast, relu");
}

// A layer norm over the last of `dims` with seeded random scale (and bias, when `bias`).
Graph LayerNormGraph(const std::vector<int64_t>& dims, bool bias, float epsilon,
                     Activation act = {}) {
  Graph g = RowMajorOp(OpKind::kLayerNorm, {dims}, dims, model::LayerNormAttrs{}, act);
  const int64_t n = dims.back();
  auto& ln = std::get<model::LayerNormAttrs>(g.ops[0].attrs);
  ln.epsilon = epsilon;
  ln.scale = static_cast<model::ConstantId>(g.constants.size());
  g.constants.push_back({"scale", {n}, RandomVector(static_cast<size_t>(n), 31, 0.5f, 1.5f)});
  if (bias) {
    ln.bias = static_cast<model::ConstantId>(g.constants.size());
    g.constants.push_back({"bias", {n}, RandomVector(static_cast<size_t>(n), 37)});
  }
  return g;
}

// Rows shorter and longer than the 64-wide work-group, and not a multiple of it.
TEST(RowKernelTest, RowMajorSoftmaxAndLayerNormMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device, RowMajorOp(OpKind::kSoftmax, {{2, 4, 17, 17}}, {2, 4, 17, 17}),
                   "softmax rows 17");
  CheckOpAllSlices(device, RowMajorOp(OpKind::kSoftmax, {{3, 197}}, {3, 197}), "softmax rows 197");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kSoftmax, {{5, 1}}, {5, 1}, {},
                              Act(ActivationKind::kClip, 0.0f, 0.5f)),
                   "softmax rows 1, clip");
  CheckOpAllSlices(device, LayerNormGraph({17, 32}, true, 1e-5f), "layer norm 17x32");
  CheckOpAllSlices(device, LayerNormGraph({2, 5, 131}, false, 1e-6f), "layer norm no bias");
  CheckOpAllSlices(device, LayerNormGraph({3, 7}, true, 1e-3f, Act(ActivationKind::kGelu)),
                   "layer norm 7, gelu");
  CheckOpAllSlices(device, LayerNormGraph({1, 768}, true, 1e-5f), "layer norm 768");
}

// Numpy broadcasting over physical dims of rank 1-6: operands of lower rank, extent-1 axes on
// either side, an operand with extra leading 1s, constants, every binary kind and fused
// activations beyond the classic ones.
TEST(BinaryKernelTest, RowMajorBroadcastOfAnyRankMatchesReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device, RowMajorOp(OpKind::kAdd, {{1, 17, 48}, {1, 17, 48}}, {1, 17, 48}),
                   "residual add");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kDiv, {{2, 3, 4, 5}, {3, 1, 5}}, {2, 3, 4, 5}, {}, {},
                              /*constant_input=*/1),
                   "div by a broadcast constant", 3, 0.5f, 2.0f);
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kSub, {{2, 1, 3, 1, 2, 5}, {1, 2, 1, 4, 1, 5}},
                              {2, 2, 3, 4, 2, 5}),
                   "sub rank 6, both broadcast");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kMul, {{1}, {5, 9}}, {5, 9}, {}, Act(ActivationKind::kTanh),
                              /*constant_input=*/0),
                   "scalar constant times a matrix, tanh");
  CheckOpAllSlices(device, RowMajorOp(OpKind::kAdd, {{1, 1, 5, 7}, {5, 7}}, {5, 7}),
                   "operand with extra leading 1s");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kMul, {{4, 1}, {1, 6}}, {4, 6}, {},
                              Act(ActivationKind::kErf)),
                   "outer product, erf");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kDiv, {{7}, {7}}, {7}, {}, Act(ActivationKind::kNeg)),
                   "rank 1 div, neg", 3, 0.5f, 2.0f);
}

model::TransposeAttrs Perm(std::vector<int64_t> in_dims, std::vector<int32_t> perm) {
  return model::TransposeAttrs{std::move(in_dims), std::move(perm)};
}

// Head splits and merges, the last-two-axes swap, rank 6, and views: a transpose whose input
// view differs from the input tensor's dims (a folded reshape) and whose output dims differ
// from the permuted view; reshape as a copy.
TEST(StridedCopyKernelTest, TransposeAndReshapeMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kTranspose, {{1, 17, 4, 8}}, {1, 4, 17, 8},
                              Perm({1, 17, 4, 8}, {0, 2, 1, 3})),
                   "head split");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kTranspose, {{33, 65}}, {65, 33}, Perm({33, 65}, {1, 0})),
                   "2-D swap");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kTranspose, {{3, 4, 70, 9}}, {3, 4, 9, 70},
                              Perm({3, 4, 70, 9}, {0, 1, 3, 2}), Act(ActivationKind::kGelu)),
                   "last two axes, gelu");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kTranspose, {{2, 3, 2, 4, 3, 2}}, {2, 4, 2, 2, 3, 3},
                              Perm({2, 3, 2, 4, 3, 2}, {5, 3, 0, 2, 1, 4})),
                   "rank 6");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kTranspose, {{6, 20}}, {5, 24},
                              Perm({2, 3, 4, 5}, {3, 1, 2, 0})),
                   "folded reshapes");
  CheckOpAllSlices(device, RowMajorOp(OpKind::kReshape, {{3, 20}}, {5, 12}), "reshape");
  CheckOpAllSlices(device, RowMajorOp(OpKind::kReshape, {{2, 3, 4}}, {24}), "reshape to rank 1");
}

model::SliceAttrs SliceOf(std::vector<int64_t> starts, std::vector<int64_t> steps,
                          std::vector<int64_t> sizes) {
  return model::SliceAttrs{std::move(starts), std::move(steps), std::move(sizes)};
}

// Steps (negative too), a Gather at a constant index dropping its axis, a Split part.
TEST(StridedCopyKernelTest, SlicesMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kSlice, {{4, 6, 5}}, {2, 3, 5},
                              SliceOf({1, 5, 0}, {2, -2, 1}, {2, 3, 5})),
                   "steps");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kSlice, {{1, 17, 48}}, {1, 48},
                              SliceOf({0, 0, 0}, {1, 1, 1}, {1, 1, 48})),
                   "class token gather");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kSlice, {{2, 3, 12}}, {2, 3, 4},
                              SliceOf({0, 0, 8}, {1, 1, 1}, {2, 3, 4}), Act(ActivationKind::kExp)),
                   "split part, exp");
}

// Concat along the leading, a middle and the last axis of row-major tensors, with a constant
// input (a class token) and a fused activation.
TEST(StridedCopyKernelTest, ConcatAlongAnyAxisMatchesReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kConcat, {{2, 3, 4}, {2, 1, 4}, {2, 2, 4}}, {2, 6, 4},
                              model::ConcatAttrs{1}),
                   "middle axis");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kConcat, {{1, 5}, {3, 5}}, {4, 5}, model::ConcatAttrs{0},
                              Act(ActivationKind::kNeg)),
                   "leading axis, neg");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kConcat, {{1, 1, 8}, {1, 16, 8}}, {1, 17, 8},
                              model::ConcatAttrs{1}, {}, /*constant_input=*/0),
                   "class token");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kConcat, {{3, 7}, {3, 2}}, {3, 9}, model::ConcatAttrs{1}, {},
                              /*constant_input=*/1),
                   "last axis, constant second");
}

model::ReduceAttrs ReduceOver(model::ReduceKind kind, std::vector<int32_t> axes) {
  return model::ReduceAttrs{kind, std::move(axes)};
}

TEST(ReduceKernelTest, MeanSumAndMaxOverAnyAxesMatchReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kReduce, {{3, 4, 5}}, {3, 5},
                              ReduceOver(model::ReduceKind::kMean, {1})),
                   "mean over the middle axis");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kReduce, {{3, 4, 5}}, {1, 4, 1},
                              ReduceOver(model::ReduceKind::kSum, {0, 2})),
                   "sum over the outer axes, keepdims");
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kReduce, {{7, 200}}, {7, 1},
                              ReduceOver(model::ReduceKind::kMax, {1}), Act(ActivationKind::kSqrt)),
                   "max over rows, sqrt", 3, 0.1f, 2.0f);
  CheckOpAllSlices(device,
                   RowMajorOp(OpKind::kReduce, {{2, 3, 2, 3, 2, 3}}, {2, 2, 2},
                              ReduceOver(model::ReduceKind::kMean, {1, 3, 5})),
                   "rank 6, every other axis");
}

struct ConvTransposeCase {
  std::string name;
  Shape in;
  int cout;
  int kh, kw, sh, sw, dh, dw, pt, pl, pb, pr, oph, opw;
  int groups;
  bool bias;
  Activation act;
};

// ONNX ConvTranspose's output extent per axis.
int64_t ConvTransposeOut(int64_t in, int k, int s, int d, int p0, int p1, int extra) {
  return (in - 1) * s + (static_cast<int64_t>(k) - 1) * d + 1 + extra - p0 - p1;
}

// The UNet's stride-2 upsampling with output_padding, a grouped dilated refinement, odd
// kernels and strides per axis, pads cropping more than a tap, no bias.
TEST(ConvTransposeKernelTest, MatchesReference) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const ConvTransposeCase cases[] = {
      {"unet up", {8, 8, 16}, 8, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, true,
       Act(ActivationKind::kRelu)},
      {"grouped dilated", {6, 7, 8}, 8, 3, 3, 1, 1, 2, 2, 2, 2, 2, 2, 0, 0, 2, true,
       Act(ActivationKind::kSigmoid)},
      {"2x3 kernel, 2x3 stride", {5, 4, 3}, 5, 2, 3, 2, 3, 1, 1, 0, 1, 0, 0, 1, 2, 1, false, {}},
      {"depthwise 4x4 stride 2", {5, 5, 6}, 6, 4, 4, 2, 2, 1, 1, 1, 1, 1, 1, 0, 0, 6, true,
       Act(ActivationKind::kSilu)},
  };
  for (const ConvTransposeCase& c : cases) {
    GraphBuilder b(c.name);
    model::TensorId x = b.AddInput(c.in);
    model::ConvAttrs attrs;
    attrs.window = {c.kh, c.kw, c.sh, c.sw, c.dh, c.dw, c.pt, c.pl, c.pb, c.pr};
    attrs.groups = c.groups;
    attrs.output_padding_h = c.oph;
    attrs.output_padding_w = c.opw;
    const int64_t cig = c.in.c / c.groups;
    attrs.filter = b.AddConstant(
        {c.cout, c.kh, c.kw, cig},
        RandomVector(static_cast<size_t>(c.cout * c.kh * c.kw * cig), 41, -0.5f, 0.5f));
    if (c.bias) attrs.bias = b.AddConstant({c.cout}, RandomVector(c.cout, 43));
    const Shape out{ConvTransposeOut(c.in.h, c.kh, c.sh, c.dh, c.pt, c.pb, c.oph),
                    ConvTransposeOut(c.in.w, c.kw, c.sw, c.dw, c.pl, c.pr, c.opw), c.cout};
    b.MarkOutput(b.AddOp(OpKind::kConvTranspose2d, {x}, out, attrs, c.act));
    CheckOpAllSlices(device, b.Build(), c.name);
  }
}

TEST(KernelProfilingTest, EnqueueReturnsAProfiledEvent) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const ConvCase c{"profiled", {6, 7, 5}, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, {}};
  Fixture f = Prepare(device, ConvGraph(c, 4), 21);
  absl::StatusOr<std::unique_ptr<OpKernel>> k = f.factory->Create(0);
  ASSERT_TRUE(k.ok()) << k.status();
  cl_event event = nullptr;
  ASSERT_TRUE((*k)->Enqueue(&event).ok());
  ASSERT_NE(event, nullptr);
  ASSERT_EQ(clWaitForEvents(1, &event), CL_SUCCESS);
  absl::StatusOr<double> us = EventDurationUs(event);
  clReleaseEvent(event);
  ASSERT_TRUE(us.ok()) << us.status();
  EXPECT_GT(*us, 0.0);
}

TEST(KernelMemoryModeTest, ConvRunsInEveryMemoryMode) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const ConvCase c{"mode", {6, 7, 5}, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, {}};
  for (MemoryMode mode :
       {MemoryMode::kFineGrainSvm, MemoryMode::kCoarseGrainSvm, MemoryMode::kBuffer}) {
    if (mode == MemoryMode::kFineGrainSvm && !device->info().svm_fine_grain) continue;
    if (mode == MemoryMode::kCoarseGrainSvm && !device->info().svm_coarse_grain) continue;
    Fixture f = Prepare(device, ConvGraph(c, 4), 21, mode);
    const std::vector<float> want = Reference(f, 0);
    absl::StatusOr<std::unique_ptr<OpKernel>> k = f.factory->Create(0);
    ASSERT_TRUE(k.ok()) << k.status();
    ASSERT_TRUE((*k)->Enqueue().ok());
    ExpectNear(ReadTensor(f, f.graph.op(0).output), want, std::string(MemoryModeName(mode)));
  }
}

// Many kernels enqueued back to back and one CPU thread adding into the same output: the
// atomic partial-sum mode must lose no update (the cross-device cin split).
TEST(PartialSumTest, AtomicSlicesCombineWithConcurrentHostAdds) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  if (!device->info().svm_atomics) GTEST_SKIP() << "device has no SVM atomics";
  Fixture f = Prepare(device, FullyConnectedGraph({1, 1, 48}, 16, true, {}), 31);
  const std::vector<float> want = Reference(f, 0);
  const model::TensorId out = f.graph.op(0).output;
  absl::StatusOr<std::unique_ptr<OpKernel>> zero = f.factory->CreateZeroFill(0);
  ASSERT_TRUE(zero.ok());
  ASSERT_TRUE((*zero)->Enqueue().ok());
  ASSERT_TRUE(device->Finish().ok());
  // The GPU takes input features [0, 24); the "CPU" adds the partial sums of [24, 48).
  absl::StatusOr<std::unique_ptr<OpKernel>> gpu_part =
      f.factory->Create(0, {SplitAxis::kInputChannels, 0, 24});
  ASSERT_TRUE(gpu_part.ok()) << gpu_part.status();
  ASSERT_TRUE((*gpu_part)->Enqueue().ok());
  ASSERT_TRUE(device->Flush().ok());
  const std::vector<float> x = ReadTensor(f, f.graph.op(0).inputs[0]);
  const std::vector<float>& w = f.graph.constants[0].data;
  float* y = f.arena->host_data() + f.offsets[out];
  for (int o = 0; o < 16; ++o) {
    float partial = 0.0f;
    for (int i = 24; i < 48; ++i) partial += w[o * 48 + i] * x[i];
    std::atomic_ref<uint32_t> word(*reinterpret_cast<uint32_t*>(y + o));
    uint32_t expected = word.load();
    while (!word.compare_exchange_weak(
        expected, std::bit_cast<uint32_t>(std::bit_cast<float>(expected) + partial))) {
    }
  }
  ASSERT_TRUE(device->Finish().ok());
  ExpectNear(ReadTensor(f, out), want, "gpu+host partial sums");
}

// Each cin slice adds into a buffer of its own (KernelOptions::partial_output): summing the
// buffers gives the whole op, with no atomics and no order between the slices.
TEST(PartialSumTest, SlicesIntoOwnPartialBuffersSumToTheOp) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  Fixture f = Prepare(device, FullyConnectedGraph({1, 1, 48}, 16, true, {}), 37, {}, 16);
  const std::vector<float> want = Reference(f, 0);
  const model::TensorId out = f.graph.op(0).output;
  const int64_t end = static_cast<int64_t>(f.arena->size()) - 16;  // the spare floats
  ASSERT_TRUE(f.arena->Write(static_cast<size_t>(end), std::vector<float>(16, 0.0f)).ok());
  ASSERT_TRUE(f.arena->Write(static_cast<size_t>(f.offsets[out]), std::vector<float>(16, 0.0f)).ok());
  KernelOptions own{.atomic_partial_sums = false};
  auto first = f.factory->Create(0, {SplitAxis::kInputChannels, 0, 20}, own);
  own.partial_output = TensorPlacement{end, 0};
  auto second = f.factory->Create(0, {SplitAxis::kInputChannels, 20, 48}, own);
  ASSERT_TRUE(first.ok()) << first.status();
  ASSERT_TRUE(second.ok()) << second.status();
  ASSERT_TRUE((*second)->Enqueue().ok());
  ASSERT_TRUE((*first)->Enqueue().ok());
  ASSERT_TRUE(device->Finish().ok());
  std::vector<float> got = ReadTensor(f, out);
  std::vector<float> partial(16);
  ASSERT_TRUE(f.arena->Read(static_cast<size_t>(end), partial).ok());
  for (size_t i = 0; i < got.size(); ++i) got[i] += partial[i];
  ExpectNear(got, want, "output + partial buffer");
}

TEST(KernelFactoryErrorTest, BadSlicesAreRejectedWithTheOpName) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const ConvCase grouped{"g", {5, 5, 4}, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 2, true, {}};
  Fixture f = Prepare(device, ConvGraph(grouped, 1), 1);
  absl::StatusOr<std::unique_ptr<OpKernel>> k =
      f.factory->Create(0, {SplitAxis::kInputChannels, 0, 1});
  ASSERT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("conv2d"), std::string::npos);
  EXPECT_NE(k.status().message().find("cin"), std::string::npos);
  EXPECT_EQ(f.factory->Create(0, {SplitAxis::kRows, 3, 9}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.factory->Create(0, {SplitAxis::kOutputChannels, 1, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(f.factory->Create(5).status().code(), absl::StatusCode::kInvalidArgument);

  // A partial output is for cin slices only, and must fit in the arena.
  KernelOptions partial;
  partial.partial_output = TensorPlacement{0, 0};
  EXPECT_EQ(f.factory->Create(0, {SplitAxis::kOutputChannels, 0, 1}, partial).status().code(),
            absl::StatusCode::kInvalidArgument);
  Fixture ungrouped = Prepare(device, ConvGraph({"u", {5, 5, 4}, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1,
                                                 1, true, {}}, 1), 1);
  partial.partial_output = TensorPlacement{static_cast<int64_t>(ungrouped.arena->size()), 0};
  absl::StatusOr<std::unique_ptr<OpKernel>> outside =
      ungrouped.factory->Create(0, {SplitAxis::kInputChannels, 0, 2}, partial);
  ASSERT_EQ(outside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(outside.status().message().find("does not fit"), std::string::npos);

  Fixture pool = Prepare(device, OneOp(OpKind::kMaxPool, {{4, 4, 2}}, {2, 2, 2}, Pool(2, 2, 0, false)), 1);
  EXPECT_EQ(pool.factory->Create(0, {SplitAxis::kRows, 0, 1}).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(KernelFactoryErrorTest, MalformedOpsAreRejectedBeforeAnyUpload) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const ConvCase c{"c", {5, 5, 4}, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, {}};
  Graph bad_shape = ConvGraph(c, 1);
  bad_shape.tensors[1].shape.w = 4;  // a 3x3 pad-1 conv keeps 5 columns
  Fixture f = Prepare(device, std::move(bad_shape), 1);
  absl::StatusOr<std::unique_ptr<OpKernel>> k = f.factory->Create(0);
  ASSERT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("conv2d"), std::string::npos) << k.status();

  Graph bad_attrs = ConvGraph(c, 1);
  bad_attrs.ops[0].attrs = model::PoolAttrs{};
  Fixture g = Prepare(device, std::move(bad_attrs), 1);
  EXPECT_EQ(g.factory->Create(0).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(KernelFactoryErrorTest, MissingWeightsAndArenaOffsetsAreReported) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const ConvCase c{"c", {5, 5, 4}, 4, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, true, {}};
  Graph no_weights = ConvGraph(c, 1);
  for (model::Constant& constant : no_weights.constants) constant.data.clear();
  Fixture f = Prepare(device, std::move(no_weights), 1);
  absl::StatusOr<std::unique_ptr<OpKernel>> k = f.factory->Create(0);
  ASSERT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("no weights"), std::string::npos) << k.status();

  Fixture g = Prepare(device, ConvGraph(c, 1), 1);
  std::vector<int64_t> offsets = g.offsets;
  offsets[1] = -1;  // the conv output
  absl::StatusOr<std::unique_ptr<KernelFactory>> factory =
      KernelFactory::Create(device, &g.graph, g.arena.get(), offsets);
  ASSERT_TRUE(factory.ok());
  k = (*factory)->Create(0);
  ASSERT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("no arena offset"), std::string::npos) << k.status();

  offsets[1] = static_cast<int64_t>(g.arena->size()) - 3;  // runs past the end
  factory = KernelFactory::Create(device, &g.graph, g.arena.get(), offsets);
  ASSERT_TRUE(factory.ok());
  k = (*factory)->Create(0);
  ASSERT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("does not fit"), std::string::npos) << k.status();

  offsets.pop_back();
  EXPECT_EQ(KernelFactory::Create(device, &g.graph, g.arena.get(), offsets).status().code(),
            absl::StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace psched::executor::opencl

namespace psched::executor::opencl {
namespace {

// Two convs write straight into their channel slices of a concat output (pixel stride 8), a
// third conv reads one slice back as a strided input, an activation rewrites the concat in
// place: the in-place concat layout the CPU arena planner produces.
TEST(StridedPlacementTest, ConvsWriteAndReadConcatSlicesInPlace) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  GraphBuilder b("strided");
  const Shape in_shape{5, 6, 4};
  model::TensorId x = b.AddInput(in_shape);
  auto conv = [&](model::TensorId input, int64_t cin, int64_t cout, uint32_t seed) {
    model::ConvAttrs attrs;
    attrs.window = {3, 3, 1, 1, 1, 1, 1, 1, 1, 1};
    attrs.filter = b.AddConstant({cout, 3, 3, cin},
                                 RandomVector(static_cast<size_t>(cout * 9 * cin), seed));
    attrs.bias = b.AddConstant({cout}, RandomVector(static_cast<size_t>(cout), seed + 1));
    return b.AddOp(OpKind::kConv2d, {input}, {5, 6, cout}, attrs, Act(ActivationKind::kRelu));
  };
  model::TensorId a = conv(x, 4, 3, 40);                                   // op 0
  model::TensorId c = conv(x, 4, 5, 50);                                   // op 1
  model::TensorId cat = b.AddOp(OpKind::kConcat, {a, c}, {5, 6, 8});       // op 2
  model::TensorId d = conv(a, 3, 4, 60);                                   // op 3
  model::TensorId e = b.AddOp(OpKind::kActivation, {cat}, {5, 6, 8}, {},
                              Act(ActivationKind::kClip, 0.0f, 0.5f));     // op 4
  b.MarkOutput(d);
  b.MarkOutput(e);
  Graph graph = b.Build();

  const int64_t pixels = 30;
  std::vector<TensorPlacement> placements(graph.tensors.size());
  placements[x] = {0, 0};
  const int64_t cat_at = 128;
  placements[cat] = {cat_at, 8};
  placements[a] = {cat_at, 8};
  placements[c] = {cat_at + 3, 8};
  placements[d] = {cat_at + pixels * 8 + 5, 0};
  placements[e] = {cat_at + pixels * 8 + 5 + pixels * 4 + 5, 11};  // padded pixels
  const int64_t size = placements[e].offset + pixels * 11;
  absl::StatusOr<std::unique_ptr<SvmArena>> arena = SvmArena::Create(device, size);
  ASSERT_TRUE(arena.ok()) << arena.status();
  const std::vector<float> input = RandomVector(static_cast<size_t>(in_shape.Elements()), 70);
  ASSERT_TRUE((*arena)->Write(0, input).ok());
  absl::StatusOr<std::unique_ptr<KernelFactory>> factory =
      KernelFactory::Create(device, &graph, arena->get(), placements);
  ASSERT_TRUE(factory.ok()) << factory.status();
  for (model::OpId op = 0; op < 5; ++op) {
    absl::StatusOr<std::unique_ptr<OpKernel>> k = (*factory)->Create(op);
    ASSERT_TRUE(k.ok()) << k.status();
    if (op == 2) {
      EXPECT_EQ((*k)->launch_count(), 0u);  // both inputs are already in place
    }
    ASSERT_TRUE((*k)->Enqueue().ok());
  }
  std::vector<float> all(static_cast<size_t>(size));
  ASSERT_TRUE((*arena)->Read(0, all).ok());
  auto gather = [&](model::TensorId t, int64_t stride) {
    std::vector<float> dense;
    const int64_t channels = graph.tensor(t).shape.c;
    for (int64_t p = 0; p < pixels; ++p) {
      for (int64_t ch = 0; ch < channels; ++ch) {
        dense.push_back(all[static_cast<size_t>(placements[t].offset + p * stride + ch)]);
      }
    }
    return dense;
  };
  absl::StatusOr<std::vector<std::vector<float>>> want = reference::RunGraph(graph, {input});
  ASSERT_TRUE(want.ok()) << want.status();
  ExpectNear(gather(d, 4), (*want)[0], "conv reading a strided slice");
  ExpectNear(gather(e, 11), (*want)[1], "activation over the in-place concat");
}

// A matmul reads operands and writes its product with rows further apart than their length,
// as in the channel slices of an in-place concat.
TEST(StridedPlacementTest, MatMulReadsAndWritesPaddedRows) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const int64_t m = 37, k = 19, n = 70, batch = 2;
  Graph graph = RowMajorOp(OpKind::kMatMul, {{batch, m, k}, {k, n}}, {batch, m, n});
  const int64_t a_rs = k + 3, b_rs = n + 5, c_rs = n + 2;
  std::vector<TensorPlacement> placements(3);
  placements[0] = {1, a_rs};
  placements[1] = {placements[0].offset + batch * m * a_rs, b_rs};
  placements[2] = {placements[1].offset + k * b_rs, c_rs};
  const int64_t size = placements[2].offset + batch * m * c_rs;
  absl::StatusOr<std::unique_ptr<SvmArena>> arena = SvmArena::Create(device, size);
  ASSERT_TRUE(arena.ok()) << arena.status();
  std::vector<float> all = RandomVector(static_cast<size_t>(size), 80);
  ASSERT_TRUE((*arena)->Write(0, all).ok());
  auto gather = [&](const std::vector<float>& from, model::TensorId t) {
    std::vector<float> dense;
    const model::Shape& s = graph.tensor(t).shape;
    for (int64_t r = 0; r < s.h * s.w; ++r) {
      for (int64_t i = 0; i < s.c; ++i) {
        dense.push_back(
            from[static_cast<size_t>(placements[t].offset + r * placements[t].pixel_stride + i)]);
      }
    }
    return dense;
  };
  absl::StatusOr<std::vector<std::vector<float>>> want =
      reference::RunGraph(graph, {gather(all, 0), gather(all, 1)});
  ASSERT_TRUE(want.ok()) << want.status();
  absl::StatusOr<std::unique_ptr<KernelFactory>> factory =
      KernelFactory::Create(device, &graph, arena->get(), placements);
  ASSERT_TRUE(factory.ok()) << factory.status();
  absl::StatusOr<std::unique_ptr<OpKernel>> kernel = (*factory)->Create(0);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  ASSERT_TRUE((*kernel)->Enqueue().ok());
  std::vector<float> got(static_cast<size_t>(size));
  ASSERT_TRUE((*arena)->Read(0, got).ok());
  ExpectNear(gather(got, 2), (*want)[0], "matmul over padded rows");
  // The padding between the product's rows is untouched.
  for (int64_t r = 0; r < batch * m; ++r) {
    for (int64_t i = n; i < c_rs; ++i) {
      const size_t at = static_cast<size_t>(placements[2].offset + r * c_rs + i);
      ASSERT_EQ(got[at], all[at]) << "padding after row " << r;
    }
  }
}

// Runs the single op of `graph` with every activation tensor's rows (pixels) padded by 2 + its
// id floats, as inside a concat's output, against the reference on the dense tensors; the
// padding must stay untouched.
void CheckPaddedRows(OpenClDevice* device, const Graph& graph, const std::string& label) {
  std::vector<TensorPlacement> placements(graph.tensors.size(), TensorPlacement{-1, 0});
  int64_t size = 1;
  for (size_t t = 0; t < graph.tensors.size(); ++t) {
    const model::Tensor& tensor = graph.tensors[t];
    if (tensor.constant != model::kInvalidId) continue;
    const int64_t rs = tensor.shape.c + 2 + static_cast<int64_t>(t);
    placements[t] = {size, rs};
    size += tensor.shape.h * tensor.shape.w * rs;
  }
  absl::StatusOr<std::unique_ptr<SvmArena>> arena = SvmArena::Create(device, size);
  ASSERT_TRUE(arena.ok()) << arena.status();
  std::vector<float> all = RandomVector(static_cast<size_t>(size), 81, 0.5f, 1.5f);
  ASSERT_TRUE((*arena)->Write(0, all).ok());
  auto gather = [&](const std::vector<float>& from, model::TensorId t) {
    std::vector<float> dense;
    const model::Shape& s = graph.tensor(t).shape;
    for (int64_t r = 0; r < s.h * s.w; ++r) {
      for (int64_t i = 0; i < s.c; ++i) {
        dense.push_back(
            from[static_cast<size_t>(placements[t].offset + r * placements[t].pixel_stride + i)]);
      }
    }
    return dense;
  };
  const model::OpId id = 0;
  std::vector<std::vector<float>> inputs;
  std::vector<const float*> pointers;
  for (model::TensorId t : graph.ActivationInputs(id)) inputs.push_back(gather(all, t));
  for (const auto& v : inputs) pointers.push_back(v.data());
  std::vector<float> want(static_cast<size_t>(graph.output_shape(id).Elements()));
  ASSERT_TRUE(reference::RunOp(graph, id, pointers, want.data()).ok());
  absl::StatusOr<std::unique_ptr<KernelFactory>> factory =
      KernelFactory::Create(device, &graph, arena->get(), placements);
  ASSERT_TRUE(factory.ok()) << factory.status();
  absl::StatusOr<std::unique_ptr<OpKernel>> kernel = (*factory)->Create(id);
  ASSERT_TRUE(kernel.ok()) << label << ": " << kernel.status();
  ASSERT_TRUE((*kernel)->Enqueue().ok());
  std::vector<float> got(static_cast<size_t>(size));
  ASSERT_TRUE((*arena)->Read(0, got).ok());
  const model::TensorId out = graph.op(id).output;
  ExpectNear(gather(got, out), want, label);
  const model::Shape& s = graph.tensor(out).shape;
  for (int64_t r = 0; r < s.h * s.w; ++r) {
    for (int64_t i = s.c; i < placements[out].pixel_stride; ++i) {
      const size_t at = static_cast<size_t>(placements[out].offset + r * placements[out].pixel_stride + i);
      ASSERT_EQ(got[at], all[at]) << label << ": padding after row " << r;
    }
  }
}

TEST(StridedPlacementTest, TensorKernelsReadAndWritePaddedRows) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  CheckPaddedRows(device, RowMajorOp(OpKind::kDiv, {{2, 3, 5}, {3, 1}}, {2, 3, 5}), "div");
  CheckPaddedRows(device,
                  RowMajorOp(OpKind::kTranspose, {{6, 20}}, {5, 24},
                             Perm({2, 3, 4, 5}, {3, 1, 2, 0})),
                  "transpose across row boundaries");
  CheckPaddedRows(device,
                  RowMajorOp(OpKind::kSlice, {{4, 6, 5}}, {2, 3, 5},
                             SliceOf({1, 5, 0}, {2, -2, 1}, {2, 3, 5})),
                  "slice");
  CheckPaddedRows(device,
                  RowMajorOp(OpKind::kReduce, {{3, 4, 5}}, {1, 4, 1},
                             ReduceOver(model::ReduceKind::kSum, {0, 2})),
                  "reduce");
  CheckPaddedRows(device,
                  RowMajorOp(OpKind::kConcat, {{2, 3, 4}, {2, 1, 4}}, {2, 4, 4},
                             model::ConcatAttrs{1}),
                  "concat");
  GraphBuilder b("conv_transpose");
  model::TensorId x = b.AddInput({4, 5, 6});
  model::ConvAttrs conv;
  conv.window = {3, 3, 2, 2, 1, 1, 1, 1, 1, 1};
  conv.output_padding_h = conv.output_padding_w = 1;
  conv.groups = 2;
  conv.filter = b.AddConstant({4, 3, 3, 3}, RandomVector(4 * 9 * 3, 83));
  conv.bias = b.AddConstant({4}, RandomVector(4, 84));
  b.MarkOutput(b.AddOp(OpKind::kConvTranspose2d, {x}, {8, 10, 4}, conv));
  CheckPaddedRows(device, b.Build(), "conv_transpose2d");
}

TEST(StridedPlacementTest, StrideBelowChannelsIsRejected) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  Graph graph = OneOp(OpKind::kActivation, {{2, 2, 4}}, {2, 2, 4}, {}, Act(ActivationKind::kRelu));
  absl::StatusOr<std::unique_ptr<SvmArena>> arena = SvmArena::Create(device, 64);
  ASSERT_TRUE(arena.ok());
  absl::StatusOr<std::unique_ptr<KernelFactory>> factory = KernelFactory::Create(
      device, &graph, arena->get(), std::vector<TensorPlacement>{{0, 3}, {32, 0}});
  ASSERT_TRUE(factory.ok());
  absl::StatusOr<std::unique_ptr<OpKernel>> k = (*factory)->Create(0);
  ASSERT_EQ(k.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(k.status().message().find("pixel stride 3"), std::string::npos) << k.status();
}

}  // namespace
}  // namespace psched::executor::opencl
