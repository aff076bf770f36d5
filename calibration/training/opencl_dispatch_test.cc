// OpenClDispatch against the launches the OpenCL KernelFactory really builds, for every slice kind of
// dense, grouped, depthwise and fully-connected ops; and a host GPU GBDT model that uses it.
#include "calibration/training/opencl_dispatch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "executor/opencl/opencl_kernels.h"
#include "executor/opencl/opencl_test_util.h"
#include "executor/testing/graph_builder.h"
#include "model/split.h"
#include "predictor/gbdt/gbdt_latency_model.h"

namespace psched::calibration {
namespace {

using executor::WorkSlice;
using executor::opencl::KernelFactory;
using executor::opencl::OpKernel;
using executor::opencl::SvmArena;
using executor::testing::GraphBuilder;
using model::OpKind;
using model::Shape;
using model::SplitAxis;

// x -> conv(groups) -> depthwise conv (multiplier 2) -> flatten -> fc.
model::Graph Graph(int groups) {
  GraphBuilder b("geometry");
  model::TensorId x = b.AddInput(Shape{13, 11, 12});
  model::TensorId c = b.AddOp(OpKind::kConv2d, {x}, Shape{13, 11, 24},
                              executor::testing::RandomConv(b, 12, 24, 3, 1, 1, 1, groups, 1));
  model::TensorId d = b.AddOp(OpKind::kConv2d, {c}, Shape{7, 6, 48},
                              executor::testing::RandomConv(b, 24, 48, 3, 2, 1, 1, 24, 2));
  model::TensorId f = b.AddOp(OpKind::kFlatten, {d}, Shape{1, 1, 7 * 6 * 48});
  model::FullyConnectedAttrs fc;
  fc.weight = b.AddConstant({10, 7 * 6 * 48}, std::vector<float>(10 * 7 * 6 * 48, 0.01f));
  b.MarkOutput(b.AddOp(OpKind::kFullyConnected, {f}, Shape{1, 1, 10}, fc));
  return b.Build();
}

TEST(OpenClDispatchTest, DispatchFeaturesAreTheLaunchesTheFactoryBuilds) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  for (int groups : {1, 3}) {
    const model::Graph g = Graph(groups);
    std::vector<int64_t> offsets;
    int64_t next = 0;
    for (const model::Tensor& t : g.tensors) {
      offsets.push_back(t.constant != model::kInvalidId ? -1 : next);
      if (t.constant == model::kInvalidId) next += t.shape.Elements();
    }
    absl::StatusOr<std::unique_ptr<SvmArena>> arena =
        SvmArena::Create(device, static_cast<size_t>(next));
    ASSERT_TRUE(arena.ok()) << arena.status();
    absl::StatusOr<std::unique_ptr<KernelFactory>> factory =
        KernelFactory::Create(device, &g, arena->get(), offsets);
    ASSERT_TRUE(factory.ok()) << factory.status();
    int checked = 0;
    for (model::OpId op : {0, 1, 3}) {
      for (SplitAxis axis : model::kAllSplitAxes) {
        const int64_t u = model::WorkSize(g, op, axis);
        if (u == 0) continue;
        for (auto [begin, end] :
             {std::pair<int64_t, int64_t>{0, u}, {0, (u + 1) / 2}, {u / 3, u}}) {
          if (begin >= end) continue;
          absl::StatusOr<std::unique_ptr<OpKernel>> kernel =
              (*factory)->Create(op, WorkSlice{axis, begin, end});
          ASSERT_TRUE(kernel.ok()) << kernel.status();
          ASSERT_EQ((*kernel)->launch_count(), 1u);
          const predictor::gbdt::DispatchFeatures d =
              OpenClDispatch(predictor::SubtaskConfig(g, op, axis, begin, end));
          for (size_t i = 0; i < 3; ++i) {
            EXPECT_EQ(static_cast<int64_t>((*kernel)->launch(0).global[i]), d.global[i])
                << "groups " << groups << " op " << op << " " << model::SplitAxisName(axis) << " ["
                << begin << ", " << end << ") dim " << i;
          }
          EXPECT_EQ(d.local, (std::array<int64_t, 3>{0, 0, 0}));
          ++checked;
        }
      }
    }
    EXPECT_GE(checked, 20);
  }
}

TEST(OpenClDispatchTest, KernelClassFollowsTheConvKind) {
  const model::Graph dense = Graph(1);
  const model::Graph grouped = Graph(3);
  using predictor::gbdt::KernelClass;
  EXPECT_EQ(OpenClDispatch(predictor::WholeOpConfig(dense, 0)).kernel, KernelClass::kDirect);
  EXPECT_EQ(OpenClDispatch(predictor::WholeOpConfig(grouped, 0)).kernel, KernelClass::kGrouped);
  EXPECT_EQ(OpenClDispatch(predictor::WholeOpConfig(dense, 1)).kernel, KernelClass::kDepthwise);
  EXPECT_EQ(OpenClDispatch(predictor::WholeOpConfig(dense, 3)).kernel,
            KernelClass::kFullyConnected);
  // 24 output channels in blocks of kConvTileC, 11 pixels in tiles of kConvTileW.
  EXPECT_EQ(OpenClDispatch(predictor::WholeOpConfig(dense, 0)).global,
            (std::array<int64_t, 3>{3, 13, 3}));
}

// A host GPU model set is just another model set: a file naming this scheme loads when the
// scheme is passed to GbdtLatencyModel::Create, and its trees read these features.
TEST(OpenClDispatchTest, HostGpuModelsPredictWithThisScheme) {
  using predictor::gbdt::FeatureNames;
  using predictor::gbdt::OpFamily;
  predictor::gbdt::DeviceModel m;
  m.device = "host/gpu";
  m.gpu = true;
  m.dispatch = kOpenClDispatchScheme;
  const std::vector<std::string>& names = FeatureNames(OpFamily::kConv, true);
  const int global_z =
      static_cast<int>(std::find(names.begin(), names.end(), "global_z") - names.begin());
  predictor::gbdt::FamilyModel conv;
  conv.baseline = predictor::gbdt::Baseline{0, 0, 100.0};
  // More than 2 channel blocks: twice the time.
  conv.trees =
      predictor::gbdt::TreeEnsemble(0, static_cast<int>(names.size()),
                                    {{{global_z, 2.5f, 1, 2, true},
                                      {-1, 0.0f, -1, -1, true},
                                      {-1, static_cast<float>(std::log(2.0)), -1, -1, true}}});
  m.families[0] = conv;
  for (OpFamily f : predictor::gbdt::kAllFamilies) {
    if (f != OpFamily::kConv) m.fallback[static_cast<size_t>(f)] = OpFamily::kConv;
  }
  predictor::gbdt::GbdtLatencyModel::DeviceSource source{
      "gpu", "host_gpu.gbdt", predictor::gbdt::FormatModelFile(m), "host/gpu", true, 0.0};
  EXPECT_THAT(
      std::string(predictor::gbdt::GbdtLatencyModel::Create("host", {source}).status().message()),
      ::testing::HasSubstr("host_gpu.gbdt:4: unknown dispatch scheme 'psched-opencl'"));
  absl::StatusOr<std::unique_ptr<predictor::gbdt::GbdtLatencyModel>> model =
      predictor::gbdt::GbdtLatencyModel::Create("host", {source},
                                                {{kOpenClDispatchScheme, &OpenClDispatch}});
  ASSERT_TRUE(model.ok()) << model.status();
  const model::Graph g = Graph(1);
  // 24 channels = 3 blocks; a 16-channel slice = 2 blocks.
  EXPECT_NEAR((*model)->PredictUs(predictor::WholeOpConfig(g, 0), 0), 200.0, 1e-6);
  EXPECT_NEAR(
      (*model)->PredictUs(predictor::SubtaskConfig(g, 0, SplitAxis::kOutputChannels, 0, 16), 0),
      100.0, 1e-6);
}

}  // namespace
}  // namespace psched::calibration
