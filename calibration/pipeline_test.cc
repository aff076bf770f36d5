#include "calibration/pipeline.h"

#include <string>
#include <vector>

#include "calibration/training/host_samples_for_test.h"
#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psched::calibration {
namespace {

using predictor::host_model::CalibrationSamples;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

platform::DeviceSpec Cpu(const std::string& name, int core) {
  platform::DeviceSpec spec;
  spec.name = name;
  spec.kind = platform::DeviceKind::kCpu;
  spec.cpu_cores = {core};
  return spec;
}

platform::DeviceSpec Gpu() {
  platform::DeviceSpec spec;
  spec.name = "gpu";
  spec.kind = platform::DeviceKind::kGpu;
  return spec;
}

std::vector<predictor::AnalyticDeviceParams> PriorsOf(const platform::Platform& platform) {
  std::vector<predictor::AnalyticDeviceParams> priors;
  for (const platform::DeviceSpec& spec : platform.devices) {
    predictor::AnalyticDeviceParams p;
    p.name = spec.name;
    p.gpu = spec.kind == platform::DeviceKind::kGpu;
    if (p.gpu) p.dispatch_us = 30;
    priors.push_back(p);
  }
  return priors;
}

// The devices of HostSamplesForTest.
platform::Platform StoredPlatform() {
  platform::Platform platform;
  platform.name = "host";
  platform.devices = {Cpu("cpu", 0), Gpu()};
  return platform;
}

// Fewer folds and no anchors: the refits train in about a second.
PipelineOptions RefitOptions() {
  PipelineOptions options;
  options.folds = 3;
  options.min_family_samples = 20;
  options.anchors = false;
  options.run_rounds = 0;
  return options;
}

// Two 3x3 convs over 24x24 pixels of 16 channels.
model::Graph ConvPair() {
  executor::testing::GraphBuilder b("pair");
  auto t = b.AddInput({24, 24, 16});
  for (uint32_t i = 0; i < 2; ++i) {
    t = b.AddOp(model::OpKind::kConv2d, {t}, {24, 24, 16},
                executor::testing::RandomConv(b, 16, 16, 3, 1, 1, 1, 1, i));
  }
  b.MarkOutput(t);
  return b.Build();
}

TEST(PipelineTest, RefitTrainsOnTheStoredSamplesWithoutTiming) {
  const platform::Platform platform = StoredPlatform();
  StoredCalibration stored;
  stored.samples = HostSamplesForTest();
  ASSERT_FALSE(stored.samples.samples.empty());
  int events = 0;
  PipelineOptions options = RefitOptions();
  options.progress = [&](const PipelineProgress&) { ++events; };
  absl::StatusOr<PipelineResult> result =
      RunPipeline(platform, PriorsOf(platform), {}, options, &stored);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(events, 0);  // nothing timed, planned or probed
  EXPECT_TRUE(result->devices.empty());
  EXPECT_EQ(result->samples.samples.size(), stored.samples.samples.size());
  ASSERT_NE(result->training.model, nullptr);
  EXPECT_FALSE(result->training.run_costs.has_value());
  EXPECT_TRUE(result->run_costs_missing.empty());
}

TEST(PipelineTest, StoredRunCostsOfOtherDevicesAreDropped) {
  const platform::Platform platform = StoredPlatform();
  StoredCalibration stored;
  stored.samples = HostSamplesForTest();
  RunCosts costs;
  costs.probes = 3;
  costs.runs = 15;
  costs.in_run = {{.device = "cpu", .factor = 1.1}, {.device = "npu", .factor = 2}};
  costs.sync = {{.from = "cpu", .to = "gpu", .us = 40}, {.from = "cpu", .to = "npu", .us = 5}};
  stored.run_costs = costs;
  PipelineOptions options = RefitOptions();
  options.run_rounds = 2;  // stored costs win: no probe runs, so no models are needed
  absl::StatusOr<PipelineResult> result =
      RunPipeline(platform, PriorsOf(platform), {}, options, &stored);
  ASSERT_TRUE(result.ok()) << result.status();
  ASSERT_TRUE(result->training.run_costs.has_value());
  ASSERT_EQ(result->training.run_costs->in_run.size(), 1u);
  EXPECT_EQ(result->training.run_costs->in_run[0].device, "cpu");
  EXPECT_DOUBLE_EQ(result->training.run_costs->in_run[0].factor, 1.1);
  ASSERT_EQ(result->training.run_costs->sync.size(), 1u);
  EXPECT_EQ(result->training.run_costs->sync[0].to, "gpu");
}

TEST(PipelineTest, RunCostsNeedAPriorityModel) {
  const platform::Platform platform = StoredPlatform();
  StoredCalibration stored;
  stored.samples = HostSamplesForTest();
  const std::vector<model::Graph> models = {ConvPair()};
  PipelineOptions options = RefitOptions();
  options.run_rounds = 2;
  options.priority_models = {"not_given"};
  absl::StatusOr<PipelineResult> result =
      RunPipeline(platform, PriorsOf(platform), models, options, &stored);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_EQ(result->run_costs_missing, "no priority model among the models");
  EXPECT_FALSE(result->training.run_costs.has_value());
}

TEST(PipelineTest, RefusesPriorsThatAreNotTheDevices) {
  const platform::Platform platform = StoredPlatform();
  StoredCalibration stored;
  stored.samples = HostSamplesForTest();
  std::vector<predictor::AnalyticDeviceParams> priors = PriorsOf(platform);
  priors.pop_back();
  absl::StatusOr<PipelineResult> result =
      RunPipeline(platform, priors, {}, RefitOptions(), &stored);
  EXPECT_EQ(result.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(result.status().message(), HasSubstr("1 priors for 2 devices"));
}

// Every step on one core: the model's ops (and the transformer shapes) timed alone and in the
// whole model, trained, its plans' configurations timed and trained again, a probe of its plan
// run for the run costs.
TEST(PipelineTest, TimesTrainsPlansAndProbesOnOneCore) {
  platform::Platform platform;
  platform.name = "host";
  platform.devices = {Cpu("cpu.0", 0)};
  const std::vector<model::Graph> models = {ConvPair()};
  PipelineOptions options;
  options.budget_s = 0.5;
  options.runs = 3;
  options.in_graph = true;
  options.folds = 2;
  options.min_family_samples = 1000000;  // the analytic fit: half a second times too few for GBDT
  options.plan_rounds = 1;
  options.plan_budget_s = 1;
  options.run_rounds = 2;
  options.run_min_s = 0;
  options.probe_settle_ms = 0;
  std::vector<PipelineStep> started, finished;
  int timing_events = 0;
  options.progress = [&](const PipelineProgress& p) {
    if (p.timing != nullptr) {
      ++timing_events;
    } else {
      (p.finished ? finished : started).push_back(p.step);
      if (p.step == PipelineStep::kOpTiming && !p.finished) {
        EXPECT_EQ(p.models, 1);
        EXPECT_GT(p.cases, 0);
      }
    }
  };
  absl::StatusOr<PipelineResult> result =
      RunPipeline(platform, PriorsOf(platform), models, options);
  ASSERT_TRUE(result.ok()) << result.status();
  EXPECT_THAT(started, ElementsAre(PipelineStep::kOpTiming, PipelineStep::kInGraph,
                                   PipelineStep::kPlannedCases, PipelineStep::kRunCosts));
  EXPECT_EQ(finished, started);
  EXPECT_GT(timing_events, 0);
  ASSERT_EQ(result->devices.size(), 1u);
  EXPECT_FALSE(result->devices[0].skipped) << result->devices[0].reason;
  ASSERT_EQ(result->planned.size(), 1u);
  ASSERT_EQ(result->in_graph.size(), 1u);
  EXPECT_EQ(result->in_graph[0].device, "cpu.0");
  EXPECT_EQ(result->in_graph[0].models, 1);
  EXPECT_EQ(result->in_graph[0].ops, 2);  // both convs
  // One device: no co-run phase, so the samples are the cases timed, the in-graph ops and the
  // planned cases timed.
  EXPECT_GT(result->devices[0].cases_done, 0);
  EXPECT_EQ(result->samples.samples.size(),
            static_cast<size_t>(result->devices[0].cases_done + result->in_graph[0].ops +
                                result->planned[0].timed[0]));
  EXPECT_TRUE(result->run_costs_missing.empty());
  ASSERT_TRUE(result->training.run_costs.has_value());
  EXPECT_EQ(result->training.run_costs->probes, 1);
  ASSERT_EQ(result->training.run_costs->in_run.size(), 1u);
  EXPECT_EQ(result->training.run_costs->in_run[0].device, "cpu.0");
  EXPECT_GT(result->training.run_costs->in_run[0].factor, 0);
}

}  // namespace
}  // namespace psched::calibration
