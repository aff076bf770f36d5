#include "executor/opencl/opencl_device.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

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

// A fresh device (no programs in memory) on the test device's selector.
std::unique_ptr<OpenClDevice> FreshDevice() {
  const char* env = std::getenv("PSCHED_OPENCL_DEVICE");
  absl::StatusOr<std::unique_ptr<OpenClDevice>> device =
      OpenClDevice::Open(*DeviceSelector::Parse(env != nullptr ? env : "0"));
  return device.ok() ? *std::move(device) : nullptr;
}

// Fills x[i] = i * 2 with the program's kernel `twice`; the values read back.
std::vector<float> RunTwice(OpenClDevice& device, cl_program program) {
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program, "twice", &err);
  EXPECT_EQ(err, CL_SUCCESS);
  std::vector<float> host(8, -1.0f);
  cl_mem buffer = clCreateBuffer(device.context(), CL_MEM_READ_WRITE, host.size() * sizeof(float),
                                 nullptr, &err);
  clSetKernelArg(kernel, 0, sizeof(buffer), &buffer);
  const size_t global = host.size();
  EXPECT_EQ(clEnqueueNDRangeKernel(device.queue(), kernel, 1, nullptr, &global, nullptr, 0,
                                   nullptr, nullptr),
            CL_SUCCESS);
  clEnqueueReadBuffer(device.queue(), buffer, CL_TRUE, 0, host.size() * sizeof(float),
                      host.data(), 0, nullptr, nullptr);
  clReleaseMemObject(buffer);
  clReleaseKernel(kernel);
  return host;
}

TEST(OpenClDeviceTest, CompiledProgramsAreCachedOnDiskAndReloaded) {
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
  GTEST_SKIP() << "ThreadSanitizer builds keep no program cache (OpenClDevice::SetProgramCacheDir)";
#endif
#endif
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("psched_clbin_" + std::to_string(getpid()));
  std::filesystem::remove_all(dir);
  const std::string source =
      "__kernel void twice(__global float* x) { int i = get_global_id(0); x[i] = 2.0f * i; }";
  const std::vector<float> expected = {0, 2, 4, 6, 8, 10, 12, 14};

  std::unique_ptr<OpenClDevice> first = FreshDevice();
  ASSERT_NE(first, nullptr);
  first->SetProgramCacheDir(dir.string());
  absl::StatusOr<cl_program> built = first->BuildProgram("twice", source, "");
  ASSERT_TRUE(built.ok()) << built.status();
  EXPECT_EQ(first->programs_from_cache(), 0);
  EXPECT_EQ(RunTwice(*first, *built), expected);
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path());
  ASSERT_EQ(files.size(), 1u) << "one binary, no partial file left";
  EXPECT_EQ(files[0].extension(), ".clbin");

  // The next process (a fresh device) loads the binary instead of compiling.
  std::unique_ptr<OpenClDevice> second = FreshDevice();
  second->SetProgramCacheDir(dir.string());
  absl::StatusOr<cl_program> loaded = second->BuildProgram("twice", source, "");
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(second->programs_from_cache(), 1);
  EXPECT_EQ(RunTwice(*second, *loaded), expected);

  // Other options are another binary; a damaged binary is rebuilt from source and replaced.
  std::unique_ptr<OpenClDevice> third = FreshDevice();
  third->SetProgramCacheDir(dir.string());
  ASSERT_TRUE(third->BuildProgram("twice fast", source, "-cl-mad-enable").ok());
  EXPECT_EQ(third->programs_from_cache(), 0);
  std::ofstream(files[0], std::ios::binary | std::ios::trunc) << "not a binary";
  std::unique_ptr<OpenClDevice> fourth = FreshDevice();
  fourth->SetProgramCacheDir(dir.string());
  absl::StatusOr<cl_program> rebuilt = fourth->BuildProgram("twice", source, "");
  ASSERT_TRUE(rebuilt.ok()) << rebuilt.status();
  EXPECT_EQ(fourth->programs_from_cache(), 0);
  EXPECT_EQ(RunTwice(*fourth, *rebuilt), expected);
  EXPECT_GT(std::filesystem::file_size(files[0]), 100u) << "replaced by a real binary";

  // A cache directory that cannot be created costs only the compile.
  std::unique_ptr<OpenClDevice> fifth = FreshDevice();
  fifth->SetProgramCacheDir((dir / "missing" / "deeper").string());
  ASSERT_TRUE(fifth->BuildProgram("twice", source, "").ok());
  EXPECT_FALSE(std::filesystem::exists(dir / "missing"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace psched::executor::opencl
