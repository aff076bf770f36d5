// Test helpers for executor/opencl: open the device the tests run on, or skip.
//
// Tests use PSCHED_OPENCL_DEVICE (a DeviceSelector string) when set, else any OpenCL device
// (PoCL's CPU device on development machines plays the GPU). With no OpenCL at all, tests skip
// with the reason instead of failing. POCL_MAX_PTHREAD_COUNT=1 is set so PoCL stays on one
// thread, like a GPU queue beside CPU workers.
#pragma once

#include <cstdlib>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "executor/opencl/opencl_device.h"

namespace psched::executor::opencl::testing {

// The shared device for a test binary (opened once; kernels compile once), or the reason
// there is none.
inline absl::StatusOr<OpenClDevice*> TestDevice() {
  static absl::StatusOr<std::unique_ptr<OpenClDevice>>* device = [] {
    setenv("POCL_MAX_PTHREAD_COUNT", "1", /*overwrite=*/0);
    const char* env = std::getenv("PSCHED_OPENCL_DEVICE");
    absl::StatusOr<DeviceSelector> selector = DeviceSelector::Parse(env != nullptr ? env : "0");
    if (!selector.ok()) {
      return new absl::StatusOr<std::unique_ptr<OpenClDevice>>(selector.status());
    }
    return new absl::StatusOr<std::unique_ptr<OpenClDevice>>(OpenClDevice::Open(*selector));
  }();
  if (!device->ok()) return device->status();
  return device->value().get();
}

}  // namespace psched::executor::opencl::testing

// Declares `OpenClDevice* device` or skips the test with the reason no device is available.
#define PSCHED_REQUIRE_OPENCL_DEVICE(device)                                       \
  absl::StatusOr<::psched::executor::opencl::OpenClDevice*> device##_or =          \
      ::psched::executor::opencl::testing::TestDevice();                           \
  if (!device##_or.ok()) GTEST_SKIP() << "no OpenCL device: " << device##_or.status(); \
  [[maybe_unused]] ::psched::executor::opencl::OpenClDevice* device = *device##_or
