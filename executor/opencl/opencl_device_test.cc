#include "executor/opencl/opencl_device.h"

#include <gtest/gtest.h>

#include "executor/opencl/opencl_test_util.h"

namespace psched::executor::opencl {
namespace {

TEST(DeviceSelectorTest, ParsesEveryForm) {
  absl::StatusOr<DeviceSelector> s = DeviceSelector::Parse("");
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(s->IsDefault());

  s = DeviceSelector::Parse("2");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->index, 2);
  EXPECT_TRUE(s->device.empty());

  s = DeviceSelector::Parse("pthread");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->device, "pthread");
  EXPECT_EQ(s->index, -1);

  s = DeviceSelector::Parse("Portable:pthread:1");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->platform, "Portable");
  EXPECT_EQ(s->device, "pthread");
  EXPECT_EQ(s->index, 1);
}

TEST(DeviceSelectorTest, RejectsMalformedText) {
  EXPECT_EQ(DeviceSelector::Parse("-1").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeviceSelector::Parse("a:b:x").status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(DeviceSelector::Parse("a:b:1:2").status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(OpenClDeviceTest, ListsAndOpensTheTestDevice) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  absl::StatusOr<std::vector<DeviceInfo>> all = ListDevices();
  ASSERT_TRUE(all.ok()) << all.status();
  ASSERT_FALSE(all->empty());
  EXPECT_FALSE(device->info().name.empty());
  EXPECT_GE(device->info().compute_units, 1u);
  EXPECT_NE(device->context(), nullptr);
  EXPECT_NE(device->queue(), nullptr);
  // The queue is created with profiling enabled (kernel timings for calibration).
  cl_command_queue_properties props = 0;
  ASSERT_EQ(clGetCommandQueueInfo(device->queue(), CL_QUEUE_PROPERTIES, sizeof(props), &props,
                                  nullptr),
            CL_SUCCESS);
  EXPECT_NE(props & CL_QUEUE_PROFILING_ENABLE, 0u);
}

TEST(OpenClDeviceTest, UnknownDeviceNameIsNotFoundAndListsDevices) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  DeviceSelector selector;
  selector.device = "no-such-device-xyz";
  absl::StatusOr<std::unique_ptr<OpenClDevice>> opened = OpenClDevice::Open(selector);
  ASSERT_EQ(opened.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(opened.status().message().find("no-such-device-xyz"), std::string::npos);
  EXPECT_NE(opened.status().message().find(device->info().name), std::string::npos);
}

TEST(OpenClDeviceTest, IndexPastTheEndIsNotFound) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  DeviceSelector selector;
  selector.index = 1000;
  EXPECT_EQ(OpenClDevice::Open(selector).status().code(), absl::StatusCode::kNotFound);
}

TEST(OpenClDeviceTest, DefaultSelectorOnlyAcceptsGpus) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  absl::StatusOr<std::unique_ptr<OpenClDevice>> gpu = OpenClDevice::Open(DeviceSelector{});
  if (gpu.ok()) {
    EXPECT_TRUE((*gpu)->info().is_gpu);
  } else {
    EXPECT_EQ(gpu.status().code(), absl::StatusCode::kNotFound);
    EXPECT_NE(gpu.status().message().find("GPU"), std::string::npos);
  }
}

TEST(OpenClDeviceTest, BuildErrorsCarryTheCompilerLog) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  absl::StatusOr<cl_program> program =
      device->BuildProgram("broken", "__kernel void k(__global float* x) { x[0] = y; }", "");
  ASSERT_FALSE(program.ok());
  EXPECT_NE(program.status().message().find("broken"), std::string::npos);
  EXPECT_NE(program.status().message().find("CL_BUILD_PROGRAM_FAILURE"), std::string::npos);
}

TEST(OpenClDeviceTest, ProgramsAreBuiltOncePerKey) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const std::string source = "__kernel void k(__global float* x) { x[0] = 1.0f; }";
  absl::StatusOr<cl_program> first = device->BuildProgram("once", source, "");
  ASSERT_TRUE(first.ok()) << first.status();
  absl::StatusOr<cl_program> second = device->BuildProgram("once", source, "");
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, *second);
}

}  // namespace
}  // namespace psched::executor::opencl
