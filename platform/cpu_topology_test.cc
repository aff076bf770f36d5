#include "platform/cpu_topology.h"

#include <algorithm>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "platform/sysfs_cpu.h"

namespace psched::platform {
namespace {

const std::string kFixtures = PSCHED_SYSFS_FIXTURES;

CpuTopology Discover(const std::string& fixture) {
  TopologyOptions options;
  options.sysfs_cpu_root = kFixtures + "/" + fixture;
  absl::StatusOr<CpuTopology> topology = DiscoverCpuTopology(options);
  EXPECT_TRUE(topology.ok()) << fixture << ": " << topology.status();
  return topology.ok() ? *topology : CpuTopology{};
}

// "cpu.big=4-7" per cluster, in rank order.
std::string Clusters(const CpuTopology& topology) {
  std::vector<std::string> parts;
  for (const CpuCluster& c : topology.clusters) {
    parts.push_back(c.name + "=" + FormatCpuList(c.cores));
  }
  return absl::StrJoin(parts, " ");
}

bool HasNote(const CpuTopology& topology, const std::string& text) {
  return std::any_of(topology.notes.begin(), topology.notes.end(),
                     [&](const std::string& n) { return n.find(text) != std::string::npos; });
}

std::string Notes(const CpuTopology& topology) { return absl::StrJoin(topology.notes, "\n"); }

TEST(ClusterNameTest, NamesByRank) {
  EXPECT_EQ(ClusterName(0, 1), "cpu");
  EXPECT_EQ(ClusterName(0, 2), "cpu.big");
  EXPECT_EQ(ClusterName(1, 2), "cpu.little");
  EXPECT_EQ(ClusterName(1, 3), "cpu.mid");
  std::vector<std::string> four, six;
  for (int r = 0; r < 4; ++r) four.push_back(ClusterName(r, 4));
  for (int r = 0; r < 6; ++r) six.push_back(ClusterName(r, 6));
  EXPECT_EQ(absl::StrJoin(four, " "), "cpu.prime cpu.big cpu.mid cpu.little");
  EXPECT_EQ(absl::StrJoin(six, " "), "cpu.prime cpu.big cpu.mid1 cpu.mid2 cpu.mid3 cpu.little");
}

TEST(DiscoverCpuTopologyTest, Rk3588MainlineMergesTheTwoA76Pairs) {
  CpuTopology t = Discover("rk3588-linux6.1");
  EXPECT_EQ(Clusters(t), "cpu.big=4-7 cpu.little=0-3");
  EXPECT_EQ(t.clusters[0].uarch, "Cortex-A76");
  EXPECT_EQ(t.clusters[0].capacity, 1024);
  EXPECT_EQ(t.clusters[0].max_freq_khz, 2256000);
  EXPECT_EQ(t.clusters[1].uarch, "Cortex-A55");
  EXPECT_EQ(t.clusters[1].capacity, 422);
  EXPECT_EQ(t.clusters[1].max_freq_khz, 1800000);
  EXPECT_EQ(t.grouping,
            "cores with equal cpu_capacity, cpuinfo_max_freq, micro-architecture (within 5%) "
            "form a cluster");
  EXPECT_TRUE(HasNote(t, "cpu.big spans topology cluster_id 1, 2")) << Notes(t);
  EXPECT_EQ(t.notes.size(), 1u) << Notes(t);
}

TEST(DiscoverCpuTopologyTest, Rk3588VendorKernelGivesTheSameClusters) {
  // Rockchip's 5.10 kernel: no cluster_id, each device-tree cluster its own package, A76 at
  // 2.4 GHz.
  CpuTopology t = Discover("rk3588-bsp5.10");
  EXPECT_EQ(Clusters(t), "cpu.big=4-7 cpu.little=0-3");
  EXPECT_EQ(t.clusters[0].max_freq_khz, 2400000);
  EXPECT_EQ(t.clusters[1].capacity, 397);
  EXPECT_TRUE(HasNote(t, "cpu.big spans topology physical_package_id 1, 2")) << Notes(t);
}

TEST(DiscoverCpuTopologyTest, Snapdragon8Gen2IsPrimeBigMidLittle) {
  // 1x X3 + 2x A715 + 2x A710 + 3x A510, all in kernel cluster 0; the A715 and A710 pairs
  // share capacity and clock and differ only in their MIDR.
  CpuTopology t = Discover("snapdragon-8gen2");
  EXPECT_EQ(Clusters(t), "cpu.prime=7 cpu.big=3-4 cpu.mid=5-6 cpu.little=0-2");
  EXPECT_EQ(t.clusters[0].uarch, "Cortex-X3");
  EXPECT_EQ(t.clusters[1].uarch, "Cortex-A715");
  EXPECT_EQ(t.clusters[2].uarch, "Cortex-A710");
  EXPECT_EQ(t.clusters[3].uarch, "Cortex-A510");
  EXPECT_EQ(t.clusters[1].capacity, 852);
  EXPECT_EQ(t.clusters[2].max_freq_khz, 2803200);
  EXPECT_TRUE(HasNote(t, "topology cluster_id 0 holds cpu.prime, cpu.big, cpu.mid, cpu.little"))
      << Notes(t);
}

TEST(DiscoverCpuTopologyTest, Snapdragon865SplitsThePrimeA77ByClock) {
  CpuTopology t = Discover("snapdragon-865");
  EXPECT_EQ(Clusters(t), "cpu.big=7 cpu.mid=4-6 cpu.little=0-3");
  EXPECT_EQ(t.clusters[0].uarch, "Cortex-A77");
  EXPECT_EQ(t.clusters[0].max_freq_khz, 2841600);
  EXPECT_EQ(t.clusters[1].uarch, "Cortex-A77");
  EXPECT_EQ(t.clusters[1].capacity, 871);
  EXPECT_EQ(t.clusters[2].uarch, "Kryo 4xx Silver (Cortex-A55)");
}

TEST(DiscoverCpuTopologyTest, RaspberryPi5IsOneCluster) {
  CpuTopology t = Discover("raspberry-pi-5");
  EXPECT_EQ(Clusters(t), "cpu=0-3");
  EXPECT_EQ(t.clusters[0].uarch, "Cortex-A76");
  EXPECT_EQ(t.clusters[0].max_freq_khz, 2400000);
  EXPECT_TRUE(t.notes.empty()) << Notes(t);
}

TEST(DiscoverCpuTopologyTest, X86VmWithNothingToCompareIsOneCluster) {
  CpuTopology t = Discover("x86-vm-2vcpu");
  EXPECT_EQ(Clusters(t), "cpu=0-1");
  EXPECT_FALSE(t.clusters[0].capacity.has_value());
  EXPECT_FALSE(t.clusters[0].max_freq_khz.has_value());
  EXPECT_EQ(t.grouping,
            "one cluster: no cpu_capacity, cpuinfo_max_freq or micro-architecture tells the "
            "cores apart");
  EXPECT_TRUE(t.notes.empty()) << Notes(t);
}

TEST(DiscoverCpuTopologyTest, SmtSiblingsCountOnce) {
  CpuTopology t = Discover("x86-smt-2core");
  EXPECT_EQ(Clusters(t), "cpu=0-1");
  EXPECT_TRUE(HasNote(t, "cpus 2-3: SMT siblings of other cores")) << Notes(t);
}

TEST(DiscoverCpuTopologyTest, MissingCpufreqStillSplitsByCapacity) {
  CpuTopology t = Discover("damaged-no-cpufreq");
  EXPECT_EQ(Clusters(t), "cpu.big=4-7 cpu.little=0-3");
  EXPECT_FALSE(t.clusters[0].max_freq_khz.has_value());
  EXPECT_EQ(t.grouping,
            "cores with equal cpu_capacity, micro-architecture (within 5%) form a cluster");
}

TEST(DiscoverCpuTopologyTest, OfflineCoresAreLeftOutWithANote) {
  CpuTopology t = Discover("damaged-offline");
  EXPECT_EQ(Clusters(t), "cpu.big=4-5 cpu.little=0-3");
  EXPECT_TRUE(HasNote(t, "cpus 6-7 offline: not used")) << Notes(t);
}

TEST(DiscoverCpuTopologyTest, UnreadableAttributesAreDroppedAndNamed) {
  // cpu5's cpu_capacity is a directory and policy0's max frequency is garbage: both
  // attributes go, the MIDR still tells the A76 from the A55.
  CpuTopology t = Discover("damaged-unreadable");
  EXPECT_EQ(Clusters(t), "cpu.big=4-7 cpu.little=0-3");
  EXPECT_EQ(t.grouping, "cores with equal micro-architecture (within 5%) form a cluster");
  EXPECT_TRUE(HasNote(t, "cpu_capacity not used for grouping: cannot read"));
  EXPECT_TRUE(HasNote(t, "cpu5/cpu_capacity: Is a directory")) << Notes(t);
  EXPECT_TRUE(HasNote(t, "cpufreq/cpuinfo_max_freq not used for grouping"));
  EXPECT_TRUE(HasNote(t, "'<unknown>' is not an integer")) << Notes(t);
}

TEST(DiscoverCpuTopologyTest, BinnedCoresWithin5PercentStayOneCluster) {
  // One A76 pair is binned 2% slower; cpu0's MIDR is garbage, so core types are not compared.
  CpuTopology t = Discover("damaged-asymmetric");
  EXPECT_EQ(Clusters(t), "cpu.big=4-7 cpu.little=0-3");
  EXPECT_EQ(t.grouping,
            "cores with equal cpu_capacity, cpuinfo_max_freq (within 5%) form a cluster");
  EXPECT_TRUE(HasNote(t, "micro-architecture not used for grouping: unknown on cpu0 ("))
      << Notes(t);
  EXPECT_TRUE(HasNote(t, "cpu0/regs/identification/midr_el1: 'zz' is not a hexadecimal number"))
      << Notes(t);
  EXPECT_TRUE(HasNote(t, "cpu.big: cpu_capacity 1004-1024 within 5%")) << Notes(t);
  EXPECT_TRUE(HasNote(t, "cpu.big: cpuinfo_max_freq 2208000-2256000 kHz within 5%")) << Notes(t);
}

TEST(DiscoverCpuTopologyTest, ABrokenOnlineListIsAClearError) {
  for (const std::string fixture : {"damaged-online-list", "damaged-no-online", "no-such-tree"}) {
    TopologyOptions options;
    options.sysfs_cpu_root = kFixtures + "/" + fixture;
    absl::StatusOr<CpuTopology> t = DiscoverCpuTopology(options);
    ASSERT_FALSE(t.ok()) << fixture;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kFailedPrecondition) << fixture;
    EXPECT_NE(t.status().message().find("cannot tell which CPUs are online"), std::string::npos)
        << t.status();
    EXPECT_NE(t.status().message().find(fixture + "/online"), std::string::npos) << t.status();
  }
}

TEST(DiscoverCpuTopologyTest, AllowedCpusRestrictTheClusters) {
  TopologyOptions options;
  options.sysfs_cpu_root = kFixtures + "/rk3588-linux6.1";
  options.allowed_cpus = std::vector<int>{0, 1, 6, 7};
  absl::StatusOr<CpuTopology> t = DiscoverCpuTopology(options);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(Clusters(*t), "cpu.big=6-7 cpu.little=0-1");
  EXPECT_TRUE(HasNote(*t, "cpus 2-5 outside this process's CPU affinity")) << Notes(*t);

  options.allowed_cpus = std::vector<int>{};
  absl::StatusOr<CpuTopology> none = DiscoverCpuTopology(options);
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.status().message().find("no usable CPU"), std::string::npos) << none.status();
}

TEST(ClusterDevicesTest, OneCpuDevicePerClusterPinnedToItsCores) {
  std::vector<DeviceSpec> devices = ClusterDevices(Discover("snapdragon-8gen2"));
  ASSERT_EQ(devices.size(), 4u);
  EXPECT_EQ(devices[1].name, "cpu.big");
  EXPECT_EQ(devices[1].kind, DeviceKind::kCpu);
  EXPECT_EQ(devices[1].cpu_cores, (std::vector<int>{3, 4}));
  EXPECT_EQ(devices[3].cpu_cores, (std::vector<int>{0, 1, 2}));
}

TEST(DiscoverCpuTopologyTest, LiveSystemCoversEveryUsableCoreOnce) {
  TopologyOptions options;
  options.live_names = true;
  options.allowed_cpus = ProcessAffinityCpus();
  ASSERT_TRUE(options.allowed_cpus.has_value());
  absl::StatusOr<CpuTopology> t = DiscoverCpuTopology(options);
  ASSERT_TRUE(t.ok()) << t.status();
  std::vector<int> covered;
  std::set<std::string> names;
  for (const CpuCluster& c : t->clusters) {
    covered.insert(covered.end(), c.cores.begin(), c.cores.end());
    EXPECT_TRUE(names.insert(c.name).second) << c.name;
  }
  std::sort(covered.begin(), covered.end());
  std::vector<int> cores;
  for (const CpuCore& core : t->cores) cores.push_back(core.cpu);
  EXPECT_EQ(covered, cores);
  // Every usable core is covered unless it is an SMT sibling or offline.
  EXPECT_LE(cores.size(), options.allowed_cpus->size());
  EXPECT_GE(cores.size() * 2, options.allowed_cpus->size()) << Notes(*t);
}

}  // namespace
}  // namespace psched::platform
