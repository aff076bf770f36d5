#include "daemon/engine/budgets.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace psched::daemon {
namespace {

namespace fs = std::filesystem;

// A /proc and a cgroup mount in a temporary directory.
class BudgetsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "psched_budgets_XXXXXX").string();
    root_ = mkdtemp(pattern.data());
    roots_ = {root_ + "/proc", root_ + "/cgroup"};
    fs::create_directories(roots_.proc + "/self");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& path, const std::string& text) {
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << text;
  }
  std::string root_;
  MachineRoots roots_;
};

constexpr int64_t kGiB = int64_t{1} << 30;

TEST_F(BudgetsTest, MemTotalWithoutACgroupLimit) {
  Write(roots_.proc + "/meminfo", "MemTotal:        8388608 kB\nMemFree:  1 kB\n");
  Write(roots_.proc + "/self/cgroup", "0::/system.slice/pschedd.service\n");
  Write(roots_.cgroup + "/system.slice/pschedd.service/memory.max", "max\n");
  absl::StatusOr<MachineResources> machine = ReadMachineResources(root_, roots_);
  ASSERT_TRUE(machine.ok()) << machine.status();
  EXPECT_EQ(machine->mem_total_bytes, 8 * kGiB);
  EXPECT_FALSE(machine->cgroup_limit_bytes.has_value());
  EXPECT_EQ(DefaultPlanMemoryBytes(*machine), 2 * kGiB);
  EXPECT_EQ(DefaultLoadedBytes(*machine), 4 * kGiB);
  EXPECT_GT(machine->fs_bytes, 0);
}

TEST_F(BudgetsTest, CgroupV2LimitBelowMemTotalWins) {
  Write(roots_.proc + "/meminfo", "MemTotal:        8388608 kB\n");
  Write(roots_.proc + "/self/cgroup", "0::/system.slice/pschedd.service\n");
  Write(roots_.cgroup + "/system.slice/pschedd.service/memory.max", "2147483648\n");
  absl::StatusOr<MachineResources> machine = ReadMachineResources(root_, roots_);
  ASSERT_TRUE(machine.ok()) << machine.status();
  EXPECT_EQ(machine->cgroup_limit_bytes, 2 * kGiB);
  EXPECT_EQ(machine->memory_bytes(), 2 * kGiB);
  EXPECT_EQ(DefaultPlanMemoryBytes(*machine), kGiB / 2);
}

TEST_F(BudgetsTest, CgroupV1LimitAndItsNoLimitValue) {
  // A hybrid host: the unified line first, the v1 memory controller after it.
  const std::string self = "12:memory:/docker/abc\n0::/docker/abc\n4:cpu,cpuacct:/docker/abc\n";
  EXPECT_FALSE(CgroupMemoryLimit(self, roots_.cgroup).has_value());
  // A container sees its own cgroup at the mount's root.
  Write(roots_.cgroup + "/memory/memory.limit_in_bytes", "9223372036854771712\n");
  EXPECT_FALSE(CgroupMemoryLimit(self, roots_.cgroup).has_value());
  Write(roots_.cgroup + "/memory/memory.limit_in_bytes", "1073741824\n");
  EXPECT_EQ(CgroupMemoryLimit(self, roots_.cgroup), kGiB);
  Write(roots_.cgroup + "/memory/docker/abc/memory.limit_in_bytes", "536870912\n");
  EXPECT_EQ(CgroupMemoryLimit(self, roots_.cgroup), kGiB / 2);
}

TEST_F(BudgetsTest, CacheDefaultIsTenPercentOfTheFilesystemUpToFourGiB) {
  MachineResources machine;
  machine.fs_bytes = 16 * kGiB;
  EXPECT_EQ(DefaultCacheMaxBytes(machine), 16 * kGiB / 10);
  machine.fs_bytes = 400 * kGiB;
  EXPECT_EQ(DefaultCacheMaxBytes(machine), 4 * kGiB);
  machine.cores = 8;
  EXPECT_EQ(DefaultConcurrentPlans(machine), 4);
  machine.cores = 1;
  EXPECT_EQ(DefaultConcurrentPlans(machine), 1);
}

TEST_F(BudgetsTest, ResolveFillsOnlyTheBoundsLeftAtZero) {
  MachineResources machine;
  machine.mem_total_bytes = 4 * kGiB;
  machine.fs_bytes = 20 * kGiB;
  machine.cores = 2;
  DaemonConfig config;
  config.max_loaded_bytes = 3 * kGiB;
  DaemonConfig resolved = ResolveBudgets(config, machine);
  EXPECT_EQ(resolved.cache_max_bytes, 2 * kGiB);
  EXPECT_EQ(resolved.max_model_bytes_per_user, kGiB);
  EXPECT_EQ(resolved.max_plan_memory_bytes, kGiB);
  EXPECT_EQ(resolved.max_loaded_bytes, 3 * kGiB);
  EXPECT_EQ(resolved.max_concurrent_plans, 1);
}

TEST_F(BudgetsTest, UnreadableMeminfoNamesTheFileAndTheKeys) {
  absl::StatusOr<MachineResources> machine = ReadMachineResources(root_, roots_);
  ASSERT_FALSE(machine.ok());
  EXPECT_NE(machine.status().message().find(roots_.proc + "/meminfo"), std::string::npos);
  EXPECT_NE(machine.status().message().find("max_plan_memory_bytes"), std::string::npos);
}

TEST(FormatBytesTest, Units) {
  EXPECT_EQ(FormatBytes(12), "12 bytes");
  EXPECT_EQ(FormatBytes(3 << 20), "3.0 MiB");
  EXPECT_EQ(FormatBytes(3 * kGiB / 2), "1.5 GiB");
}

}  // namespace
}  // namespace psched::daemon
