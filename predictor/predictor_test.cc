#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/graph.h"
#include "model/split.h"
#include "predictor/analytic_model.h"
#include "predictor/op_config.h"
#include "predictor/profiles.h"

namespace psched::predictor {
namespace {

using model::OpKind;
using model::Shape;
using model::SplitAxis;

// input [h, w, cin] -> conv(k x k, stride, pad, groups) -> output; then an FC head.
model::Graph ConvGraph(Shape in, int64_t cout, int k, int stride, int pad, int groups) {
  model::Graph g;
  g.tensors.push_back({"x", in, 4, model::kInvalidId, model::kInvalidId});
  const int64_t oh = (in.h + 2 * pad - k) / stride + 1;
  const int64_t ow = (in.w + 2 * pad - k) / stride + 1;
  g.tensors.push_back({"y", Shape{oh, ow, cout}, 4, 0, model::kInvalidId});
  model::ConvAttrs conv;
  conv.window = model::Window2d{k, k, stride, stride, 1, 1, pad, pad, pad, pad};
  conv.groups = groups;
  g.ops.push_back({"conv", OpKind::kConv2d, {0}, 1, {}, conv});
  g.tensors.push_back({"z", Shape{1, 1, 10}, 2, 1, model::kInvalidId});
  g.ops.push_back({"fc", OpKind::kFullyConnected, {1}, 2, {}, model::FullyConnectedAttrs{}});
  return g;
}

TEST(SubtaskConfigTest, NoneIsTheWholeOp) {
  const model::Graph g = ConvGraph({56, 56, 64}, 128, 3, 1, 1, 1);
  const OpConfig whole = WholeOpConfig(g, 0);
  EXPECT_EQ(whole.output, (Shape{56, 56, 128}));
  EXPECT_DOUBLE_EQ(whole.flops, 2.0 * 56 * 56 * 128 * 9 * 64);
  EXPECT_DOUBLE_EQ(whole.bytes, 4.0 * (56 * 56 * 64 + 56 * 56 * 128 + 128 * 9 * 64));
  const OpConfig none = SubtaskConfig(g, 0, SplitAxis::kNone, 0, 1);
  EXPECT_EQ(none.output, whole.output);
  EXPECT_DOUBLE_EQ(none.flops, whole.flops);
}

TEST(SubtaskConfigTest, AnOpWritingIntoAConcatCarriesTheConcatsPixelStride) {
  // x -> conv (48 ch), conv (16 ch) -> concat (64 ch): the executors store both convs strided.
  model::Graph g;
  g.tensors.push_back({"x", Shape{14, 14, 32}, 4, model::kInvalidId, model::kInvalidId});
  g.inputs.push_back({0, "x", {1, 32, 14, 14}});
  model::ConvAttrs conv;
  conv.window = model::Window2d{1, 1, 1, 1, 1, 1, 0, 0, 0, 0};
  g.tensors.push_back({"a", Shape{14, 14, 48}, 4, 0, model::kInvalidId});
  g.ops.push_back({"a", OpKind::kConv2d, {0}, 1, {}, conv});
  g.tensors.push_back({"b", Shape{14, 14, 16}, 4, 1, model::kInvalidId});
  g.ops.push_back({"b", OpKind::kConv2d, {0}, 2, {}, conv});
  g.tensors.push_back({"cat", Shape{14, 14, 64}, 4, 2, model::kInvalidId});
  g.ops.push_back({"cat", OpKind::kConcat, {1, 2}, 3, {}, {}});
  g.outputs.push_back({3, "cat", {1, 64, 14, 14}});
  EXPECT_EQ(WholeOpConfig(g, 0).output_pixel_stride, 64);
  EXPECT_EQ(WholeOpConfig(g, 1).output_pixel_stride, 64);
  EXPECT_EQ(WholeOpConfig(g, 2).output_pixel_stride, 0);
  const model::ConcatAliasing aliasing = model::AliasConcatInputs(g);
  EXPECT_EQ(WholeOpConfig(g, 0, aliasing).output_pixel_stride, 64);
  // Every cut writes into the same concat.
  for (SplitAxis axis : {SplitAxis::kOutputChannels, SplitAxis::kInputChannels, SplitAxis::kRows}) {
    EXPECT_EQ(SubtaskConfig(g, 0, axis, 0, 8).output_pixel_stride, 64);
  }
  // A conv read by nothing but an output writes its own tensor.
  EXPECT_EQ(WholeOpConfig(ConvGraph({56, 56, 64}, 128, 3, 1, 1, 1), 0).output_pixel_stride, 0);
}

TEST(SubtaskConfigTest, CoutSliceHasFewerOutputChannels) {
  const model::Graph g = ConvGraph({56, 56, 64}, 128, 3, 1, 1, 1);
  const OpConfig c = SubtaskConfig(g, 0, SplitAxis::kOutputChannels, 32, 80);
  EXPECT_EQ(c.output, (Shape{56, 56, 48}));
  EXPECT_EQ(c.inputs[0], (Shape{56, 56, 64}));
  EXPECT_FALSE(c.accumulate);
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 56 * 56 * 48 * 9 * 64);
}

TEST(SubtaskConfigTest, DepthwiseCoutSliceHasFewerGroups) {
  const model::Graph g = ConvGraph({28, 28, 96}, 96, 3, 2, 1, 96);
  EXPECT_EQ(model::WorkSize(g, 0, SplitAxis::kOutputChannels), 96);
  const OpConfig c = SubtaskConfig(g, 0, SplitAxis::kOutputChannels, 0, 40);
  EXPECT_EQ(c.groups, 40);
  EXPECT_EQ(c.inputs[0].c, 40);
  EXPECT_EQ(c.output, (Shape{14, 14, 40}));
  EXPECT_TRUE(c.IsDepthwise());
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 14 * 14 * 40 * 9);
}

TEST(SubtaskConfigTest, GroupedCoutSliceKeepsChannelsPerGroup) {
  const model::Graph g = ConvGraph({14, 14, 64}, 128, 1, 1, 0, 4);  // 16 in, 32 out per group
  const OpConfig c = SubtaskConfig(g, 0, SplitAxis::kOutputChannels, 1, 3);
  EXPECT_EQ(c.groups, 2);
  EXPECT_EQ(c.inputs[0].c, 32);
  EXPECT_EQ(c.output.c, 64);
  EXPECT_FALSE(c.IsDepthwise());
}

// Attention scores: [1, 4, 16, 8] x [1, 4, 8, 16] -> [1, 4, 16, 16] (4 heads, 16 tokens).
model::Graph AttentionScoresGraph() {
  model::Graph g;
  auto row_major = [](std::string name, std::vector<int64_t> dims, model::OpId producer) {
    model::Tensor t;
    t.name = std::move(name);
    t.shape = model::ViewOf(dims, false);
    t.onnx_rank = static_cast<int32_t>(dims.size());
    t.producer = producer;
    t.dims = std::move(dims);
    t.channels_last = false;
    return t;
  };
  g.tensors.push_back(row_major("q", {1, 4, 16, 8}, model::kInvalidId));
  g.tensors.push_back(row_major("k", {1, 4, 8, 16}, model::kInvalidId));
  g.tensors.push_back(row_major("s", {1, 4, 16, 16}, 0));
  g.inputs.push_back({0, "q", {1, 4, 16, 8}});
  g.inputs.push_back({1, "k", {1, 4, 8, 16}});
  g.ops.push_back({"qk", OpKind::kMatMul, {0, 1}, 2, {}, {}});
  g.tensors.push_back(row_major("p", {1, 4, 16, 16}, 1));
  g.ops.push_back({"softmax", OpKind::kSoftmax, {2}, 3, {}, {}});
  g.outputs.push_back({3, "p", {1, 4, 16, 16}});
  return g;
}

TEST(SubtaskConfigTest, MatMulSplitsByHeadsRowsColumnsAndK) {
  const model::Graph g = AttentionScoresGraph();
  EXPECT_EQ(model::WorkSize(g, 0, SplitAxis::kRows), 64);
  EXPECT_EQ(model::WorkSize(g, 0, SplitAxis::kOutputChannels), 16);
  EXPECT_EQ(model::WorkSize(g, 0, SplitAxis::kInputChannels), 8);
  const OpConfig whole = WholeOpConfig(g, 0);
  EXPECT_DOUBLE_EQ(whole.flops, 2.0 * 4 * 16 * 16 * 8);
  // Rows 16..48: heads 1 and 2, whole matrices.
  const OpConfig heads = SubtaskConfig(g, 0, SplitAxis::kRows, 16, 48);
  EXPECT_EQ(heads.matmul, (predictor::MatMulDims{2, 16, 16, 8, 2, 2}));
  EXPECT_EQ(heads.output, (Shape{32, 1, 16}));
  EXPECT_DOUBLE_EQ(heads.flops, whole.flops / 2);
  // Fewer rows than one matrix.
  const OpConfig rows = SubtaskConfig(g, 0, SplitAxis::kRows, 0, 5);
  EXPECT_EQ(rows.matmul.batch, 1);
  EXPECT_EQ(rows.matmul.m, 5);
  // Any row count: batch x m is the rows (calibration samples are checked so), flops in
  // proportion; 40 rows are 16 + 16 + 8, described as 4 GEMMs of 10.
  for (int64_t n = 1; n <= 64; ++n) {
    const OpConfig c = SubtaskConfig(g, 0, SplitAxis::kRows, 0, n);
    EXPECT_EQ(c.matmul.batch * c.matmul.m, n);
    EXPECT_EQ(c.output.h, n);
    EXPECT_DOUBLE_EQ(c.flops, whole.flops * static_cast<double>(n) / 64);
  }
  EXPECT_EQ(SubtaskConfig(g, 0, SplitAxis::kRows, 0, 40).matmul,
            (predictor::MatMulDims{4, 10, 16, 8, 4, 4}));
  const OpConfig cols = SubtaskConfig(g, 0, SplitAxis::kOutputChannels, 0, 4);
  EXPECT_EQ(cols.matmul.n, 4);
  EXPECT_EQ(cols.output, (Shape{64, 1, 4}));
  EXPECT_DOUBLE_EQ(cols.flops, whole.flops / 4);
  EXPECT_FALSE(cols.accumulate);
  const OpConfig k = SubtaskConfig(g, 0, SplitAxis::kInputChannels, 2, 4);
  EXPECT_TRUE(k.accumulate);
  EXPECT_EQ(k.matmul.k, 2);
  EXPECT_DOUBLE_EQ(k.flops, whole.flops / 4);
  // The partial sum reads the output back.
  EXPECT_DOUBLE_EQ(k.bytes, 4.0 * (4 * 16 * 2 + 4 * 2 * 16 + 2 * 4 * 16 * 16));
}

TEST(SubtaskConfigTest, RowWiseOpsAndTokenRowsSplitByRows) {
  const model::Graph g = AttentionScoresGraph();
  EXPECT_EQ(model::WorkSize(g, 1, SplitAxis::kRows), 64);
  EXPECT_EQ(model::WorkSize(g, 1, SplitAxis::kOutputChannels), 0);
  const OpConfig softmax = SubtaskConfig(g, 1, SplitAxis::kRows, 0, 16);
  EXPECT_EQ(softmax.output, (Shape{16, 1, 16}));
  EXPECT_EQ(softmax.inputs[0], (Shape{16, 1, 16}));
  EXPECT_DOUBLE_EQ(softmax.flops, WholeOpConfig(g, 1).flops / 4);

  OpConfig fc;
  fc.kind = OpKind::kFullyConnected;
  fc.inputs = {Shape{50, 1, 64}};
  fc.output = Shape{50, 1, 256};
  ComputeCost(fc);
  const OpConfig tokens = SubtaskConfig(fc, SplitAxis::kRows, 10, 30);
  EXPECT_EQ(tokens.inputs[0], (Shape{20, 1, 64}));
  EXPECT_EQ(tokens.output, (Shape{20, 1, 256}));
  EXPECT_DOUBLE_EQ(tokens.flops, 2.0 * 20 * 64 * 256);
  // Every token row reads the whole weight.
  EXPECT_DOUBLE_EQ(tokens.bytes, 4.0 * (20 * 64 + 20 * 256 + 64 * 256));
}

TEST(SubtaskConfigTest, CinSliceAccumulates) {
  const model::Graph g = ConvGraph({56, 56, 64}, 128, 3, 1, 1, 1);
  const OpConfig c = SubtaskConfig(g, 0, SplitAxis::kInputChannels, 0, 16);
  EXPECT_TRUE(c.accumulate);
  EXPECT_EQ(c.inputs[0], (Shape{56, 56, 16}));
  EXPECT_EQ(c.output, (Shape{56, 56, 128}));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 56 * 56 * 128 * 9 * 16);
  // The partial sum reads the output back.
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (56 * 56 * 16 + 2 * 56 * 56 * 128 + 128 * 9 * 16));
}

TEST(SubtaskConfigTest, SpatialSliceReadsHaloRowsWithStride) {
  // 3x3 stride 2 pad 1 over 57 rows: 29 output rows; output row r reads 2r-1 .. 2r+1.
  const model::Graph g = ConvGraph({57, 57, 8}, 16, 3, 2, 1, 1);
  ASSERT_EQ(g.output_shape(0).h, 29);
  const OpConfig top = SubtaskConfig(g, 0, SplitAxis::kRows, 0, 10);
  EXPECT_EQ(top.output.h, 10);
  EXPECT_EQ(top.inputs[0].h, 20);  // rows -1..19, row -1 is padding
  EXPECT_EQ(top.window.pad_top, 1);
  EXPECT_EQ(top.window.pad_bottom, 0);
  const OpConfig mid = SubtaskConfig(g, 0, SplitAxis::kRows, 10, 20);
  EXPECT_EQ(mid.inputs[0].h, 21);  // rows 19..39: one halo row each side of 19 strided
  EXPECT_EQ(mid.window.pad_top, 0);
  const OpConfig bottom = SubtaskConfig(g, 0, SplitAxis::kRows, 20, 29);
  EXPECT_EQ(bottom.inputs[0].h, 18);  // rows 39..57, row 57 is padding
  EXPECT_EQ(bottom.window.pad_bottom, 1);
}

TEST(SubtaskConfigTest, FullyConnectedSlices) {
  const model::Graph g = ConvGraph({7, 7, 8}, 32, 1, 1, 0, 1);
  const OpConfig cout = SubtaskConfig(g, 1, SplitAxis::kOutputChannels, 0, 4);
  EXPECT_EQ(cout.output.c, 4);
  EXPECT_DOUBLE_EQ(cout.flops, 2.0 * 7 * 7 * 32 * 4);
  const OpConfig cin = SubtaskConfig(g, 1, SplitAxis::kInputChannels, 100, 300);
  EXPECT_TRUE(cin.accumulate);
  EXPECT_EQ(cin.inputs[0], (Shape{1, 1, 200}));
  EXPECT_DOUBLE_EQ(cin.flops, 2.0 * 200 * 10);
}

class ProfileTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ProfileTest, LatencyGrowsWithWorkOnEveryAxisAndDevice) {
  absl::StatusOr<Profile> profile = LoadProfile(GetParam());
  ASSERT_TRUE(profile.ok()) << profile.status();
  const model::Graph g = ConvGraph({28, 28, 96}, 192, 3, 1, 1, 1);
  for (SplitAxis axis : {SplitAxis::kOutputChannels, SplitAxis::kInputChannels, SplitAxis::kRows}) {
    const int64_t total = model::WorkSize(g, 0, axis);
    for (int d = 0; d < profile->model->num_devices(); ++d) {
      double previous = 0;
      for (int64_t w = 1; w <= total; ++w) {
        const double t = profile->model->PredictUs(SubtaskConfig(g, 0, axis, 0, w), d);
        ASSERT_GE(t, previous) << GetParam() << " axis " << model::SplitAxisName(axis) << " device "
                               << d << " work " << w;
        previous = t;
      }
    }
  }
}

TEST_P(ProfileTest, SplittingInHalfCostsMoreThanHalf) {
  absl::StatusOr<Profile> profile = LoadProfile(GetParam());
  ASSERT_TRUE(profile.ok());
  const model::Graph g = ConvGraph({28, 28, 96}, 192, 3, 1, 1, 1);
  for (int d = 0; d < profile->model->num_devices(); ++d) {
    const double whole = profile->model->PredictUs(WholeOpConfig(g, 0), d);
    const double half =
        profile->model->PredictUs(SubtaskConfig(g, 0, SplitAxis::kOutputChannels, 0, 96), d);
    EXPECT_GT(half, whole / 2) << "device " << d;
    EXPECT_LT(half, whole) << "device " << d;
  }
}

INSTANTIATE_TEST_SUITE_P(All, ProfileTest,
                         ::testing::Values("oneplus11", "motorola2022", "pixel4", "pixel5",
                                           "host"));

TEST(ProfilesTest, PhonesNameDevicesGpuCpuLCpuM) {
  for (std::string_view name : {"oneplus11", "motorola2022", "pixel4", "pixel5"}) {
    absl::StatusOr<Profile> p = LoadProfile(name);
    ASSERT_TRUE(p.ok());
    ASSERT_EQ(p->platform.devices.size(), 3u);
    EXPECT_EQ(p->platform.devices[0].name, "gpu");
    EXPECT_EQ(p->platform.devices[1].name, "cpu.l");
    EXPECT_EQ(p->platform.devices[2].name, "cpu.m");
    EXPECT_EQ(p->model->num_devices(), 3);
  }
}

TEST(ProfilesTest, GpuIsFourToSevenTimesFasterThanBigCoreOnBigConvs) {
  const model::Graph g = ConvGraph({56, 56, 128}, 128, 3, 1, 1, 1);
  for (std::string_view name : {"oneplus11", "motorola2022"}) {
    absl::StatusOr<Profile> p = LoadProfile(name);
    ASSERT_TRUE(p.ok());
    const OpConfig c = WholeOpConfig(g, 0);
    const double ratio = p->model->PredictUs(c, 1) / p->model->PredictUs(c, 0);
    EXPECT_GT(ratio, 4.0) << name;
    EXPECT_LT(ratio, 7.0) << name;
  }
}

TEST(ProfilesTest, GpuSubtasksPayTheDispatchOverhead) {
  absl::StatusOr<Profile> p = LoadProfile("oneplus11");
  ASSERT_TRUE(p.ok());
  OpConfig tiny;
  tiny.kind = OpKind::kAdd;
  tiny.inputs = {Shape{1, 1, 1}, Shape{1, 1, 1}};
  tiny.output = Shape{1, 1, 1};
  ComputeCost(tiny);
  EXPECT_GE(p->model->PredictUs(tiny, 0), 10.0);
  EXPECT_LT(p->model->PredictUs(tiny, 1), 10.0);
}

TEST(ProfilesTest, GpuDispatchOverheadIsConfigurable) {
  OpConfig tiny;
  tiny.kind = OpKind::kAdd;
  tiny.inputs = {Shape{1, 1, 1}, Shape{1, 1, 1}};
  tiny.output = Shape{1, 1, 1};
  ComputeCost(tiny);
  absl::StatusOr<Profile> base = LoadProfile("pixel5");
  absl::StatusOr<Profile> slow = LoadProfile("pixel5", ProfileOptions{.gpu_dispatch_us = 25.0});
  ASSERT_TRUE(base.ok() && slow.ok());
  EXPECT_NEAR(slow->model->PredictUs(tiny, 0) - base->model->PredictUs(tiny, 0), 15.0, 1e-9);
  EXPECT_DOUBLE_EQ(slow->model->PredictUs(tiny, 1), base->model->PredictUs(tiny, 1));
  EXPECT_NE(slow->model->Version(), base->model->Version());
  EXPECT_FALSE(LoadProfile("pixel5", ProfileOptions{.gpu_dispatch_us = -1.0}).ok());
}

TEST(ProfilesTest, VersionsDifferAcrossProfilesAndAreStable) {
  absl::StatusOr<Profile> a = LoadProfile("pixel4");
  absl::StatusOr<Profile> b = LoadProfile("pixel5");
  absl::StatusOr<Profile> a2 = LoadProfile("pixel4");
  EXPECT_NE(a->model->Version(), b->model->Version());
  EXPECT_EQ(a->model->Version(), a2->model->Version());
  EXPECT_NE(a->platform.Fingerprint(), b->platform.Fingerprint());
}

TEST(ProfilesTest, UnknownProfileListsKnownNames) {
  absl::StatusOr<Profile> p = LoadProfile("iphone");
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(p.status().message(), ::testing::HasSubstr("oneplus11"));
}

TEST(ProfilesTest, HostProfilePinsCores) {
  const Profile p = HostProfile(2, "pocl");
  ASSERT_EQ(p.platform.devices.size(), 3u);
  EXPECT_EQ(p.platform.devices[0].name, "cpu.0");
  EXPECT_EQ(p.platform.devices[1].cpu_cores, std::vector<int>{1});
  EXPECT_EQ(p.platform.devices[2].opencl_device, "pocl");
  EXPECT_EQ(p.platform.DeviceIndex("gpu"), 2);
  EXPECT_FALSE(p.platform.DeviceIndex("npu").has_value());
}

// One device with a compute-bound regime everywhere it matters: huge bandwidth, no
// utilisation loss from parallelism.
AnalyticDeviceParams PlainCpu() {
  AnalyticDeviceParams p;
  p.name = "cpu";
  p.SetThroughput(40.0, 5.0, 10.0, 4.0);
  p.bandwidth_gbps = 1e5;
  p.overhead_us = 3.0;
  p.concat_us = 3.0;
  p.half_parallelism = 0.0;
  return p;
}

OpConfig ConvConfig(int64_t hw, int64_t cin, int64_t cout, int k) {
  OpConfig c;
  c.kind = OpKind::kConv2d;
  c.inputs = {Shape{hw, hw, cin}};
  c.output = Shape{hw, hw, cout};
  c.window.kernel_h = c.window.kernel_w = k;
  ComputeCost(c);
  return c;
}

TEST(ProfilesTest, HostClustersScaleWithThreadsAndSpeed) {
  // cpu.big: two fast cores; cpu.little: two cores at 40% speed; cpu.0: one fast core (the
  // single-core profile's device, unchanged).
  const Profile clusters =
      HostProfile({{"cpu.big", {2, 3}, 1.0}, {"cpu.little", {0, 1}, 0.4}}, "pocl");
  const Profile single = HostProfile(1, "pocl");
  ASSERT_EQ(clusters.platform.devices.size(), 3u);
  EXPECT_EQ(clusters.platform.devices[0].cpu_cores, (std::vector<int>{2, 3}));
  EXPECT_EQ(clusters.platform.devices[1].name, "cpu.little");
  EXPECT_EQ(clusters.platform.devices[2].name, "gpu");
  const OpConfig big_conv = ConvConfig(56, 64, 64, 3);
  const double one = single.model->PredictUs(big_conv, 0);
  const double two = clusters.model->PredictUs(big_conv, 0);
  const double little = clusters.model->PredictUs(big_conv, 1);
  // Two threads: faster than one, not twice as fast.
  EXPECT_LT(two, 0.6 * one);
  EXPECT_GT(two, 0.5 * one);
  EXPECT_NEAR(little / two, 1.0 / 0.4, 0.1);
  // A tiny op gains nothing from a second thread: the fork/join overhead dominates.
  OpConfig tiny = ConvConfig(1, 8, 8, 1);
  EXPECT_GT(clusters.model->PredictUs(tiny, 0), single.model->PredictUs(tiny, 0));
  EXPECT_NE(clusters.platform.Fingerprint(), single.platform.Fingerprint());
}

TEST(ProfilesTest, FingerprintCountsClusterThreads) {
  Profile a = HostProfile({{"cpu", {0}, 1.0}});
  Profile b = HostProfile({{"cpu", {0, 1}, 1.0}});
  EXPECT_EQ(a.platform.Fingerprint(), "host;bw=10000;line=64;cpu:cpu:0;gpu:gpu:0");
  EXPECT_EQ(b.platform.Fingerprint(), "host;bw=10000;line=64;cpu:cpu:0:threads=2;gpu:gpu:0");
  EXPECT_NE(a.model->Version(), b.model->Version());
}

TEST(AnalyticModelTest, PointwiseConvsUseTheirOwnThroughput) {
  AnalyticDeviceParams p = PlainCpu();
  p.pointwise_gflops = 10.0;
  const AnalyticModel model("t", {p});
  const OpConfig pointwise = ConvConfig(55, 16, 64, 1);
  const OpConfig conv3x3 = ConvConfig(55, 16, 64, 3);
  EXPECT_TRUE(IsPointwiseConv(pointwise));
  EXPECT_FALSE(IsPointwiseConv(conv3x3));
  // 2 * 3025 * 64 * 16 flops at 10 GFLOP/s, plus the overhead.
  EXPECT_NEAR(model.PredictUs(pointwise, 0), 6195200.0 / 10e3 + 3.0, 1e-6);
  EXPECT_NEAR(model.PredictUs(conv3x3, 0), 9 * 6195200.0 / 40e3 + 3.0, 1e-6);
  // A depthwise 1x1 is depthwise, not pointwise.
  OpConfig depthwise = ConvConfig(28, 32, 32, 1);
  depthwise.groups = 32;
  ComputeCost(depthwise);
  EXPECT_FALSE(IsPointwiseConv(depthwise));
  EXPECT_NEAR(model.PredictUs(depthwise, 0), depthwise.flops / 5e3 + 3.0, 1e-6);
}

TEST(AnalyticModelTest, HalfReductionSlowsConvsWithFewInputChannels) {
  AnalyticDeviceParams p = PlainCpu();
  p.half_reduction = 27.0;
  const AnalyticModel model("t", {p});
  const OpConfig first = ConvConfig(112, 3, 64, 3);   // reduction 27: half the peak
  const OpConfig deep = ConvConfig(14, 256, 256, 3);  // reduction 2304
  EXPECT_DOUBLE_EQ(ReductionLength(first), 27.0);
  EXPECT_DOUBLE_EQ(ReductionLength(deep), 2304.0);
  OpConfig scores;
  scores.kind = OpKind::kMatMul;
  scores.inputs = {Shape{12 * 197, 1, 64}, Shape{12 * 64, 1, 197}};
  scores.output = Shape{12 * 197, 1, 197};
  scores.matmul = MatMulDims{12, 197, 197, 64, 12, 12};
  ComputeCost(scores);
  EXPECT_DOUBLE_EQ(ReductionLength(scores), 64.0);
  EXPECT_NEAR(model.PredictUs(first, 0) - 3.0, 2.0 * first.flops / 40e3, 1e-6);
  EXPECT_NEAR(model.PredictUs(deep, 0) - 3.0, deep.flops / 40e3 * (2304.0 + 27.0) / 2304.0, 1e-6);
  // Off (0), as in parameters written before the term existed: the plain roofline.
  const AnalyticModel off("t", {PlainCpu()});
  EXPECT_NEAR(off.PredictUs(first, 0) - 3.0, first.flops / 40e3, 1e-6);
  EXPECT_NE(model.Version(), off.Version());
}

TEST(AnalyticModelTest, ConcatCostsConcatUsWhateverItsSize) {
  AnalyticDeviceParams p = PlainCpu();
  p.bandwidth_gbps = 1.0;  // a copy of the big concat would take milliseconds
  p.concat_us = 0.5;
  p.dispatch_us = 10.0;
  const AnalyticModel model("t", {p});
  OpConfig small;
  small.kind = OpKind::kConcat;
  small.inputs = {Shape{7, 7, 8}, Shape{7, 7, 8}};
  small.output = Shape{7, 7, 16};
  ComputeCost(small);
  OpConfig big = small;
  big.inputs = {Shape{56, 56, 128}, Shape{56, 56, 128}};
  big.output = Shape{56, 56, 256};
  ComputeCost(big);
  EXPECT_DOUBLE_EQ(model.PredictUs(small, 0), 10.5);
  EXPECT_DOUBLE_EQ(model.PredictUs(big, 0), 10.5);
  EXPECT_THAT(model.Version(), ::testing::StartsWith("analytic-v3/t/"));
}

// One op over row-major tensors of the given physical dims (inputs first, output last).
model::Graph TensorOpGraph(OpKind kind, const std::vector<std::vector<int64_t>>& dims,
                           model::OpAttrs attrs = {},
                           model::ActivationKind activation = model::ActivationKind::kNone) {
  model::Graph g;
  model::Op op;
  op.name = "op";
  op.kind = kind;
  op.attrs = std::move(attrs);
  op.activation.kind = activation;
  for (size_t i = 0; i < dims.size(); ++i) {
    model::Tensor t;
    t.name = "t" + std::to_string(i);
    t.dims = dims[i];
    t.channels_last = false;
    t.shape = model::ViewOf(dims[i], false);
    t.onnx_rank = static_cast<int32_t>(dims[i].size());
    if (i + 1 < dims.size()) {
      op.inputs.push_back(static_cast<model::TensorId>(i));
    } else {
      t.producer = 0;
      op.output = static_cast<model::TensorId>(i);
    }
    g.tensors.push_back(std::move(t));
  }
  g.ops.push_back(std::move(op));
  return g;
}

TEST(ComputeCostTest, BatchedMatMulOfTwoComputedOperands) {
  // ViT-B/16 attention scores: 12 heads of [197, 64] x [64, 197].
  const OpConfig c = WholeOpConfig(
      TensorOpGraph(OpKind::kMatMul, {{1, 12, 197, 64}, {1, 12, 64, 197}, {1, 12, 197, 197}}), 0);
  EXPECT_EQ(c.matmul, (MatMulDims{12, 197, 197, 64, 12, 12}));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 12 * 197 * 197 * 64);  // 59.6 MFLOP
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (12 * 197 * 64 * 2 + 12 * 197 * 197));
}

TEST(ComputeCostTest, MatMulReadsASharedOperandOnce) {
  // [4, 49, 32] x [32, 49]: the right operand broadcasts over the batch.
  const OpConfig c =
      WholeOpConfig(TensorOpGraph(OpKind::kMatMul, {{4, 49, 32}, {32, 49}, {4, 49, 49}}), 0);
  EXPECT_EQ(c.matmul, (MatMulDims{4, 49, 49, 32, 4, 1}));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 4 * 49 * 49 * 32);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (4 * 49 * 32 + 32 * 49 + 4 * 49 * 49));
}

TEST(ComputeCostTest, HandMadeMatMulDerivesItsExtentsFromTheView) {
  OpConfig c;
  c.kind = OpKind::kMatMul;
  c.inputs = {Shape{197, 1, 768}, Shape{768, 1, 3072}};
  c.output = Shape{197, 1, 3072};
  ComputeCost(c);
  EXPECT_EQ(c.matmul, (MatMulDims{1, 197, 3072, 768, 1, 1}));
  EXPECT_DOUBLE_EQ(c.flops, 2.0 * 197 * 3072 * 768);
}

TEST(ComputeCostTest, FullyConnectedOverTokenRowsReadsItsWeightOnce) {
  // ViT-B/16's MLP expansion: 197 tokens of 768 -> 3072.
  OpConfig fc;
  fc.kind = OpKind::kFullyConnected;
  fc.inputs = {Shape{197, 1, 768}};
  fc.output = Shape{197, 1, 3072};
  ComputeCost(fc);
  EXPECT_DOUBLE_EQ(fc.flops, 2.0 * 197 * 768 * 3072);
  EXPECT_DOUBLE_EQ(fc.bytes, 4.0 * (197 * 768 + 197 * 3072 + 768 * 3072));
  const OpConfig cin = SubtaskConfig(fc, SplitAxis::kInputChannels, 0, 256);
  EXPECT_EQ(cin.inputs[0], (Shape{197, 1, 256}));
  EXPECT_DOUBLE_EQ(cin.flops, 2.0 * 197 * 256 * 3072);
}

TEST(ComputeCostTest, LayerNormReadsScaleAndBias) {
  model::LayerNormAttrs ln;
  const OpConfig c =
      WholeOpConfig(TensorOpGraph(OpKind::kLayerNorm, {{1, 197, 768}, {1, 197, 768}}, ln), 0);
  EXPECT_DOUBLE_EQ(c.flops, 8.0 * 197 * 768);
  EXPECT_DOUBLE_EQ(c.bytes, 4.0 * (2 * 197 * 768 + 2 * 768));
}

TEST(ComputeCostTest, DataMovementCountsNoFlops) {
  model::TransposeAttrs t{{1, 197, 12, 64}, {0, 2, 1, 3}};
  const OpConfig transpose = WholeOpConfig(
      TensorOpGraph(OpKind::kTranspose, {{1, 197, 768}, {1, 12, 197, 64}}, t), 0);
  EXPECT_DOUBLE_EQ(transpose.flops, 0);
  EXPECT_DOUBLE_EQ(transpose.bytes, 4.0 * 2 * 197 * 768);
  const OpConfig reshape =
      WholeOpConfig(TensorOpGraph(OpKind::kReshape, {{1, 197, 768}, {197, 768}}), 0);
  EXPECT_DOUBLE_EQ(reshape.flops, 0);
  EXPECT_DOUBLE_EQ(reshape.bytes, 4.0 * 2 * 197 * 768);
  // The class token of ViT: one row of 197 read, one written.
  model::SliceAttrs cls{{0, 0, 0}, {1, 1, 1}, {1, 1, 768}};
  const OpConfig slice =
      WholeOpConfig(TensorOpGraph(OpKind::kSlice, {{1, 197, 768}, {1, 768}}, cls), 0);
  EXPECT_DOUBLE_EQ(slice.flops, 0);
  EXPECT_DOUBLE_EQ(slice.bytes, 4.0 * 2 * 768);
  model::ConcatAttrs tokens{1};
  const OpConfig concat = WholeOpConfig(
      TensorOpGraph(OpKind::kConcat, {{1, 1, 768}, {1, 196, 768}, {1, 197, 768}}, tokens), 0);
  EXPECT_TRUE(concat.concat_copies);
  EXPECT_DOUBLE_EQ(concat.flops, 0);
  EXPECT_DOUBLE_EQ(concat.bytes, 4.0 * 2 * 197 * 768);
}

TEST(ComputeCostTest, NormalisationAndDivision) {
  const OpConfig softmax = WholeOpConfig(
      TensorOpGraph(OpKind::kSoftmax, {{12, 197, 197}, {12, 197, 197}}), 0);
  EXPECT_DOUBLE_EQ(softmax.flops, 14.0 * 12 * 197 * 197);
  model::ReduceAttrs mean{model::ReduceKind::kMean, {1}};
  const OpConfig reduce =
      WholeOpConfig(TensorOpGraph(OpKind::kReduce, {{1, 197, 768}, {1, 768}}, mean), 0);
  EXPECT_DOUBLE_EQ(reduce.flops, 197.0 * 768);
  EXPECT_DOUBLE_EQ(reduce.bytes, 4.0 * (197 * 768 + 768));
  const OpConfig div =
      WholeOpConfig(TensorOpGraph(OpKind::kDiv, {{197, 768}, {197, 768}, {197, 768}}), 0);
  EXPECT_DOUBLE_EQ(div.flops, 4.0 * 197 * 768);
  EXPECT_DOUBLE_EQ(div.bytes, 4.0 * 3 * 197 * 768);
}

TEST(ComputeCostTest, TranscendentalActivationsCostMoreThanRelu) {
  auto flops = [](model::ActivationKind a) {
    return WholeOpConfig(
               TensorOpGraph(OpKind::kActivation, {{197, 3072}, {197, 3072}}, {}, a), 0)
        .flops;
  };
  const double n = 197.0 * 3072;
  EXPECT_DOUBLE_EQ(flops(model::ActivationKind::kRelu), n);
  EXPECT_DOUBLE_EQ(flops(model::ActivationKind::kGelu), 17 * n);
  EXPECT_DOUBLE_EQ(flops(model::ActivationKind::kSilu), 13 * n);
  EXPECT_DOUBLE_EQ(flops(model::ActivationKind::kExp), 10 * n);
  EXPECT_DOUBLE_EQ(flops(model::ActivationKind::kSqrt), 4 * n);
  EXPECT_DOUBLE_EQ(flops(model::ActivationKind::kNeg), n);
}

TEST(AnalyticModelTest, AConcatThatCopiesIsCostedByItsBytes) {
  AnalyticDeviceParams p = PlainCpu();
  p.bandwidth_gbps = 1.0;
  p.concat_us = 0.5;
  const AnalyticModel model("t", {p});
  const OpConfig concat = WholeOpConfig(
      TensorOpGraph(OpKind::kConcat, {{1, 1, 768}, {1, 196, 768}, {1, 197, 768}},
                    model::ConcatAttrs{1}),
      0);
  // 1.21 MB at 1 GB/s.
  EXPECT_DOUBLE_EQ(model.PredictUs(concat, 0), concat.bytes / 1e3 + p.overhead_us);
}

}  // namespace
}  // namespace psched::predictor
