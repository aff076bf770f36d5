#include "platform/sysfs_cpu.h"

#include <string>

#include "gtest/gtest.h"

namespace psched::platform {
namespace {

const std::string kFixtures = PSCHED_SYSFS_FIXTURES;

TEST(ParseCpuListTest, ReadsRangesAndSingles) {
  EXPECT_EQ(*ParseCpuList("0-3,6,8-9\n"), (std::vector<int>{0, 1, 2, 3, 6, 8, 9}));
  EXPECT_EQ(*ParseCpuList("5"), (std::vector<int>{5}));
  EXPECT_TRUE(ParseCpuList("").value().empty());
  EXPECT_TRUE(ParseCpuList(" \n").value().empty());
}

TEST(ParseCpuListTest, RejectsWhatIsNotAList) {
  for (const char* bad : {"0-3,banana", "3-1", "-1", "0-", ",", "1,,2", "0-70000", "0x1"}) {
    absl::StatusOr<std::vector<int>> list = ParseCpuList(bad);
    ASSERT_FALSE(list.ok()) << bad;
    EXPECT_EQ(list.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(list.status().message().find("CPU list"), std::string::npos) << list.status();
  }
}

TEST(FormatCpuListTest, CollapsesRuns) {
  EXPECT_EQ(FormatCpuList({0, 1, 2, 3, 6, 8, 9}), "0-3,6,8-9");
  EXPECT_EQ(FormatCpuList({4}), "4");
  EXPECT_EQ(FormatCpuList({}), "");
}

TEST(ReadSysfsCpuTest, ReadsEveryAttributeOfAnRk3588BigCore) {
  absl::StatusOr<SysfsCpu> cpu = ReadSysfsCpu(kFixtures + "/rk3588-linux6.1", 6);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_EQ(cpu->cpu, 6);
  EXPECT_EQ(*cpu->capacity, 1024);
  EXPECT_EQ(*cpu->max_freq_khz, 2256000);  // through the cpufreq -> policy6 link
  EXPECT_EQ(*cpu->cluster_id, 2);
  EXPECT_EQ(*cpu->package_id, 0);
  EXPECT_EQ(*cpu->midr, 0x414FD0B0u);
  EXPECT_EQ(*cpu->core_cpus, (std::vector<int>{6}));
}

TEST(ReadSysfsCpuTest, AbsentFilesAreNotFound) {
  absl::StatusOr<SysfsCpu> cpu = ReadSysfsCpu(kFixtures + "/x86-vm-2vcpu", 1);
  ASSERT_TRUE(cpu.ok()) << cpu.status();
  EXPECT_TRUE(absl::IsNotFound(cpu->capacity.status()));
  EXPECT_TRUE(absl::IsNotFound(cpu->max_freq_khz.status()));
  EXPECT_TRUE(absl::IsNotFound(cpu->midr.status()));
  EXPECT_EQ(*cpu->cluster_id, 65535);
  EXPECT_TRUE(absl::IsNotFound(ReadSysfsCpu(kFixtures + "/x86-vm-2vcpu", 2).status()));
}

TEST(ReadSysfsCpuTest, UnreadableAndGarbledFilesSayWhichAndWhy) {
  absl::StatusOr<SysfsCpu> cpu5 = ReadSysfsCpu(kFixtures + "/damaged-unreadable", 5);
  ASSERT_TRUE(cpu5.ok()) << cpu5.status();
  EXPECT_EQ(cpu5->capacity.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(cpu5->capacity.status().message().find("cpu5/cpu_capacity: Is a directory"),
            std::string::npos)
      << cpu5->capacity.status();

  absl::StatusOr<SysfsCpu> cpu0 = ReadSysfsCpu(kFixtures + "/damaged-unreadable", 0);
  ASSERT_TRUE(cpu0.ok()) << cpu0.status();
  EXPECT_EQ(cpu0->max_freq_khz.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(cpu0->max_freq_khz.status().message().find("'<unknown>' is not an integer"),
            std::string::npos)
      << cpu0->max_freq_khz.status();
}

TEST(ReadCpuListFileTest, NamesTheFileThatDoesNotParse) {
  absl::StatusOr<std::vector<int>> online =
      ReadCpuListFile(kFixtures + "/damaged-online-list", "online");
  ASSERT_FALSE(online.ok());
  EXPECT_NE(online.status().message().find("damaged-online-list/online: '0-3,banana'"),
            std::string::npos)
      << online.status();
  EXPECT_TRUE(
      absl::IsNotFound(ReadCpuListFile(kFixtures + "/damaged-no-online", "online").status()));
}

}  // namespace
}  // namespace psched::platform
