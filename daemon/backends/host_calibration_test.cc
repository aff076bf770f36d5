// The daemon's host backend with stored calibrations: a trained GBDT calibration is loaded at
// start; a damaged one is refused with a clear log line and the previous model kept.
#include <filesystem>
#include <memory>
#include <sstream>
#include <string>

#include "cache/store.h"
#include "calibration/training/host_samples_for_test.h"
#include "calibration/training/host_training.h"
#include "daemon/backends/host_backend.h"
#include "daemon/engine/engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "predictor/host_model/calibration_samples.h"
#include "spdlog/sinks/ostream_sink.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class HostCalibrationTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        fs::temp_directory_path() / ("psched_host_calibration_test_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    config_.state_dir = dir_.string();
    config_.platform = "host";
    config_.devices = {DeviceConfig{"cpu", "cpu", {0}, ""}};
  }
  void TearDown() override { fs::remove_all(dir_); }

  // The host model trained on the fixture's samples of `cpu` (a real calibration's).
  nlohmann::json TrainedParams() {
    predictor::host_model::CalibrationSamples samples = calibration::HostSamplesForTest();
    std::erase_if(samples.samples, [](const auto& s) { return s.device != "cpu"; });
    calibration::HostTrainingOptions options;
    options.priors.resize(1);
    options.priors[0].name = "cpu";
    options.min_family_samples = 20;
    absl::StatusOr<calibration::HostTraining> trained =
        calibration::TrainHostModel("host", samples, options);
    EXPECT_TRUE(trained.ok()) << trained.status();
    return trained->params;
  }

  // Stores `params` as the calibration of this platform, then starts an engine on the state
  // dir; returns the predictor version it plans with and what it logged.
  std::pair<std::string, std::string> StartWith(const nlohmann::json& params) {
    absl::StatusOr<std::unique_ptr<Backend>> backend = MakeHostBackend(config_);
    EXPECT_TRUE(backend.ok()) << backend.status();
    {
      absl::StatusOr<std::unique_ptr<cache::Store>> store = cache::Store::Open(dir_.string());
      EXPECT_TRUE(store.ok()) << store.status();
      EXPECT_TRUE((*store)
                      ->PutCalibration({(*backend)->platform().calibration_key,
                                        params.value("model_version", ""), params.dump(), "{}", 0})
                      .ok());
    }
    std::ostringstream log;
    auto previous = spdlog::default_logger();
    spdlog::set_default_logger(std::make_shared<spdlog::logger>(
        "test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log)));
    std::string version;
    {
      absl::StatusOr<std::unique_ptr<cache::Store>> store = cache::Store::Open(dir_.string());
      EXPECT_TRUE(store.ok()) << store.status();
      Engine engine(config_, std::move(*store), std::move(*backend));
      version = engine.platform().predictor_version;
    }
    spdlog::set_default_logger(previous);
    return {version, log.str()};
  }

  fs::path dir_;
  // No background first-start calibration under the tests' plans.
  DaemonConfig config_ = [] {
    DaemonConfig config;
    config.auto_calibrate = false;
    return config;
  }();
};

TEST_F(HostCalibrationTest, StoredGbdtCalibrationIsLoadedAtStart) {
  const nlohmann::json params = TrainedParams();
  const auto [version, log] = StartWith(params);
  EXPECT_EQ(version, params["model_version"].get<std::string>());
  EXPECT_THAT(version, HasSubstr("calibrated-v1/"));
}

TEST_F(HostCalibrationTest, DamagedStoredModelKeepsThePreviousModelAndSaysWhy) {
  absl::StatusOr<std::unique_ptr<Backend>> fresh = MakeHostBackend(config_);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  const std::string uncalibrated = (*fresh)->platform().predictor_version;
  nlohmann::json params = TrainedParams();
  std::string file = params["devices"][0]["gbdt"]["file"];
  params["devices"][0]["gbdt"]["file"] = file.substr(0, file.size() / 3);
  const auto [version, log] = StartWith(params);
  EXPECT_EQ(version, uncalibrated);
  EXPECT_THAT(log, HasSubstr("stored calibration not used"));
  EXPECT_THAT(log, HasSubstr("calibration:cpu.gbdt"));
  EXPECT_THAT(log, HasSubstr("damaged"));
}

}  // namespace
}  // namespace psched::daemon
