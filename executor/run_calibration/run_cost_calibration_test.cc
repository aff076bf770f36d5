#include "executor/run_calibration/run_cost_calibration.h"

#include <memory>
#include <string>

#include "executor/run_calibration/two_cores_for_test.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "predictor/device_subset_model.h"
#include "predictor/profiles.h"
#include "scheduler/registry/registry.h"

namespace psched::executor::run_calibration {
namespace {

using model::OpKind;
using ::testing::HasSubstr;
using testing::RandomConv;

// A chain of convs over 24x24 pixels, with shapes only: the probes synthesise its weights.
model::Graph ConvChain() {
  testing::GraphBuilder b("chain");
  auto t = b.AddInput({24, 24, 8});
  for (int i = 0; i < 4; ++i) {
    t = b.AddOp(OpKind::kConv2d, {t}, {24, 24, 8}, RandomConv(b, 8, 8, 3, 1, 1, 1, 1, i));
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
  const std::vector<runtime::Device*>& devices_ = cores_.devices;
};

TEST_F(RunCostCalibrationTest, ProbesEachDeviceAloneAndTogether) {
  auto costs = CalibrateRunCosts(graphs_, platform_, devices_, {}, *model_, Plan,
                                 {.probe = {.warmup_runs = 1, .rounds = 2}});
  ASSERT_TRUE(costs.ok()) << costs.status();
  // single:cpu.0, single:cpu.1, heft, partition-only, pa-heft, iterative
  EXPECT_EQ(costs->probes, 6);
  EXPECT_EQ(costs->runs, 2);
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
  const std::vector<runtime::Device*> first = {devices_[0]};
  auto costs = CalibrateRunCosts(graphs_, one, first, {}, **model, Plan,
                                 {.probe = {.warmup_runs = 0, .rounds = 1}});
  ASSERT_TRUE(costs.ok()) << costs.status();
  EXPECT_EQ(costs->probes, 1);
  EXPECT_EQ(costs->in_run.size(), 1u);
  EXPECT_TRUE(costs->sync.empty());
}

// The host's step: only the usable CPU devices of the whole platform are probed (the gpu is never
// opened), with the model of the whole platform.
TEST_F(RunCostCalibrationTest, TheHostStepProbesTheUsableCpuDevices) {
  const predictor::Profile host = predictor::HostProfile(2);  // cpu.0, cpu.1, gpu
  auto costs = CalibrateHostRunCosts(graphs_, host.platform, {false, true, true}, host.model, Plan,
                                     {.probe = {.warmup_runs = 0, .rounds = 1}});
  ASSERT_TRUE(costs.ok()) << costs.status();
  EXPECT_EQ(costs->probes, 1);
  ASSERT_EQ(costs->in_run.size(), 1u);
  EXPECT_EQ(costs->in_run[0].device, "cpu.1");
  auto none = CalibrateHostRunCosts(graphs_, host.platform, {false, false, true}, host.model, Plan);
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_EQ(none->probes, 0);
}

TEST_F(RunCostCalibrationTest, RefusesGpusMismatchesAndFailedPlans) {
  auto error = [&](std::span<const model::Graph> graphs, const platform::Platform& platform,
                   std::span<runtime::Device* const> devices, const PlanFn& plan) {
    return std::string(
        CalibrateRunCosts(graphs, platform, devices, {}, *model_, plan).status().message());
  };
  EXPECT_THAT(error({}, platform_, devices_, Plan), HasSubstr("no graphs"));
  const std::vector<runtime::Device*> first = {devices_[0]};
  EXPECT_THAT(error(graphs_, platform_, first, Plan),
              HasSubstr("the platform has 2 devices, the runtime 1 and the model 2"));
  platform::Platform gpu = platform_;
  gpu.devices[1].kind = platform::DeviceKind::kGpu;
  EXPECT_THAT(error(graphs_, gpu, devices_, Plan), HasSubstr("'cpu.1' is not a CPU device"));
  const PlanFn failing = [](const scheduler::Problem&, const std::string&) {
    return absl::StatusOr<scheduler::Schedule>(absl::UnavailableError("no planner"));
  };
  EXPECT_THAT(error(graphs_, platform_, devices_, failing),
              HasSubstr("planning chain with single:cpu.0: no planner"));
}

}  // namespace
}  // namespace psched::executor::run_calibration
