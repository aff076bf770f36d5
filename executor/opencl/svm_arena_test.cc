#include "executor/opencl/svm_arena.h"

#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "executor/opencl/opencl_test_util.h"

namespace psched::executor::opencl {
namespace {

constexpr const char* kScaleSource = R"(
__kernel void scale(__global float* data, int offset, float factor) {
  data[offset + get_global_id(0)] *= factor;
})";

class SvmArenaModeTest : public ::testing::TestWithParam<MemoryMode> {};

// The host writes, a kernel updates in place at an offset, the host reads: no copies, and the
// same kernel binary serves every memory mode.
TEST_P(SvmArenaModeTest, HostAndKernelShareTheArena) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  const MemoryMode mode = GetParam();
  absl::StatusOr<std::unique_ptr<SvmArena>> arena = SvmArena::Create(device, 64, mode);
  if (arena.status().code() == absl::StatusCode::kFailedPrecondition) {
    GTEST_SKIP() << arena.status();
  }
  ASSERT_TRUE(arena.ok()) << arena.status();
  EXPECT_EQ((*arena)->mode(), mode);
  EXPECT_EQ((*arena)->host_coherent(), mode == MemoryMode::kFineGrainSvm);

  absl::StatusOr<float*> host = (*arena)->BeginHostAccess();
  ASSERT_TRUE(host.ok()) << host.status();
  std::iota(*host, *host + 64, 0.0f);
  ASSERT_TRUE((*arena)->EndHostAccess().ok());

  absl::StatusOr<cl_program> program = device->BuildProgram("svm_arena_test", kScaleSource, "");
  ASSERT_TRUE(program.ok()) << program.status();
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(*program, "scale", &err);
  ASSERT_EQ(err, CL_SUCCESS);
  ASSERT_TRUE((*arena)->BindAsKernelArg(kernel, 0).ok());
  const cl_int offset = 16;
  const cl_float factor = 2.0f;
  ASSERT_EQ(clSetKernelArg(kernel, 1, sizeof(offset), &offset), CL_SUCCESS);
  ASSERT_EQ(clSetKernelArg(kernel, 2, sizeof(factor), &factor), CL_SUCCESS);
  const size_t global = 8;
  ASSERT_EQ(clEnqueueNDRangeKernel(device->queue(), kernel, 1, nullptr, &global, nullptr, 0,
                                   nullptr, nullptr),
            CL_SUCCESS);
  clReleaseKernel(kernel);

  std::vector<float> out(64);
  ASSERT_TRUE((*arena)->Read(0, out).ok());
  for (int i = 0; i < 64; ++i) {
    const float expected = (i >= 16 && i < 24) ? 2.0f * i : static_cast<float>(i);
    EXPECT_EQ(out[i], expected) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(AllModes, SvmArenaModeTest,
                         ::testing::Values(MemoryMode::kFineGrainSvm,
                                           MemoryMode::kCoarseGrainSvm, MemoryMode::kBuffer),
                         [](const auto& param_info) { return std::string(MemoryModeName(param_info.param)); });

TEST(SvmArenaTest, FineGrainHostPointerIsAlwaysValid) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  if (!device->info().svm_fine_grain) GTEST_SKIP() << "device has no fine-grained SVM";
  absl::StatusOr<std::unique_ptr<SvmArena>> arena = SvmArena::Create(device, 8);
  ASSERT_TRUE(arena.ok()) << arena.status();
  EXPECT_EQ((*arena)->mode(), MemoryMode::kFineGrainSvm);
  ASSERT_NE((*arena)->host_data(), nullptr);
  (*arena)->host_data()[3] = 7.5f;
  std::vector<float> out(1);
  ASSERT_TRUE((*arena)->Read(3, out).ok());
  EXPECT_EQ(out[0], 7.5f);
}

TEST(SvmArenaTest, OutOfRangeAccessIsAnError) {
  PSCHED_REQUIRE_OPENCL_DEVICE(device);
  absl::StatusOr<std::unique_ptr<SvmArena>> arena = SvmArena::Create(device, 8);
  ASSERT_TRUE(arena.ok()) << arena.status();
  std::vector<float> four(4);
  EXPECT_EQ((*arena)->Write(6, four).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ((*arena)->Read(9, std::span<float>(four.data(), 0)).code(),
            absl::StatusCode::kOutOfRange);
  EXPECT_TRUE((*arena)->Write(4, four).ok());
}

TEST(SvmArenaTest, ModeNamesRoundTrip) {
  for (MemoryMode m :
       {MemoryMode::kFineGrainSvm, MemoryMode::kCoarseGrainSvm, MemoryMode::kBuffer}) {
    EXPECT_EQ(MemoryModeFromName(MemoryModeName(m)), m);
  }
  EXPECT_FALSE(MemoryModeFromName("shared").has_value());
}

TEST(SvmArenaTest, BestModePrefersFineGrain) {
  DeviceInfo info;
  EXPECT_EQ(BestMemoryMode(info), MemoryMode::kBuffer);
  info.svm_coarse_grain = true;
  EXPECT_EQ(BestMemoryMode(info), MemoryMode::kCoarseGrainSvm);
  info.svm_fine_grain = true;
  EXPECT_EQ(BestMemoryMode(info), MemoryMode::kFineGrainSvm);
}

}  // namespace
}  // namespace psched::executor::opencl
