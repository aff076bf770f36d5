// Behaviour without any OpenCL platform: the ICD loader is pointed at an empty vendor folder
// before the first OpenCL call, as on a machine with no driver installed. Its own binary, so no
// earlier test has initialised the loader.
#include <gtest/gtest.h>

#include <cstdlib>

#include "executor/opencl/opencl_device.h"
#include "executor/opencl/opencl_test_util.h"

namespace psched::executor::opencl {
namespace {

TEST(NoOpenClTest, DiscoveryReportsUnavailableAndTestsSkip) {
  setenv("OCL_ICD_VENDORS", "/nonexistent-psched-opencl-vendors", /*overwrite=*/1);
  absl::StatusOr<std::vector<DeviceInfo>> devices = ListDevices();
  ASSERT_EQ(devices.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(devices.status().message().find("no OpenCL platform"), std::string::npos);
  EXPECT_EQ(OpenClDevice::Open(DeviceSelector{}).status().code(),
            absl::StatusCode::kUnavailable);
  // What PSCHED_REQUIRE_OPENCL_DEVICE turns into a skip.
  EXPECT_FALSE(testing::TestDevice().ok());
}

}  // namespace
}  // namespace psched::executor::opencl
