#include "calibration/planned_cases.h"

#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "executor/testing/graph_builder.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "predictor/analytic_model.h"
#include "predictor/device_subset_model.h"
#include "predictor/op_config.h"
#include "predictor/profiles.h"
#include "scheduler/problem.h"
#include "scheduler/registry/registry.h"

namespace psched::calibration {
namespace {

using executor::testing::RandomConv;
using model::OpKind;
using predictor::host_model::CalibrationSample;
using predictor::host_model::CalibrationSamples;
using ::testing::HasSubstr;

// Four 3x3 convs over 48x48 pixels of 32 channels: large enough for partition-only to split.
model::Graph ConvChain() {
  executor::testing::GraphBuilder b("chain");
  auto t = b.AddInput({48, 48, 32});
  for (int i = 0; i < 4; ++i) {
    t = b.AddOp(OpKind::kConv2d, {t}, {48, 48, 32},
                RandomConv(b, 32, 32, 3, 1, 1, 1, 1, static_cast<uint32_t>(i)));
  }
  b.MarkOutput(t);
  return b.Build();
}

// 3x3 convs over 40x40 pixels of other widths (24 -> 40 -> 56 -> 24 channels): timed beside
// the chain, they give the trained model the shape of a conv's time in its work. The chain's
// four convs are one configuration, one sample per device; fitted to that alone, a half conv
// came out at 85% of a whole one, so on a loaded machine (one core 3x slower than the other)
// partition-only cut nothing. No configuration here is a cut of the chain's.
model::Graph ConvWidths() {
  executor::testing::GraphBuilder b("widths");
  auto t = b.AddInput({40, 40, 24});
  int64_t cin = 24;
  for (const int64_t cout : {40, 56, 24}) {
    t = b.AddOp(OpKind::kConv2d, {t}, {40, 40, cout},
                RandomConv(b, cin, cout, 3, 1, 1, 1, 1, static_cast<uint32_t>(cout)));
    cin = cout;
  }
  b.MarkOutput(t);
  return b.Build();
}

absl::StatusOr<scheduler::Schedule> Plan(const scheduler::Problem& problem,
                                         const std::string& method) {
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> s = scheduler::MakeScheduler(method);
  if (!s.ok()) return s.status();
  return (*s)->Plan(problem, {});
}

std::string Key(const predictor::OpConfig& config) {
  return predictor::host_model::OpConfigToJson(config).dump();
}

// (device, configuration) of every case.
std::set<std::pair<std::string, std::string>> Keys(
    const platform::Platform& platform,
    const std::vector<std::vector<calibration::CalibrationCase>>& cases) {
  std::set<std::pair<std::string, std::string>> out;
  for (size_t d = 0; d < cases.size(); ++d) {
    for (const calibration::CalibrationCase& c : cases[d]) {
      out.emplace(platform.devices[d].name, Key(c.config));
    }
  }
  return out;
}

// A sample of every case, on its device.
CalibrationSamples SamplesOf(const platform::Platform& platform,
                             const std::vector<std::vector<calibration::CalibrationCase>>& cases,
                             bool co_running) {
  CalibrationSamples samples;
  for (size_t d = 0; d < cases.size(); ++d) {
    for (const calibration::CalibrationCase& c : cases[d]) {
      CalibrationSample s;
      s.device = platform.devices[d].name;
      s.config = c.config;
      s.measured_us = 100;
      s.co_running = co_running;
      samples.samples.push_back(std::move(s));
    }
  }
  return samples;
}

class PlannedCasesTest : public ::testing::Test {
 protected:
  const std::vector<model::Graph> graphs_ = {ConvChain()};
  const predictor::Profile host_ = predictor::HostProfile(2);  // cpu.0, cpu.1, gpu
  const std::vector<std::string> methods_ = {"partition-only"};
  const std::vector<bool> cpus_only_ = {true, true, false};
};

// The cases are exactly the subtasks of the two cores' plans (each core alone, partition-only
// over both), each configuration once per device, as the planner predicts it: from unit 0.
TEST_F(PlannedCasesTest, AreWhatThePlansPutOnEachDevice) {
  auto cases = PlannedCases(graphs_, host_.platform, cpus_only_, host_.model, Plan, methods_, {});
  ASSERT_TRUE(cases.ok()) << cases.status();
  ASSERT_EQ(cases->size(), 3u);
  EXPECT_TRUE((*cases)[2].empty()) << "the GPU is not usable";

  platform::Platform cores = host_.platform;
  cores.devices.pop_back();
  auto model = predictor::DeviceSubsetModel::Create(host_.model, {0, 1});
  ASSERT_TRUE(model.ok()) << model.status();
  auto problem = scheduler::Problem::FromGraph(graphs_[0], cores, **model);
  ASSERT_TRUE(problem.ok()) << problem.status();
  std::set<std::pair<std::string, std::string>> expected;
  int slices = 0;
  for (const std::string method : {"single:cpu.0", "single:cpu.1", "partition-only"}) {
    auto schedule = Plan(*problem, method);
    ASSERT_TRUE(schedule.ok()) << schedule.status();
    for (const scheduler::ScheduledSubtask& s : schedule->subtasks()) {
      const int64_t end = s.axis == model::SplitAxis::kNone ? 1 : s.end - s.begin;
      expected.emplace(cores.devices[static_cast<size_t>(s.device)].name,
                       Key(predictor::SubtaskConfig(graphs_[0], s.op, s.axis, 0, end)));
      slices += s.axis == model::SplitAxis::kNone ? 0 : 1;
    }
  }
  ASSERT_GT(slices, 0) << "partition-only split nothing: the test graph is too small";
  EXPECT_EQ(Keys(host_.platform, *cases), expected);
  size_t count = 0;
  for (const auto& device_cases : *cases) {
    for (const calibration::CalibrationCase& c : device_cases) {
      ++count;
      EXPECT_EQ(c.begin, 0) << c.source;
      EXPECT_TRUE(c.priority) << c.source;
      EXPECT_THAT(c.source, HasSubstr("planned by ")) << c.source;
      // What Calibrate times: the extracted op's slice is the planned configuration.
      ASSERT_NE(c.graph, nullptr);
      EXPECT_EQ(Key(predictor::SubtaskConfig(*c.graph, 0, c.axis, c.begin, c.end)), Key(c.config))
          << c.source;
    }
  }
  EXPECT_EQ(count, expected.size()) << "a configuration listed twice on a device";
}

// A configuration with a sample timed alone on the device is not planned again; one timed
// only under co-run load is.
TEST_F(PlannedCasesTest, SkipConfigurationsSampledAloneOnTheirDevice) {
  auto cases = PlannedCases(graphs_, host_.platform, cpus_only_, host_.model, Plan, methods_, {});
  ASSERT_TRUE(cases.ok()) << cases.status();
  auto again = PlannedCases(graphs_, host_.platform, cpus_only_, host_.model, Plan, methods_,
                            SamplesOf(host_.platform, *cases, /*co_running=*/false));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(Keys(host_.platform, *again).empty());
  auto co_run = PlannedCases(graphs_, host_.platform, cpus_only_, host_.model, Plan, methods_,
                             SamplesOf(host_.platform, *cases, /*co_running=*/true));
  ASSERT_TRUE(co_run.ok()) << co_run.status();
  EXPECT_EQ(Keys(host_.platform, *co_run), Keys(host_.platform, *cases));
  // cpu.0's samples do not stand for cpu.1.
  std::vector<std::vector<calibration::CalibrationCase>> first_only = *cases;
  first_only[1].clear();
  auto second = PlannedCases(graphs_, host_.platform, cpus_only_, host_.model, Plan, methods_,
                             SamplesOf(host_.platform, first_only, false));
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_TRUE((*second)[0].empty());
  EXPECT_EQ((*second)[1].size(), (*cases)[1].size());
}

// Real rounds on the two cores: the planned configurations are timed on their device, added
// to the samples, and the model trained again on them; the plans of the model before have no
// configuration left without a sample.
TEST_F(PlannedCasesTest, SamplingTimesThePlannedCasesAndTrainsAgain) {
  platform::Platform cores = host_.platform;
  cores.devices.pop_back();
  calibration::HostTrainingOptions training_options;
  const auto* analytic = dynamic_cast<const predictor::AnalyticModel*>(host_.model.get());
  ASSERT_NE(analytic, nullptr);
  training_options.priors = {analytic->device(0), analytic->device(1)};
  training_options.folds = 2;
  // A few whole ops timed as a short calibration would (the chain's and the widths'), the
  // model trained on them.
  calibration::CalibrationOptions timing;
  timing.runs = 1;
  timing.evict_bytes = 0;
  timing.co_run_share = 0;
  timing.budget_s = 5;
  const std::vector<model::Graph> timed_graphs = {graphs_[0], ConvWidths()};
  const std::vector<calibration::CalibrationCase> whole =
      calibration::BuildCases(timed_graphs, {.include_slices = false, .priority_models = {}});
  auto run = calibration::Calibrate(cores.devices, whole, timing);
  ASSERT_TRUE(run.ok()) << run.status();
  CalibrationSamples samples = run->samples;
  const size_t before = samples.samples.size();
  ASSERT_GT(before, 0u);
  auto training = calibration::TrainHostModel(cores.name, samples, training_options);
  ASSERT_TRUE(training.ok()) << training.status();
  const std::shared_ptr<const predictor::LatencyModel> first_model = training->model;
  const std::string first_version = first_model->Version();

  PlannedSamplingOptions options;
  options.rounds = 2;
  options.methods = methods_;
  options.timing = timing;
  options.training = training_options;
  auto rounds = SamplePlannedCases(graphs_, cores, {}, Plan, options, samples, *training);
  ASSERT_TRUE(rounds.ok()) << rounds.status();
  ASSERT_GE(rounds->size(), 1u);
  size_t timed = 0;
  for (const PlannedSamplingRound& r : *rounds) {
    ASSERT_EQ(r.planned.size(), 2u);
    for (size_t d = 0; d < 2; ++d) {
      EXPECT_LE(r.timed[d], r.planned[d]);
      timed += static_cast<size_t>(r.timed[d]);
    }
  }
  EXPECT_GT((*rounds)[0].planned[0], 0) << "the slices of partition-only had no sample";
  EXPECT_EQ((*rounds)[0].timed, (*rounds)[0].planned) << "a short chain fits the budget";
  EXPECT_EQ(samples.samples.size(), before + timed);
  EXPECT_NE(training->model->Version(), first_version);
  auto left = PlannedCases(graphs_, cores, {}, first_model, Plan, methods_, samples);
  ASSERT_TRUE(left.ok()) << left.status();
  EXPECT_TRUE(Keys(cores, *left).empty());
}

TEST_F(PlannedCasesTest, NamesTheGraphAndMethodThatFailedToPlan) {
  const PlanFn refuse = [](const scheduler::Problem&, const std::string&) {
    return absl::StatusOr<scheduler::Schedule>(absl::UnavailableError("no planner"));
  };
  auto cases = PlannedCases(graphs_, host_.platform, cpus_only_, host_.model, refuse, methods_, {});
  ASSERT_FALSE(cases.ok());
  EXPECT_EQ(cases.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(cases.status().message(),
              HasSubstr("planned cases: planning chain with single:cpu.0: no planner"));
  // No usable CPU device: nothing is planned.
  auto none = PlannedCases(graphs_, host_.platform, {false, false, true}, host_.model, refuse,
                           methods_, {});
  ASSERT_TRUE(none.ok()) << none.status();
  EXPECT_TRUE(Keys(host_.platform, *none).empty());
}

}  // namespace
}  // namespace psched::calibration
