// CPU topology discovery: which cores of this machine form a cluster, and so which CPU
// devices pschedd offers by default.
//
// A cluster is a set of online cores of one performance class: equal cpu_capacity, equal
// cpuinfo_max_freq and the same micro-architecture (values within kClassTolerance count as
// equal, so a binned core 2% faster does not split a cluster), each attribute used only
// when every core reports it. The kernel's own grouping - topology cluster_id and
// physical_package_id - is reported but does not split a class, because it means different
// things on different kernels: on RK3588, Rockchip's 5.10 kernel puts each cluster of the
// device tree (A55 x4, A76 x2, A76 x2) in its own package while mainline 6.1 sets cluster_id
// 0/1/2 in package 0, yet both A76 pairs are the same cores at the same clock; Snapdragon
// 8 Gen 2 puts all eight cores (four core types) in cluster 0; x86 VMs report cluster_id
// 65535. SMT siblings count once (the first logical CPU of a core is used). Clusters are
// ranked fastest first (capacity, then frequency, then lowest CPU id) and named by rank:
// one cluster `cpu`; two `cpu.big`, `cpu.little`; three `cpu.big`, `cpu.mid`, `cpu.little`;
// four (Snapdragon 8 Gen 2's 1+2+2+3) `cpu.prime`, `cpu.big`, `cpu.mid`, `cpu.little`; five
// or more `cpu.prime`, `cpu.big`, `cpu.mid1` .. `cpu.midK`, `cpu.little`.
//
// The sysfs root is an option, so tests read the fixture trees in platform/testdata/sysfs/.
// Values; DiscoverCpuTopology only reads files (and, with live_names, libcpuinfo) and is
// thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/platform.h"

namespace psched::platform {

// Relative difference under which two capacities or frequencies are one class. Real classes
// differ by 15% or more (Snapdragon 865's prime A77 at 2.84 GHz against its A77s at 2.42).
inline constexpr double kClassTolerance = 0.05;

// One online core, as discovery saw it.
struct CpuCore {
  int cpu = 0;
  std::optional<int64_t> capacity;      // cpu_capacity; 1024 is the fastest core
  std::optional<int64_t> max_freq_khz;  // cpufreq/cpuinfo_max_freq
  std::optional<uint64_t> midr;         // regs/identification/midr_el1 (arm64)
  std::string uarch;                    // "Cortex-A76"; empty when unknown
  std::optional<int64_t> cluster_id;    // topology/cluster_id
  std::optional<int64_t> package_id;    // topology/physical_package_id
};

struct CpuCluster {
  std::string name;        // "cpu.big", ...
  std::vector<int> cores;  // ascending CPU ids; the device's threads, one per core
  // The class's values (of its first core); unset when not used for grouping.
  std::optional<int64_t> capacity;
  std::optional<int64_t> max_freq_khz;
  std::string uarch;
};

struct CpuTopology {
  std::string sysfs_root;      // the tree that was read
  std::string chip;            // libcpuinfo's chip name (live system only); empty when unknown
  std::vector<CpuCore> cores;  // the cores used, ascending
  std::vector<CpuCluster> clusters;  // fastest first
  // The rule that formed the clusters, in words: which attributes told cores apart.
  std::string grouping;
  // What was left out or not used, and why: offline cores, SMT siblings, cores outside the
  // allowed set, unreadable attributes, kernel cluster ids that were not followed.
  std::vector<std::string> notes;
};

struct TopologyOptions {
  std::string sysfs_cpu_root = "/sys/devices/system/cpu";
  // Ask libcpuinfo for the chip and micro-architecture names. Only for the live system's root:
  // libcpuinfo describes this machine, not a fixture tree.
  bool live_names = false;
  // Cores this process may run on (its affinity mask); others are left out with a note.
  // Unset: every online core.
  std::optional<std::vector<int>> allowed_cpus;
};

// FAILED_PRECONDITION naming the file when the online list cannot be read or parsed, or when
// no usable core is left; damaged per-core attributes only drop that attribute (with a note).
absl::StatusOr<CpuTopology> DiscoverCpuTopology(const TopologyOptions& options);

// The name of the cluster ranked `rank` (0 = fastest) of `count` clusters.
std::string ClusterName(int rank, int count);

// One CPU device per cluster, in rank order, pinned to the cluster's cores.
std::vector<DeviceSpec> ClusterDevices(const CpuTopology& topology);

// The cores of this process's CPU affinity mask; nullopt when it cannot be read.
std::optional<std::vector<int>> ProcessAffinityCpus();

}  // namespace psched::platform
