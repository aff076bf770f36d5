#include "calibration/run_costs/probe_subsets.h"

#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace psched::calibration {
namespace {

using ::testing::ElementsAre;

// A 4-core board: a 2-core cluster, two single cores, and a GPU.
platform::Platform Board() {
  platform::Platform p;
  p.name = "board";
  p.devices = {{"little", platform::DeviceKind::kCpu, 0, {0, 1}, ""},
               {"big.0", platform::DeviceKind::kCpu, 0, {2}, ""},
               {"gpu", platform::DeviceKind::kGpu, 0, {}, "pthread"},
               {"big.1", platform::DeviceKind::kCpu, 0, {3}, ""}};
  return p;
}

TEST(ProbeSubsetsTest, TheCpuDevicesTogetherThenTheGpuBesideTheFirst) {
  const std::vector<DeviceSubset> subsets = HostProbeSubsets(Board(), {});
  ASSERT_EQ(subsets.size(), 2u);
  EXPECT_THAT(subsets[0].indices, ElementsAre(0, 1, 3));
  EXPECT_EQ(subsets[0].suffix, "cpus");
  EXPECT_EQ(subsets[0].gpu_core, -1);
  EXPECT_THAT(subsets[1].indices, ElementsAre(0, 2));
  EXPECT_EQ(subsets[1].suffix, "gpu");
  // The GPU's dispatcher goes to the next CPU device's core, off the probed cluster's.
  EXPECT_EQ(subsets[1].gpu_core, 2);
}

TEST(ProbeSubsetsTest, OnlyUsableDevicesAndNothingWithoutACpu) {
  const std::vector<DeviceSubset> no_little = HostProbeSubsets(Board(), {false, true, true, true});
  ASSERT_EQ(no_little.size(), 2u);
  EXPECT_THAT(no_little[0].indices, ElementsAre(1, 3));
  EXPECT_THAT(no_little[1].indices, ElementsAre(1, 2));
  EXPECT_EQ(no_little[1].gpu_core, 3);
  const std::vector<DeviceSubset> no_gpu = HostProbeSubsets(Board(), {true, true, false, true});
  ASSERT_EQ(no_gpu.size(), 1u);
  EXPECT_TRUE(HostProbeSubsets(Board(), {false, false, true, false}).empty());
  // One CPU device: no other core for the GPU's dispatcher.
  const std::vector<DeviceSubset> alone = HostProbeSubsets(Board(), {false, true, true, false});
  ASSERT_EQ(alone.size(), 2u);
  EXPECT_EQ(alone[1].gpu_core, -1);
}

TEST(ProbeSubsetsTest, TheSubsetPlatformKeepsItsDevicesInOrder) {
  const platform::Platform board = Board();
  const platform::Platform p = SubsetPlatform(board, {.indices = {0, 2}, .suffix = "gpu"});
  EXPECT_EQ(p.name, "board-gpu");
  ASSERT_EQ(p.devices.size(), 2u);
  EXPECT_EQ(p.devices[0].name, "little");
  EXPECT_EQ(p.devices[1].name, "gpu");
  EXPECT_EQ(p.devices[1].opencl_device, "pthread");
  EXPECT_EQ(p.transfer_bytes_per_us, board.transfer_bytes_per_us);
}

}  // namespace
}  // namespace psched::calibration
