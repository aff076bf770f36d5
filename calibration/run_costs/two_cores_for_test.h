// Test helper of calibration/run_costs: the host's two cores as two one-core CPU devices, as
// the run probes use them, with the host platform and its analytic model narrowed to them.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "executor/runtime/cpu_device.h"
#include "gtest/gtest.h"
#include "platform/platform.h"
#include "predictor/device_subset_model.h"
#include "predictor/profiles.h"

namespace psched::calibration {

struct TwoCores {
  platform::Platform platform;  // the host profile's cpu.0 and cpu.1
  std::shared_ptr<const predictor::LatencyModel> model;
  std::vector<std::unique_ptr<executor::runtime::CpuDevice>> owned;
  std::vector<executor::runtime::Device*> devices;  // owned's

  // Fails the running test (and leaves `devices` short) when a device cannot be made.
  void SetUp() {
    for (int core : {0, 1}) {
      auto d = executor::runtime::CpuDevice::Create("cpu." + std::to_string(core), {core});
      ASSERT_TRUE(d.ok()) << d.status();
      owned.push_back(std::move(*d));
      devices.push_back(owned.back().get());
    }
    predictor::Profile host = predictor::HostProfile(2);
    platform = host.platform;
    platform.devices.pop_back();  // the gpu
    auto subset = predictor::DeviceSubsetModel::Create(host.model, {0, 1});
    ASSERT_TRUE(subset.ok()) << subset.status();
    model = *std::move(subset);
  }
};

}  // namespace psched::calibration
