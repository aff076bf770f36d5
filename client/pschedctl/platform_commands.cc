#include <cstdio>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "client/pschedctl/commands.h"
#include "client/pschedctl/output.h"
#include "platform/cpu_topology.h"
#include "platform/sysfs_cpu.h"

namespace psched::pschedctl {
namespace {

// The API leaves an attribute the kernel did not report at 0 (-1 for ids).
template <typename T>
std::optional<T> Reported(T value, T absent = 0) {
  return value == absent ? std::nullopt : std::optional<T>(value);
}

platform::CpuTopology TopologyFromProto(const v1::PlatformDiscovery& d) {
  platform::CpuTopology t;
  t.sysfs_root = d.sysfs_root();
  t.chip = d.chip();
  t.grouping = d.grouping();
  for (const v1::CpuCore& c : d.cores()) {
    t.cores.push_back({c.cpu(), Reported(c.capacity()), Reported(c.max_freq_khz()),
                       Reported(c.midr()), c.uarch(), Reported<int64_t>(c.cluster_id(), -1),
                       Reported<int64_t>(c.package_id(), -1)});
  }
  for (const v1::CpuCluster& c : d.clusters()) {
    t.clusters.push_back({c.name(), std::vector<int>(c.cores().begin(), c.cores().end()),
                          Reported(c.capacity()), Reported(c.max_freq_khz()), c.uarch()});
  }
  t.notes.assign(d.notes().begin(), d.notes().end());
  return t;
}

template <typename T>
std::string OrDash(const std::optional<T>& value) {
  return value.has_value() ? std::to_string(*value) : "-";
}
std::string OrDash(const std::string& value) { return value.empty() ? "-" : value; }

std::string Mhz(const std::optional<int64_t>& khz) {
  return khz.has_value() ? std::to_string(*khz / 1000) : "-";
}

std::string Hex(const std::optional<uint64_t>& value) {
  if (!value.has_value()) return "-";
  char text[24];
  std::snprintf(text, sizeof(text), "0x%08llx", static_cast<unsigned long long>(*value));
  return text;
}

// Absent attributes are JSON null.
template <typename T>
json OrNull(const std::optional<T>& value) {
  return value.has_value() ? json(*value) : json(nullptr);
}

json TopologyJson(const platform::CpuTopology& t) {
  json cores = json::array();
  for (const platform::CpuCore& c : t.cores) {
    cores.push_back({{"cpu", c.cpu},
                     {"capacity", OrNull(c.capacity)},
                     {"max_freq_khz", OrNull(c.max_freq_khz)},
                     {"uarch", c.uarch},
                     {"midr", OrNull(c.midr)},
                     {"cluster_id", OrNull(c.cluster_id)},
                     {"package_id", OrNull(c.package_id)}});
  }
  json clusters = json::array();
  for (const platform::CpuCluster& c : t.clusters) {
    clusters.push_back({{"name", c.name},
                        {"cores", c.cores},
                        {"capacity", OrNull(c.capacity)},
                        {"max_freq_khz", OrNull(c.max_freq_khz)},
                        {"uarch", c.uarch}});
  }
  return {{"sysfs_root", t.sysfs_root}, {"chip", t.chip},
          {"grouping", t.grouping},     {"cores", cores},
          {"clusters", clusters},       {"notes", t.notes}};
}

// The clusters, the cores they were formed from, and the notes, as tables.
void PrintTopology(const platform::CpuTopology& t) {
  std::cout << "discovered in " << t.sysfs_root;
  if (!t.chip.empty()) std::cout << " (chip: " << t.chip << ")";
  std::cout << "\ngrouping: " << t.grouping << "\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const platform::CpuCluster& c : t.clusters) {
    rows.push_back({c.name, platform::FormatCpuList(c.cores), std::to_string(c.cores.size()),
                    OrDash(c.capacity), Mhz(c.max_freq_khz), OrDash(c.uarch)});
  }
  PrintTable({"CLUSTER", "CORES", "THREADS", "CAPACITY", "MAX_MHZ", "UARCH"}, rows);
  std::cout << "\n";
  rows.clear();
  for (const platform::CpuCore& c : t.cores) {
    rows.push_back({std::to_string(c.cpu), OrDash(c.capacity), Mhz(c.max_freq_khz), OrDash(c.uarch),
                    Hex(c.midr), OrDash(c.cluster_id), OrDash(c.package_id)});
  }
  PrintTable({"CPU", "CAPACITY", "MAX_MHZ", "UARCH", "MIDR", "CLUSTER_ID", "PACKAGE"}, rows);
  if (!t.notes.empty()) {
    std::cout << "\nnotes:\n";
    for (const std::string& note : t.notes) std::cout << "  - " << note << "\n";
  }
}

}  // namespace

void CmdPlatformShow(const Globals& g) {
  auto client = Connect(g);
  v1::DevicesResponse platform = Check(client.Devices());
  const v1::PlatformDiscovery& d = platform.discovery();
  // Discovery did not run (a simulated platform) when no tree was read.
  std::optional<platform::CpuTopology> topology;
  if (!d.sysfs_root().empty()) topology = TopologyFromProto(d);
  if (g.json()) {
    json devices = json::array();
    for (const auto& device : platform.devices()) devices.push_back(DeviceJson(device));
    json discovery = TopologyJson(topology.value_or(platform::CpuTopology{}));
    discovery["cpu_devices_from"] = d.cpu_devices_from();
    discovery["error"] = d.error();
    PrintJson({{"platform", platform.platform()},
               {"fingerprint", platform.fingerprint()},
               {"predictor_version", platform.predictor_version()},
               {"devices", devices},
               {"discovery", discovery}});
    return;
  }
  std::cout << "platform:    " << platform.platform() << "\n"
            << "fingerprint: " << platform.fingerprint() << "\n"
            << "predictor:   " << platform.predictor_version() << "\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& device : platform.devices()) {
    const bool cpu = device.kind() == "cpu";
    rows.push_back({device.name(), device.kind(),
                    cpu ? platform::FormatCpuList(
                              std::vector<int>(device.cores().begin(), device.cores().end()))
                        : "-",
                    cpu ? std::to_string(device.cores_size()) : "-",
                    OrDash(device.opencl_device())});
  }
  PrintTable({"DEVICE", "KIND", "CORES", "THREADS", "OPENCL"}, rows);

  std::cout << "\nCPU devices: " << d.cpu_devices_from();
  if (d.cpu_devices_from() == "discovered") std::cout << " (one per cluster)";
  if (d.cpu_devices_from() == "config") std::cout << " ([[devices]] in the config)";
  std::cout << "\n";
  if (!d.error().empty()) std::cout << "discovery failed: " << d.error() << "\n";
  if (topology.has_value()) PrintTopology(*topology);
}

void CmdPlatformDiscover(const Globals& g, const std::string& sysfs_root) {
  platform::TopologyOptions options;
  const bool live = sysfs_root.empty() || sysfs_root == options.sysfs_cpu_root;
  if (!live) options.sysfs_cpu_root = sysfs_root;
  // On this machine pschedd would use the cores of its affinity; a copied tree has no
  // process, so all its online cores count.
  options.live_names = live;
  if (live) options.allowed_cpus = platform::ProcessAffinityCpus();
  platform::CpuTopology topology = Check(platform::DiscoverCpuTopology(options));
  if (g.json()) {
    PrintJson(TopologyJson(topology));
    return;
  }
  PrintTopology(topology);
}

}  // namespace psched::pschedctl
