// Test helper of calibration/training: real samples of a psched-calibrate run on the
// development machine (a 2-core cluster `cpu` and PoCL as `gpu`), a few models' worth, with
// their co-run samples (testdata/host_samples.json).
#pragma once

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"
#include "predictor/host_model/calibration_samples.h"
#include "source_dir.h"

namespace psched::calibration {

inline predictor::host_model::CalibrationSamples HostSamplesForTest() {
  std::ifstream in(std::string(PSCHED_SOURCE_DIR) +
                   "/calibration/training/testdata/host_samples.json");
  EXPECT_TRUE(in.good());
  absl::StatusOr<predictor::host_model::CalibrationSamples> samples =
      predictor::host_model::SamplesFromJson(nlohmann::json::parse(in));
  EXPECT_TRUE(samples.ok()) << samples.status();
  return samples.ok() ? *samples : predictor::host_model::CalibrationSamples{};
}

}  // namespace psched::calibration
