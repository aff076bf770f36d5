#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "client/pschedctl/commands.h"
#include "client/pschedctl/output.h"
#include "platform/sysfs_cpu.h"

namespace psched::pschedctl {
namespace {

std::string Cores(const google::protobuf::RepeatedField<int32_t>& cores) {
  return platform::FormatCpuList(std::vector<int>(cores.begin(), cores.end()));
}

// An attribute the kernel did not report (0, or -1 for ids) prints as "-".
std::string OrDash(int64_t value, int64_t absent = 0) {
  return value == absent ? "-" : std::to_string(value);
}
std::string OrDash(const std::string& value) { return value.empty() ? "-" : value; }

std::string Mhz(int64_t khz) { return khz == 0 ? "-" : std::to_string(khz / 1000); }

std::string Hex(uint64_t value) {
  if (value == 0) return "-";
  char text[24];
  std::snprintf(text, sizeof(text), "0x%08llx", static_cast<unsigned long long>(value));
  return text;
}

json DiscoveryJson(const v1::PlatformDiscovery& d) {
  json cores = json::array();
  for (const v1::CpuCore& c : d.cores()) {
    cores.push_back({{"cpu", c.cpu()},
                     {"capacity", c.capacity()},
                     {"max_freq_khz", c.max_freq_khz()},
                     {"uarch", c.uarch()},
                     {"midr", c.midr()},
                     {"cluster_id", c.cluster_id()},
                     {"package_id", c.package_id()}});
  }
  json clusters = json::array();
  for (const v1::CpuCluster& c : d.clusters()) {
    clusters.push_back({{"name", c.name()},
                        {"cores", std::vector<int>(c.cores().begin(), c.cores().end())},
                        {"capacity", c.capacity()},
                        {"max_freq_khz", c.max_freq_khz()},
                        {"uarch", c.uarch()}});
  }
  return {{"cpu_devices_from", d.cpu_devices_from()},
          {"sysfs_root", d.sysfs_root()},
          {"error", d.error()},
          {"chip", d.chip()},
          {"grouping", d.grouping()},
          {"cores", cores},
          {"clusters", clusters},
          {"notes", std::vector<std::string>(d.notes().begin(), d.notes().end())}};
}

}  // namespace

void CmdPlatformShow(const Globals& g) {
  auto client = Connect(g);
  v1::DevicesResponse platform = Check(client.Devices());
  const v1::PlatformDiscovery& d = platform.discovery();
  if (g.json()) {
    json devices = json::array();
    for (const auto& device : platform.devices()) devices.push_back(DeviceJson(device));
    PrintJson({{"platform", platform.platform()},
               {"fingerprint", platform.fingerprint()},
               {"predictor_version", platform.predictor_version()},
               {"devices", devices},
               {"discovery", DiscoveryJson(d)}});
    return;
  }
  std::cout << "platform:    " << platform.platform() << "\n"
            << "fingerprint: " << platform.fingerprint() << "\n"
            << "predictor:   " << platform.predictor_version() << "\n\n";
  std::vector<std::vector<std::string>> rows;
  for (const auto& device : platform.devices()) {
    const bool cpu = device.kind() == "cpu";
    rows.push_back({device.name(), device.kind(), cpu ? Cores(device.cores()) : "-",
                    cpu ? std::to_string(device.cores_size()) : "-",
                    OrDash(device.opencl_device())});
  }
  PrintTable({"DEVICE", "KIND", "CORES", "THREADS", "OPENCL"}, rows);

  std::cout << "\nCPU devices: " << d.cpu_devices_from();
  if (d.cpu_devices_from() == "discovered") std::cout << " (one per cluster)";
  if (d.cpu_devices_from() == "config") std::cout << " ([[devices]] in the config)";
  std::cout << "\n";
  if (!d.error().empty()) std::cout << "discovery failed: " << d.error() << "\n";
  if (d.sysfs_root().empty()) return;
  std::cout << "discovered in " << d.sysfs_root();
  if (!d.chip().empty()) std::cout << " (chip: " << d.chip() << ")";
  std::cout << "\ngrouping: " << d.grouping() << "\n\n";
  rows.clear();
  for (const v1::CpuCluster& c : d.clusters()) {
    rows.push_back({c.name(), Cores(c.cores()), OrDash(c.capacity()), Mhz(c.max_freq_khz()),
                    OrDash(c.uarch())});
  }
  PrintTable({"CLUSTER", "CORES", "CAPACITY", "MAX_MHZ", "UARCH"}, rows);
  std::cout << "\n";
  rows.clear();
  for (const v1::CpuCore& c : d.cores()) {
    rows.push_back({std::to_string(c.cpu()), OrDash(c.capacity()), Mhz(c.max_freq_khz()),
                    OrDash(c.uarch()), Hex(c.midr()), OrDash(c.cluster_id(), -1),
                    OrDash(c.package_id(), -1)});
  }
  PrintTable({"CPU", "CAPACITY", "MAX_MHZ", "UARCH", "MIDR", "CLUSTER_ID", "PACKAGE"}, rows);
  if (d.notes_size() > 0) {
    std::cout << "\nnotes:\n";
    for (const std::string& note : d.notes()) std::cout << "  - " << note << "\n";
  }
}

}  // namespace psched::pschedctl
