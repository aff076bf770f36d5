#include "calibration/run_costs/run_cost_calibration.h"

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "calibration/run_costs/two_cores_for_test.h"
#include "executor/opencl/opencl_device.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "predictor/device_subset_model.h"
#include "predictor/profiles.h"
#include "scheduler/registry/registry.h"

namespace psched::calibration {
namespace {

using executor::testing::RandomConv;
using model::OpKind;
using ::testing::HasSubstr;

// A chain of convs over `side`x`side` pixels of `channels`, with shapes only: the probes
// synthesise its weights.
model::Graph ConvChain(int64_t side = 24, int64_t channels = 8) {
  executor::testing::GraphBuilder b("chain");
  auto t = b.AddInput({side, side, channels});
  for (int i = 0; i < 4; ++i) {
    t = b.AddOp(OpKind::kConv2d, {t}, {side, side, channels},
                RandomConv(b, channels, channels, 3, 1, 1, 1, 1, static_cast<uint32_t>(i)));
  }
  b.MarkOutput(t);
  model::Graph g = b.Build();
  g.has_weights = false;
  for (model::Constant& c : g.constants) c.data.clear();
  return g;
}

absl::StatusOr<scheduler::Schedule> Plan(const scheduler::Problem& problem,
                                         const std::string& method) {
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> s = scheduler::MakeScheduler(method);
  if (!s.ok()) return s.status();
  return (*s)->Plan(problem, {});
}

class RunCostCalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override { cores_.SetUp(); }
  std::vector<model::Graph> graphs_ = {ConvChain()};
  TwoCores cores_;
  const platform::Platform& platform_ = cores_.platform;
  const std::shared_ptr<const predictor::LatencyModel>& model_ = cores_.model;
  const std::vector<executor::runtime::Device*>& devices_ = cores_.devices;
};

TEST_F(RunCostCalibrationTest, ProbesEachDeviceAloneAndTogether) {
  auto costs = CalibrateRunCosts(graphs_, platform_, devices_, {}, *model_, Plan,
                                 {.probe = {.warmup_runs = 1, .rounds = 3}});
  ASSERT_TRUE(costs.ok()) << costs.status();
  // single:cpu.0, single:cpu.1, heft, partition-only, pa-heft, iterative
  EXPECT_EQ(costs->probes, 6);
  // Fitted to the quieter two of the three rounds.
  EXPECT_EQ(costs->rounds, 3);
  EXPECT_EQ(costs->runs, 2);
  EXPECT_GT(costs->slowest_kept_round, 0);
  EXPECT_LE(costs->slowest_kept_round, costs->slowest_dropped_round);
  ASSERT_EQ(costs->in_run.size(), 2u);
  EXPECT_EQ(costs->in_run[1].device, "cpu.1");
  ASSERT_EQ(costs->sync.size(), 2u);
  EXPECT_GT(costs->multi_device_measured_us, 0);
}

TEST_F(RunCostCalibrationTest, OneDeviceGetsNoSync) {
  platform::Platform one = platform_;
  one.devices.pop_back();
  auto model = predictor::DeviceSubsetModel::Create(model_, {0});
  ASSERT_TRUE(model.ok());
  const std::vector<executor::runtime::Device*> first = {devices_[0]};
  // One short probe: min_s asks for more rounds than the one given, up to max_rounds.
  auto costs =
      CalibrateRunCosts(graphs_, one, first, {}, **model, Plan,
                        {.probe = {.warmup_runs = 0, .rounds = 1, .min_s = 60, .max_rounds = 3}});
  ASSERT_TRUE(costs.ok()) << costs.status();
  EXPECT_EQ(costs->probes, 1);
  EXPECT_EQ(costs->rounds, 3);  // the rounds run, not the rounds asked for
  EXPECT_EQ(costs->runs, 2);
  EXPECT_EQ(costs->in_run.size(), 1u);
  EXPECT_TRUE(costs->sync.empty());
}

// The host's step: only the usable CPU devices of the whole platform are probed (the unusable
// gpu is never opened), with the model of the whole platform.
TEST_F(RunCostCalibrationTest, TheHostStepProbesTheUsableCpuDevices) {
  const predictor::Profile host = predictor::HostProfile(2);  // cpu.0, cpu.1, gpu
  auto costs = CalibrateHostRunCosts(graphs_, host.platform, {false, true, false}, host.model, Plan,
                                     {.probe = {.warmup_runs = 0, .rounds = 1}});
  ASSERT_TRUE(costs.ok()) << costs.status();
  EXPECT_EQ(costs->probes, 1);
  ASSERT_EQ(costs->in_run.size(), 1u);
  EXPECT_EQ(costs->in_run[0].device, "cpu.1");
  auto none = CalibrateHostRunCosts(graphs_, host.platform, {false, false, true}, host.model, Plan);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->probes, 0);
}

// With a usable GPU, a second stage probes it beside the first CPU device: the GPU gets its
// own in-run factor, and one fitted cost for an edge between it and any CPU device, in both
// directions, beside the CPU devices' own pairs.
TEST_F(RunCostCalibrationTest, TheHostStepProbesTheGpuBesideTheFirstCpuDevice) {
  if (executor::opencl::ListDevices()
          .value_or(std::vector<executor::opencl::DeviceInfo>{})
          .empty()) {
    GTEST_SKIP() << "no OpenCL device";
  }
  const predictor::Profile host = predictor::HostProfile(2);  // cpu.0, cpu.1, gpu
  // Convs large enough that partition-only gives the GPU a share.
  const std::vector<model::Graph> graphs = {ConvChain(48, 32)};
  auto costs = CalibrateHostRunCosts(
      graphs, host.platform, {}, host.model, Plan,
      {.methods = {"partition-only"}, .probe = {.warmup_runs = 0, .rounds = 1}});
  ASSERT_TRUE(costs.ok()) << costs.status();
  // cpu.0, cpu.1 and one plan over both; then cpu.0, gpu and one plan over both.
  EXPECT_EQ(costs->probes, 6);
  std::vector<std::string> in_run;
  for (const calibration::RunCosts::InRun& r : costs->in_run) in_run.push_back(r.device);
  EXPECT_THAT(in_run, ::testing::ElementsAre("cpu.0", "cpu.1", "gpu"));
  std::map<std::pair<std::string, std::string>, double> sync;
  for (const calibration::RunCosts::Sync& e : costs->sync) sync[{e.from, e.to}] = e.us;
  ASSERT_EQ(sync.size(), 6u);
  const double gpu_edge = sync[{"cpu.0", "gpu"}];
  for (const auto& pair : std::vector<std::pair<std::string, std::string>>{
           {"gpu", "cpu.0"}, {"cpu.1", "gpu"}, {"gpu", "cpu.1"}}) {
    EXPECT_EQ(sync.at(pair), gpu_edge) << pair.first << " -> " << pair.second;
  }
  EXPECT_TRUE(sync.contains({"cpu.0", "cpu.1"}));
  EXPECT_GT(costs->gpu_multi_device_measured_us, 0);
}

TEST_F(RunCostCalibrationTest, RefusesTwoGpusMismatchesAndFailedPlans) {
  auto error = [&](std::span<const model::Graph> graphs, const platform::Platform& platform,
                   std::span<executor::runtime::Device* const> devices, const PlanFn& plan) {
    return std::string(
        CalibrateRunCosts(graphs, platform, devices, {}, *model_, plan).status().message());
  };
  EXPECT_THAT(error({}, platform_, devices_, Plan), HasSubstr("no graphs"));
  const std::vector<executor::runtime::Device*> first = {devices_[0]};
  EXPECT_THAT(error(graphs_, platform_, first, Plan),
              HasSubstr("the platform has 2 devices, the runtime 1 and the model 2"));
  platform::Platform gpus = platform_;
  gpus.devices[0].kind = gpus.devices[1].kind = platform::DeviceKind::kGpu;
  EXPECT_THAT(error(graphs_, gpus, devices_, Plan), HasSubstr("one GPU at a time"));
  const PlanFn failing = [](const scheduler::Problem&, const std::string&) {
    return absl::StatusOr<scheduler::Schedule>(absl::UnavailableError("no planner"));
  };
  EXPECT_THAT(error(graphs_, platform_, devices_, failing),
              HasSubstr("planning chain with single:cpu.0: no planner"));
}

}  // namespace
}  // namespace psched::calibration
