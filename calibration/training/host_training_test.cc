#include "calibration/training/host_training.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "calibration/training/host_samples_for_test.h"
#include "predictor/gbdt/features.h"
#include "predictor/gbdt/model_file.h"

namespace psched::calibration {
namespace {

namespace gbdt = predictor::gbdt;
using nlohmann::json;
using predictor::host_model::CalibrationSample;
using predictor::host_model::CalibrationSamples;
using ::testing::HasSubstr;

HostTrainingOptions Options() {
  HostTrainingOptions options;
  predictor::AnalyticDeviceParams cpu, gpu;
  cpu.name = "cpu";
  gpu.name = "gpu";
  gpu.gpu = true;
  gpu.dispatch_us = 30;
  options.priors = {cpu, gpu};
  options.min_family_samples = 20;
  options.folds = 3;        // fewer fits: the suite trains in about a second
  options.anchors = false;  // the GBDT models and the fit predict; anchors are tested apart
  return options;
}

// The stored device entry `name` of params.
json& StoredDevice(json& params, const std::string& name) {
  for (json& d : params["devices"]) {
    if (d["name"] == name) return d;
  }
  ADD_FAILURE() << "no device " << name;
  return params;
}

class HostTrainingTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    absl::StatusOr<HostTraining> trained = TrainHostModel("host", HostSamplesForTest(), Options());
    ASSERT_TRUE(trained.ok()) << trained.status();
    training_ = new HostTraining(std::move(*trained));
  }
  static void TearDownTestSuite() { delete training_; }
  // The fixture's model with `costs` applied.
  static HostTraining Applied(const RunCosts& costs) {
    HostTraining t = *training_;
    EXPECT_TRUE(ApplyRunCosts(costs, t).ok());
    return t;
  }
  // A run cost that predicts a fixed plan's run only: `with` predicts every op as `without`
  // does on `device`, has another version, and loads back from its stored form with it.
  static absl::StatusOr<LoadedHostModel> ExpectRunOnlyAndStored(const HostTraining& with,
                                                                const HostTraining& without,
                                                                int device) {
    const CalibrationSamples samples = HostSamplesForTest();
    const predictor::OpConfig& config = samples.samples.front().config;
    EXPECT_DOUBLE_EQ(with.model->PredictUs(config, device),
                     without.model->PredictUs(config, device));
    EXPECT_NE(with.model->Version(), without.model->Version());
    absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(json::parse(with.params.dump()));
    if (loaded.ok()) EXPECT_EQ(loaded->model->Version(), with.model->Version());
    return loaded;
  }
  static HostTraining* training_;
};
HostTraining* HostTrainingTest::training_ = nullptr;

TEST_F(HostTrainingTest, TrainsGbdtForWellSampledFamiliesAndTheFitForTheRest) {
  const HostTraining& t = *training_;
  const CalibrationSamples samples = HostSamplesForTest();
  ASSERT_EQ(t.model->num_devices(), 2);
  for (int d = 0; d < 2; ++d) {
    const std::string name = d == 0 ? "cpu" : "gpu";
    std::array<int, gbdt::kNumFamilies> counts{};
    for (const CalibrationSample& s : samples.samples) {
      if (s.device == name && !s.co_running)
        ++counts[static_cast<size_t>(gbdt::FamilyOf(s.config))];
    }
    const auto& device = t.model->device(d);
    ASSERT_NE(device.gbdt, nullptr) << name;
    // GBDT where a family has enough samples and beats the fit held out; the fit elsewhere.
    for (gbdt::OpFamily f : gbdt::kAllFamilies) {
      const bool use = device.use_gbdt[static_cast<size_t>(f)];
      if (counts[static_cast<size_t>(f)] < 20) {
        EXPECT_FALSE(use) << name << " " << gbdt::FamilyName(f);
      }
      for (const FamilyComparison& r : t.families) {
        if (r.device != name || r.family != gbdt::FamilyName(f)) continue;
        EXPECT_EQ(r.used, use ? "gbdt" : "analytic");
        if (counts[static_cast<size_t>(f)] >= 20) {
          EXPECT_EQ(use, r.gbdt.mape <= r.analytic.mape) << name << " " << r.family;
        }
      }
    }
    // Every prediction comes from the part the choice names, times the contention factor.
    for (const CalibrationSample& s : samples.samples) {
      if (s.device != name) continue;
      const bool use = device.use_gbdt[static_cast<size_t>(gbdt::FamilyOf(s.config))];
      const double part =
          use ? device.gbdt->PredictUs(s.config, 0) : t.model->analytic().PredictUs(s.config, d);
      EXPECT_DOUBLE_EQ(t.model->PredictUs(s.config, d), part * device.contention) << s.source;
    }
  }
  // The report compares both on the same held-out folds and says which one is used.
  int conv_rows = 0;
  for (const FamilyComparison& r : t.families) {
    EXPECT_GT(r.samples, 0);
    EXPECT_GT(r.gbdt.mape, 0) << r.device << " " << r.family;
    EXPECT_GT(r.analytic.mape, 0) << r.device << " " << r.family;
    conv_rows += r.family == "conv";
  }
  EXPECT_EQ(conv_rows, 2);
  EXPECT_THAT(FormatHostTraining(t), HasSubstr("co-run slowdown"));
}

TEST_F(HostTrainingTest, ContentionIsTheMedianCoRunSlowdown) {
  const CalibrationSamples samples = HostSamplesForTest();
  ASSERT_EQ(training_->contention.size(), 2u);
  for (const ContentionStats& c : training_->contention) {
    std::vector<double> ratios;
    for (const CalibrationSample& co : samples.samples) {
      if (!co.co_running || co.device != c.device) continue;
      for (const CalibrationSample& alone : samples.samples) {
        if (!alone.co_running && alone.device == c.device && alone.source == co.source) {
          ratios.push_back(co.measured_us / alone.measured_us);
        }
      }
    }
    ASSERT_GE(ratios.size(), 3u) << c.device;
    std::sort(ratios.begin(), ratios.end());
    EXPECT_EQ(c.pairs, static_cast<int>(ratios.size()));
    EXPECT_DOUBLE_EQ(c.min, ratios.front());
    EXPECT_DOUBLE_EQ(c.max, ratios.back());
    EXPECT_GE(c.median, c.min);
    EXPECT_LE(c.median, c.max);
    EXPECT_DOUBLE_EQ(c.factor, c.median);
  }
}

TEST_F(HostTrainingTest, StoredFormLoadsBackToTheSameModel) {
  const json stored = json::parse(training_->params.dump());
  absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(stored);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->device_names, (std::vector<std::string>{"cpu", "gpu"}));
  EXPECT_EQ(loaded->model->Version(), training_->model->Version());
  EXPECT_EQ(stored["model_version"], training_->model->Version());
  const CalibrationSamples samples = HostSamplesForTest();
  std::vector<predictor::OpConfig> configs;
  for (const CalibrationSample& s : samples.samples) {
    const int d = s.device == "cpu" ? 0 : 1;
    EXPECT_DOUBLE_EQ(loaded->model->PredictUs(s.config, d),
                     training_->model->PredictUs(s.config, d))
        << s.source;
    if (d == 0) configs.push_back(s.config);
  }
  // A batch (mixed families here) predicts what single calls do.
  std::vector<double> batch(configs.size());
  loaded->model->PredictBatch(configs, 0, batch);
  for (size_t i = 0; i < configs.size(); ++i) {
    EXPECT_DOUBLE_EQ(batch[i], loaded->model->PredictUs(configs[i], 0));
  }
}

TEST_F(HostTrainingTest, VersionChangesWithEveryPartOfTheModel) {
  const std::string base = training_->model->Version();
  auto version_of = [](const json& params) {
    absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(params);
    EXPECT_TRUE(loaded.ok()) << loaded.status();
    return loaded.ok() ? loaded->model->Version() : std::string();
  };
  // A retrained file (one leaf differs).
  json leaf = training_->params;
  std::string file = StoredDevice(leaf, "cpu")["gbdt"]["file"];
  const size_t at = file.find("\nl ");
  ASSERT_NE(at, std::string::npos);
  file.insert(at + 3, "1");
  StoredDevice(leaf, "cpu")["gbdt"] = {{"file", file}, {"sha256", gbdt::ModelFileHash(file)}};
  json contention = training_->params;
  StoredDevice(contention, "gpu")["contention"] =
      1.5 * StoredDevice(contention, "gpu")["contention"].get<double>();
  json choice = training_->params;
  json& conv = StoredDevice(choice, "cpu")["families"]["conv"];
  conv = conv == "gbdt" ? "analytic" : "gbdt";
  std::set<std::string> versions = {base};
  for (const json* changed : {&leaf, &contention, &choice}) {
    EXPECT_TRUE(versions.insert(version_of(*changed)).second) << "version did not change";
  }
}

// Run costs scale a device's predictions by its in-run factor and give the model sync costs;
// they survive the stored form, change the version, and a stored form without them is unchanged.
TEST_F(HostTrainingTest, RunCostsScalePredictionsAddSyncAndChangeTheVersion) {
  HostTraining with = *training_;
  RunCosts costs;
  costs.in_run = {{.device = "cpu", .measured_us = 1200, .predicted_us = 1000, .factor = 1.2}};
  costs.sync = {{.from = "cpu", .to = "gpu", .us = 25}};
  ASSERT_TRUE(ApplyRunCosts(costs, with).ok());
  const CalibrationSamples samples = HostSamplesForTest();
  const predictor::OpConfig& config = samples.samples.front().config;
  EXPECT_DOUBLE_EQ(with.model->PredictUs(config, 0), 1.2 * training_->model->PredictUs(config, 0));
  EXPECT_DOUBLE_EQ(with.model->PredictUs(config, 1), training_->model->PredictUs(config, 1));
  EXPECT_EQ(with.model->SyncUs(0, 1), 25);
  EXPECT_EQ(with.model->SyncUs(1, 0), 0);
  EXPECT_EQ(training_->model->SyncUs(0, 1), 0);
  EXPECT_NE(with.model->Version(), training_->model->Version());
  EXPECT_EQ(with.params["model_version"], with.model->Version());
  EXPECT_EQ(StoredDevice(with.params, "cpu")["in_run"], 1.2);
  EXPECT_EQ(StoredDevice(with.params, "cpu")["sync_us"]["gpu"], 25);
  absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(json::parse(with.params.dump()));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->Version(), with.model->Version());
  EXPECT_EQ(loaded->model->SyncUs(0, 1), 25);
  EXPECT_THAT(FormatHostTraining(with), HasSubstr("sync cpu -> gpu 25.0 us per edge"));
  EXPECT_EQ(HostTrainingReportToJson(with)["run_costs"]["in_run"][0]["factor"], 1.2);
  // A run's overhead outside its subtasks: the model's, stored, and part of its version.
  EXPECT_EQ(with.model->RunOverheadUs(), 0);
  HostTraining overhead = with;
  costs.run_overhead_us = 140;
  ASSERT_TRUE(ApplyRunCosts(costs, overhead).ok());
  EXPECT_EQ(overhead.model->RunOverheadUs(), 140);
  EXPECT_EQ(overhead.params["run_overhead_us"], 140);
  EXPECT_NE(overhead.model->Version(), with.model->Version());
  EXPECT_DOUBLE_EQ(overhead.model->PredictUs(config, 0), with.model->PredictUs(config, 0));
  absl::StatusOr<LoadedHostModel> reloaded = HostModelFromJson(json::parse(overhead.params.dump()));
  ASSERT_TRUE(reloaded.ok()) << reloaded.status();
  EXPECT_EQ(reloaded->model->RunOverheadUs(), 140);
  EXPECT_EQ(reloaded->model->Version(), overhead.model->Version());
  // The devices' cold starts overlap at the start of a run: the largest joins the overhead.
  HostTraining cold = with;
  costs.in_run = {{.device = "cpu", .factor = 1.2, .cold_us = 60},
                  {.device = "gpu", .factor = 1.0, .cold_us = 25}};
  ASSERT_TRUE(ApplyRunCosts(costs, cold).ok());
  EXPECT_EQ(cold.model->RunOverheadUs(), 140 + 60);
  EXPECT_DOUBLE_EQ(cold.model->PredictUs(config, 0), with.model->PredictUs(config, 0));
  EXPECT_THAT(FormatHostTraining(cold), HasSubstr("cold start 60 us"));
  // Factors of 1 and no sync: the version of a calibration stored before run costs existed.
  HostTraining neutral = *training_;
  RunCosts none;
  none.in_run = {{.device = "gpu", .factor = 1.0}};
  none.sync = {{.from = "gpu", .to = "cpu", .us = 0}};
  ASSERT_TRUE(ApplyRunCosts(none, neutral).ok());
  EXPECT_EQ(neutral.model->Version(), training_->model->Version());
}

// Hand-offs by wait and co-run factors predict a fixed plan's run: the model answers them
// (HandOffUs, CoRunFactor), PredictUs and SyncUs - what planners use - stay as they were, and
// they survive the stored form and change the version.
TEST_F(HostTrainingTest, HandOffsByWaitAndCoRunFactorsAreTheModelsAndStored) {
  HostTraining with = *training_;
  RunCosts costs;
  costs.in_run = {{.device = "cpu", .factor = 1.2, .co_run_factor = 1.07}};
  costs.sync = {{.from = "cpu",
                 .to = "gpu",
                 .us = 25,
                 .window_us = 100,
                 .spinning_us = 2.5,
                 .parked_us = 55,
                 .spinning_waits = 40,
                 .parked_waits = 9}};
  ASSERT_TRUE(ApplyRunCosts(costs, with).ok());
  HostTraining without = *training_;
  costs.in_run[0].co_run_factor = 1;
  costs.sync[0].window_us = 0;
  ASSERT_TRUE(ApplyRunCosts(costs, without).ok());
  const CalibrationSamples samples = HostSamplesForTest();
  const predictor::OpConfig& config = samples.samples.front().config;
  EXPECT_DOUBLE_EQ(with.model->PredictUs(config, 0), without.model->PredictUs(config, 0));
  EXPECT_EQ(with.model->SyncUs(0, 1), 25);
  EXPECT_EQ(with.model->HandOffUs(0, 1, 99), 2.5);
  EXPECT_EQ(with.model->HandOffUs(0, 1, 100), 55);
  // Without hand-offs, and in the direction none was measured: the sync cost whatever the wait.
  EXPECT_EQ(without.model->HandOffUs(0, 1, 5), 25);
  EXPECT_EQ(with.model->HandOffUs(1, 0, 5), 0);
  EXPECT_EQ(with.model->CoRunFactor(0), 1.07);
  EXPECT_EQ(with.model->CoRunFactor(1), 1);
  EXPECT_EQ(without.model->CoRunFactor(0), 1);
  EXPECT_NE(with.model->Version(), without.model->Version());
  absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(json::parse(with.params.dump()));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->Version(), with.model->Version());
  EXPECT_EQ(loaded->model->HandOffUs(0, 1, 150), 55);
  EXPECT_EQ(loaded->model->CoRunFactor(0), 1.07);
  EXPECT_THAT(FormatHostTraining(with),
              HasSubstr("hand-off after a wait under 100 us 2.5 us (40 waits), after a longer one "
                        "55.0 us (9)"));
  EXPECT_THAT(FormatHostTraining(with), HasSubstr("beside other devices x1.070"));
  // Damaged: named with the device and the field.
  json negative = with.params;
  StoredDevice(negative, "cpu")["hand_off"]["gpu"]["parked_us"] = -4;
  EXPECT_THAT(std::string(HostModelFromJson(negative).status().message()),
              HasSubstr("device 'cpu' has a hand-off cost or window of -4 us"));
  json missing = with.params;
  StoredDevice(missing, "cpu")["hand_off"]["gpu"].erase("window_us");
  EXPECT_THAT(std::string(HostModelFromJson(missing).status().message()),
              HasSubstr("'hand_off' to 'gpu' needs the number 'window_us'"));
  json unknown = with.params;
  StoredDevice(unknown, "cpu")["hand_off"]["npu"] = StoredDevice(unknown, "cpu")["hand_off"]["gpu"];
  EXPECT_THAT(std::string(HostModelFromJson(unknown).status().message()),
              HasSubstr("'hand_off' names 'npu', not another device"));
  json zero = with.params;
  StoredDevice(zero, "cpu")["co_run"] = 0;
  EXPECT_THAT(std::string(HostModelFromJson(zero).status().message()),
              HasSubstr("co-run factor 0"));
}

TEST_F(HostTrainingTest, BadRunCostsAreRefusedNamingTheDevice) {
  HostTraining copy = *training_;
  RunCosts unknown;
  unknown.in_run = {{.device = "npu", .factor = 1.1}};
  EXPECT_THAT(std::string(ApplyRunCosts(unknown, copy).message()), HasSubstr("device 'npu'"));
  RunCosts zero;
  zero.in_run = {{.device = "cpu", .factor = 0}};
  EXPECT_THAT(std::string(ApplyRunCosts(zero, copy).message()), HasSubstr("in-run factor 0"));
  json negative = training_->params;
  StoredDevice(negative, "cpu")["sync_us"] = {{"gpu", -3}};
  EXPECT_THAT(std::string(HostModelFromJson(negative).status().message()),
              HasSubstr("sync cost -3"));
  json self = training_->params;
  StoredDevice(self, "cpu")["sync_us"] = {{"cpu", 3}};
  EXPECT_THAT(std::string(HostModelFromJson(self).status().message()),
              HasSubstr("'sync_us' names 'cpu', not another device"));
  json text = training_->params;
  StoredDevice(text, "gpu")["in_run"] = "fast";
  EXPECT_THAT(std::string(HostModelFromJson(text).status().message()),
              HasSubstr("'in_run' is not a number"));
  for (const json& bad : {json(-5), json("slow"), json(nullptr)}) {
    json overhead = training_->params;
    overhead["run_overhead_us"] = bad;
    EXPECT_THAT(
        std::string(HostModelFromJson(overhead).status().message()),
        HasSubstr("'run_overhead_us' must be a number of microseconds >= 0, not " + bad.dump()));
  }
}

TEST(RunCostsJson, RoundTripsAndRefusesMalformedFields) {
  RunCosts costs;
  costs.probes = 4;
  costs.runs = 5;
  costs.run_overhead_us = 90;
  costs.in_run = {
      {.device = "cpu.0", .measured_us = 11, .predicted_us = 10, .factor = 1.1, .cold_us = 7.5}};
  costs.sync = {{.from = "cpu.0", .to = "cpu.1", .us = 21.5}};
  absl::StatusOr<RunCosts> back = RunCostsFromJson(json::parse(RunCostsToJson(costs).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->probes, 4);
  EXPECT_EQ(back->in_run[0].factor, 1.1);
  EXPECT_EQ(back->in_run[0].cold_us, 7.5);
  EXPECT_EQ(back->PerRunUs(), 90 + 7.5);
  // The quiet-round selection's figures.
  costs.rounds = 15;
  costs.slowest_kept_round = 1.02;
  costs.slowest_dropped_round = 1.3;
  back = RunCostsFromJson(json::parse(RunCostsToJson(costs).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->rounds, 15);
  EXPECT_EQ(back->slowest_kept_round, 1.02);
  EXPECT_EQ(back->slowest_dropped_round, 1.3);
  EXPECT_THAT(FormatRunCosts(*back),
              HasSubstr("15 timed runs each, fitted to the 5 quietest (slowest kept 1.020x the "
                        "probes' medians, slowest dropped 1.300x)"));
  // Files written before cold starts existed load with none.
  json old_file = RunCostsToJson(costs);
  old_file["in_run"][0].erase("cold_us");
  absl::StatusOr<RunCosts> old_back = RunCostsFromJson(old_file);
  ASSERT_TRUE(old_back.ok()) << old_back.status();
  EXPECT_EQ(old_back->in_run[0].cold_us, 0);
  EXPECT_EQ(back->sync[0].to, "cpu.1");
  EXPECT_EQ(back->sync[0].us, 21.5);
  auto error = [](const json& j) { return std::string(RunCostsFromJson(j).status().message()); };
  EXPECT_THAT(error(json::array()), HasSubstr("'run_costs' is not an object"));
  EXPECT_THAT(error({{"in_run", json::array()}}), HasSubstr("'sync' is missing"));
  json bad = RunCostsToJson(costs);
  bad["in_run"][0]["factor"] = -1;
  EXPECT_THAT(error(bad), HasSubstr("'in_run[0].factor' is -1"));
  for (const json& cold : {json(-2), json("warm"), json(nullptr)}) {
    bad = RunCostsToJson(costs);
    bad["in_run"][0]["cold_us"] = cold;
    EXPECT_THAT(error(bad), HasSubstr("'in_run[0].cold_us' is"));
  }
  // The report's figures: optional, but numbers >= 0 (and whole counts) when present.
  for (const auto& [field, value, message] :
       {std::tuple{"runs", json("x"), "'runs' is missing or not a number"},
        std::tuple{"rounds", json(2.5), "'rounds' is 2.5, need a count"},
        std::tuple{"probes", json(1e300), "'probes' is 1e+300, need a count"},
        std::tuple{"slowest_dropped_round", json(-1), "'slowest_dropped_round' is -1"},
        std::tuple{"run_overhead_us", json(nullptr), "'run_overhead_us' is missing or not"}}) {
    bad = RunCostsToJson(costs);
    bad[field] = value;
    EXPECT_THAT(error(bad), HasSubstr(message)) << field;
  }
  bad = RunCostsToJson(costs);
  bad["in_run"][0]["measured_us"] = "fast";
  EXPECT_THAT(error(bad), HasSubstr("'in_run[0].measured_us' is missing or not a number"));
  bad = RunCostsToJson(costs);
  bad["sync"][0]["to"] = "cpu.0";
  EXPECT_THAT(error(bad), HasSubstr("'sync[0].to' names the same device"));
  bad = RunCostsToJson(costs);
  bad["sync"][0].erase("us");
  EXPECT_THAT(error(bad), HasSubstr("'sync[0].us' is missing"));
  // Hand-offs and co-run factors: round trip, absent in older files, refused when malformed.
  costs.in_run[0].co_run_factor = 1.05;
  costs.sync[0].window_us = 100;
  costs.sync[0].spinning_us = 0.2;
  costs.sync[0].parked_us = 48;
  costs.sync[0].parked_waits = 12;
  back = RunCostsFromJson(json::parse(RunCostsToJson(costs).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->in_run[0].co_run_factor, 1.05);
  EXPECT_EQ(back->sync[0].window_us, 100);
  EXPECT_EQ(back->sync[0].spinning_us, 0.2);
  EXPECT_EQ(back->sync[0].parked_us, 48);
  EXPECT_EQ(back->sync[0].parked_waits, 12);
  EXPECT_EQ(old_back->in_run[0].co_run_factor, 1);
  EXPECT_EQ(old_back->sync[0].window_us, 0);
  bad = RunCostsToJson(costs);
  bad["sync"][0]["parked_us"] = "slow";
  EXPECT_THAT(error(bad), HasSubstr("'sync[0].parked_us' is missing or not a number"));
  bad = RunCostsToJson(costs);
  bad["sync"][0]["parked_waits"] = 1.5;
  EXPECT_THAT(error(bad), HasSubstr("'sync[0].parked_waits' is 1.5, need a count"));
  bad = RunCostsToJson(costs);
  bad["in_run"][0]["co_run_factor"] = 0;
  EXPECT_THAT(error(bad), HasSubstr("'in_run[0].co_run_factor' is 0"));
  // Partial-sum costs: round trip, absent in older files, refused when malformed.
  costs.in_run[0].partial_sum_ns = 2.25;
  costs.in_run[0].combines = 31;
  back = RunCostsFromJson(json::parse(RunCostsToJson(costs).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->in_run[0].partial_sum_ns, 2.25);
  EXPECT_EQ(back->in_run[0].combines, 31);
  EXPECT_EQ(old_back->in_run[0].partial_sum_ns, 0);
  for (const json& ns : {json(-1), json("fast")}) {
    bad = RunCostsToJson(costs);
    bad["in_run"][0]["partial_sum_ns"] = ns;
    EXPECT_THAT(error(bad), HasSubstr("'in_run[0].partial_sum_ns' is"));
  }
  // Gaps between subtasks: round trip, absent in older files, refused when malformed.
  costs.in_run[0].gap_us = 8.5;
  costs.in_run[0].gaps = 240;
  costs.in_run[0].synced_gap_us = 21.25;
  costs.in_run[0].synced_gaps = 60;
  back = RunCostsFromJson(json::parse(RunCostsToJson(costs).dump()));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->in_run[0].gap_us, 8.5);
  EXPECT_EQ(back->in_run[0].gaps, 240);
  EXPECT_EQ(back->in_run[0].synced_gap_us, 21.25);
  EXPECT_EQ(back->in_run[0].synced_gaps, 60);
  EXPECT_THAT(FormatRunCosts(*back),
              HasSubstr("8.5 us between subtasks (240), 21.2 with a sync kernel between (60)"));
  EXPECT_EQ(old_back->in_run[0].gap_us, 0);
  for (const auto& [field, value, message] :
       {std::tuple{"gap_us", json(-0.5), "'in_run[0].gap_us' is -0.5"},
        std::tuple{"gap_us", json("slow"), "'in_run[0].gap_us' is missing or not a number"},
        std::tuple{"gaps", json(2.5), "'in_run[0].gaps' is 2.5, need a count"},
        std::tuple{"synced_gap_us", json(-1), "'in_run[0].synced_gap_us' is -1"}}) {
    bad = RunCostsToJson(costs);
    bad["in_run"][0][field] = value;
    EXPECT_THAT(error(bad), HasSubstr(message)) << field;
  }
}

// The gap between subtasks predicts a fixed plan's run (SubtaskGapUs): PredictUs stays as it was,
// and the gap survives the stored form and changes the version.
TEST_F(HostTrainingTest, GapsBetweenSubtasksAreTheModelsAndStored) {
  RunCosts costs;
  costs.in_run = {{.device = "gpu",
                   .factor = 1.0,
                   .gap_us = 8.5,
                   .gaps = 240,
                   .synced_gap_us = 21.5,
                   .synced_gaps = 60}};
  const HostTraining with = Applied(costs);
  costs.in_run[0].gap_us = 0;
  costs.in_run[0].synced_gap_us = 0;
  absl::StatusOr<LoadedHostModel> loaded = ExpectRunOnlyAndStored(with, Applied(costs), 1);
  EXPECT_EQ(with.model->SubtaskGapUs(1, false), 8.5);
  EXPECT_EQ(with.model->SubtaskGapUs(1, true), 21.5);
  EXPECT_EQ(with.model->SubtaskGapUs(0, true), 0);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->SubtaskGapUs(1, false), 8.5);
  EXPECT_EQ(loaded->model->SubtaskGapUs(1, true), 21.5);
  json negative = with.params;
  StoredDevice(negative, "gpu")["gap_us"] = -3;
  EXPECT_THAT(std::string(HostModelFromJson(negative).status().message()),
              HasSubstr("device 'gpu' has a gap between subtasks of -3 us"));
  json text = with.params;
  StoredDevice(text, "gpu")["gap_us"] = "slow";
  EXPECT_THAT(std::string(HostModelFromJson(text).status().message()),
              HasSubstr("'gap_us' is not a number"));
}

// The partial-sum cost predicts a fixed plan's cin combines (PartialSumNs): PredictUs stays as it
// was, and the cost survives the stored form and changes the version.
TEST_F(HostTrainingTest, PartialSumCostsAreTheModelsAndStored) {
  RunCosts costs;
  costs.in_run = {{.device = "gpu", .factor = 1.0, .partial_sum_ns = 1.75, .combines = 12}};
  const HostTraining with = Applied(costs);
  costs.in_run[0].partial_sum_ns = 0;
  const HostTraining without = Applied(costs);
  absl::StatusOr<LoadedHostModel> loaded = ExpectRunOnlyAndStored(with, without, 1);
  EXPECT_EQ(with.model->PartialSumNs(1), 1.75);
  EXPECT_EQ(with.model->PartialSumNs(0), 0);
  EXPECT_EQ(without.model->PartialSumNs(1), 0);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->PartialSumNs(1), 1.75);
  json negative = with.params;
  StoredDevice(negative, "gpu")["partial_sum_ns"] = -3;
  EXPECT_THAT(std::string(HostModelFromJson(negative).status().message()),
              HasSubstr("device 'gpu' has partial-sum cost -3 ns per element"));
  json text = with.params;
  StoredDevice(text, "gpu")["partial_sum_ns"] = "slow";
  EXPECT_THAT(std::string(HostModelFromJson(text).status().message()),
              HasSubstr("'partial_sum_ns' is not a number"));
}

TEST_F(HostTrainingTest, DamagedStoredModelsAreRefusedNamingFileAndLine) {
  const std::string file = StoredDevice(training_->params, "cpu")["gbdt"]["file"];
  // Truncated, recorded hash kept: the hash check catches it.
  json damaged = training_->params;
  StoredDevice(damaged, "cpu")["gbdt"]["file"] = file.substr(0, file.size() / 2);
  absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(damaged);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.status().code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(loaded.status().message(), HasSubstr("calibration:cpu.gbdt"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("damaged"));

  // Truncated with a matching hash: the parser names the line where it ends.
  const std::string truncated = file.substr(0, file.size() / 2);
  StoredDevice(damaged, "cpu")["gbdt"] = {{"file", truncated},
                                          {"sha256", gbdt::ModelFileHash(truncated)}};
  loaded = HostModelFromJson(damaged);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("calibration:cpu.gbdt:"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("truncated"));

  // A number that is not one.
  std::string bad = file;
  const size_t leaf = bad.find("\nl ");
  bad.replace(leaf + 3, bad.find('\n', leaf + 1) - leaf - 3, "sixty");
  StoredDevice(damaged, "cpu")["gbdt"] = {{"file", bad}, {"sha256", gbdt::ModelFileHash(bad)}};
  loaded = HostModelFromJson(damaged);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("calibration:cpu.gbdt:"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("sixty"));

  // Non-numeric contention, an unknown family.
  json contention = training_->params;
  StoredDevice(contention, "gpu")["contention"] = "fast";
  EXPECT_THAT(HostModelFromJson(contention).status().message(), HasSubstr("'contention'"));
  json family = training_->params;
  StoredDevice(family, "gpu")["families"]["lstm"] = "gbdt";
  EXPECT_THAT(HostModelFromJson(family).status().message(), HasSubstr("unknown op family 'lstm'"));
}

// With anchors every configuration calibration timed alone is predicted at its median time
// (plus the device's per-subtask sync cost, times its factors); the anchors survive the stored
// form, are part of the version, and a damaged one is refused naming the device and entry.
TEST(HostTrainingAnchorsTest, TimedConfigurationsArePredictedFromTheirTimes) {
  HostTrainingOptions options = Options();
  options.anchors = true;
  absl::StatusOr<HostTraining> t = TrainHostModel("host", HostSamplesForTest(), options);
  ASSERT_TRUE(t.ok()) << t.status();
  const CalibrationSamples samples = HostSamplesForTest();
  std::map<std::pair<int, std::string>, std::vector<double>> times;
  for (const CalibrationSample& s : samples.samples) {
    if (s.co_running) continue;
    times[{s.device == "cpu" ? 0 : 1, predictor::host_model::OpConfigToJson(s.config).dump()}]
        .push_back(s.measured_us);
  }
  int checked = 0;
  std::array<size_t, 2> distinct{};
  for (auto& [key, us] : times) {
    const auto [d, config_json] = key;
    ++distinct[static_cast<size_t>(d)];
    std::sort(us.begin(), us.end());
    const double median =
        us.size() % 2 == 1 ? us[us.size() / 2] : 0.5 * (us[us.size() / 2 - 1] + us[us.size() / 2]);
    const predictor::OpConfig config =
        *predictor::host_model::OpConfigFromJson(json::parse(config_json));
    const double expected =
        (median + t->model->analytic().device(d).dispatch_us) * t->model->device(d).contention;
    EXPECT_NEAR(t->model->PredictUs(config, d), expected, 1e-9 * expected) << config_json;
    ++checked;
  }
  EXPECT_GT(checked, 100);
  EXPECT_GT(t->model->analytic().device(1).dispatch_us, 0);
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(t->model->anchors(d).size(), distinct[static_cast<size_t>(d)]);
  }

  const json stored = json::parse(t->params.dump());
  absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(stored);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->model->Version(), t->model->Version());
  for (const CalibrationSample& s : samples.samples) {
    const int d = s.device == "cpu" ? 0 : 1;
    EXPECT_DOUBLE_EQ(loaded->model->PredictUs(s.config, d), t->model->PredictUs(s.config, d));
  }
  // A batch predicts what single calls do, anchored or not: a conv no sample has (input
  // channels no op has) comes from the trained part, here mixed with timed configurations.
  predictor::OpConfig unseen;
  for (const CalibrationSample& s : samples.samples) {
    if (s.device == "cpu" && s.config.kind == model::OpKind::kConv2d) unseen = s.config;
  }
  ASSERT_EQ(unseen.kind, model::OpKind::kConv2d);
  unseen.inputs[0].c = 997;
  predictor::ComputeCost(unseen);
  const auto& cpu = t->model->device(0);
  const double trained = cpu.use_gbdt[static_cast<size_t>(gbdt::OpFamily::kConv)]
                             ? cpu.gbdt->PredictUs(unseen, 0)
                             : t->model->analytic().PredictUs(unseen, 0);
  EXPECT_DOUBLE_EQ(t->model->PredictUs(unseen, 0), trained * cpu.contention);
  std::vector<predictor::OpConfig> configs = {unseen};
  for (const CalibrationSample& s : samples.samples) {
    if (s.device == "cpu") configs.push_back(s.config);
  }
  for (const std::span<const predictor::OpConfig> batch :
       {std::span<const predictor::OpConfig>(configs),
        std::span<const predictor::OpConfig>(configs).subspan(1),
        std::span<const predictor::OpConfig>(configs).first(1)}) {
    std::vector<double> out(batch.size());
    t->model->PredictBatch(batch, 0, out);
    for (size_t i = 0; i < batch.size(); ++i) {
      EXPECT_DOUBLE_EQ(out[i], t->model->PredictUs(batch[i], 0)) << i;
    }
  }

  // Without its anchors the stored form is the model trained without them, version and all.
  absl::StatusOr<HostTraining> plain = TrainHostModel("host", HostSamplesForTest(), Options());
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_NE(plain->model->Version(), t->model->Version());
  json stripped = stored;
  for (json& device : stripped["devices"]) device.erase("anchors");
  absl::StatusOr<LoadedHostModel> without = HostModelFromJson(stripped);
  ASSERT_TRUE(without.ok()) << without.status();
  EXPECT_EQ(without->model->Version(), plain->model->Version());

  json damaged = stored;
  StoredDevice(damaged, "gpu")["anchors"][3]["us"] = "slow";
  EXPECT_THAT(HostModelFromJson(damaged).status().message(),
              HasSubstr("host calibration device 1 ('gpu'): anchor 3: 'us' must be a time > 0"));
  StoredDevice(damaged, "gpu")["anchors"] = "all of them";
  EXPECT_THAT(HostModelFromJson(damaged).status().message(),
              HasSubstr("host calibration device 1 ('gpu'): 'anchors' must be an array"));
}

TEST_F(HostTrainingTest, ModelsTrainedForAnotherDeviceAreRefused) {
  json swapped = training_->params;
  const json cpu_model = StoredDevice(swapped, "cpu")["gbdt"];
  StoredDevice(swapped, "cpu")["gbdt"] = StoredDevice(swapped, "gpu")["gbdt"];
  StoredDevice(swapped, "gpu")["gbdt"] = cpu_model;
  absl::StatusOr<LoadedHostModel> loaded = HostModelFromJson(swapped);
  ASSERT_FALSE(loaded.ok());
  EXPECT_THAT(loaded.status().message(), HasSubstr("calibration:cpu.gbdt:"));
  EXPECT_THAT(loaded.status().message(), HasSubstr("host/gpu"));
}

TEST(HostTrainingInputTest, SamplesOfAnotherDeviceAreRefused) {
  CalibrationSamples samples = HostSamplesForTest();
  ASSERT_GT(samples.samples.size(), 10u);
  samples.samples[7].device = "npu";
  absl::StatusOr<HostTraining> trained = TrainHostModel("host", samples, Options());
  ASSERT_FALSE(trained.ok());
  EXPECT_THAT(trained.status().message(), HasSubstr("calibration sample 7"));
  EXPECT_THAT(trained.status().message(), HasSubstr("'npu'"));
  HostTrainingOptions one_fold = Options();
  one_fold.folds = 1;
  EXPECT_FALSE(TrainHostModel("host", HostSamplesForTest(), one_fold).ok());
}

TEST(HostTrainingInputTest, TooFewSamplesKeepTheAnalyticFitEverywhere) {
  CalibrationSamples samples = HostSamplesForTest();
  samples.samples.resize(10);
  absl::StatusOr<HostTraining> trained = TrainHostModel("host", samples, Options());
  ASSERT_TRUE(trained.ok()) << trained.status();
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(trained->model->device(d).gbdt, nullptr);
    for (const CalibrationSample& s : samples.samples) {
      const double analytic = trained->model->analytic().PredictUs(s.config, d);
      EXPECT_DOUBLE_EQ(trained->model->PredictUs(s.config, d),
                       analytic * trained->model->device(d).contention);
    }
  }
}

TEST_F(HostTrainingTest, AnalyticOnlyParametersStillLoad) {
  absl::StatusOr<LoadedHostModel> legacy = HostModelFromJson(training_->params["analytic"]);
  ASSERT_TRUE(legacy.ok()) << legacy.status();
  EXPECT_EQ(legacy->model->Version(), training_->model->analytic().Version());
  EXPECT_EQ(legacy->device_names, (std::vector<std::string>{"cpu", "gpu"}));
}

}  // namespace
}  // namespace psched::calibration
