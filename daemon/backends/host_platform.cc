#include "daemon/backends/host_platform.h"

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "platform/cpu_topology.h"
#include "platform/sysfs_cpu.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

// The first `n` devices of another latency model: the host profile without its GPU.
class DevicePrefixModel final : public predictor::LatencyModel {
 public:
  DevicePrefixModel(std::shared_ptr<const predictor::LatencyModel> inner, int n)
      : inner_(std::move(inner)), n_(n) {}
  int num_devices() const override { return n_; }
  double PredictUs(const predictor::OpConfig& config, int device_index) const override {
    return inner_->PredictUs(config, device_index);
  }
  std::string Version() const override { return absl::StrCat(inner_->Version(), ";first=", n_); }

 private:
  std::shared_ptr<const predictor::LatencyModel> inner_;
  int n_;
};

// A core's speed against the fastest core discovery saw (cpu_capacity / the largest one),
// averaged over `cores`; 1 when the topology does not know their capacity.
double RelativeSpeed(const std::optional<platform::CpuTopology>& topology,
                     const std::vector<int>& cores) {
  if (!topology.has_value()) return 1.0;
  int64_t fastest = 0;
  std::map<int, int64_t> capacity;
  for (const platform::CpuCore& core : topology->cores) {
    if (!core.capacity.has_value() || *core.capacity <= 0) continue;
    capacity[core.cpu] = *core.capacity;
    fastest = std::max(fastest, *core.capacity);
  }
  double sum = 0;
  for (int core : cores) {
    auto it = capacity.find(core);
    if (it == capacity.end()) return 1.0;
    sum += static_cast<double>(it->second) / static_cast<double>(fastest);
  }
  return cores.empty() ? 1.0 : sum / static_cast<double>(cores.size());
}

}  // namespace

std::vector<predictor::HostCpu> HostCpus(const DaemonConfig& config, DiscoveryInfo& discovery) {
  platform::TopologyOptions options;
  options.sysfs_cpu_root = config.cpu_topology_root;
  // libcpuinfo describes this machine: its names must not be put on another tree's cores.
  options.live_names = config.cpu_topology_root == platform::TopologyOptions().sysfs_cpu_root;
  options.allowed_cpus = platform::ProcessAffinityCpus();
  absl::StatusOr<platform::CpuTopology> topology = platform::DiscoverCpuTopology(options);
  if (topology.ok()) {
    discovery.topology = std::move(*topology);
  } else {
    discovery.error = std::string(topology.status().message());
  }

  std::vector<predictor::HostCpu> cpus;
  for (const DeviceConfig& device : config.devices) {
    if (device.kind == "cpu") {
      cpus.push_back({device.name, device.cores, RelativeSpeed(discovery.topology, device.cores)});
    }
  }
  if (!cpus.empty()) {
    discovery.cpu_devices_from = "config";
  } else if (discovery.topology.has_value()) {
    discovery.cpu_devices_from = "discovered";
    for (const platform::DeviceSpec& device : platform::ClusterDevices(*discovery.topology)) {
      cpus.push_back(
          {device.name, device.cpu_cores, RelativeSpeed(discovery.topology, device.cpu_cores)});
    }
  } else {
    discovery.cpu_devices_from = "fallback";
    std::vector<int> cores = options.allowed_cpus.value_or(std::vector<int>{0});
    spdlog::warn("CPU topology discovery failed ({}); one device 'cpu' on cores {}",
                 discovery.error, absl::StrJoin(cores, ","));
    cpus.push_back({"cpu", std::move(cores), 1.0});
  }
  return cpus;
}

predictor::Profile HostPlatformProfile(const std::vector<predictor::HostCpu>& cpus,
                                       const std::optional<DeviceConfig>& gpu,
                                       const predictor::ProfileOptions& options,
                                       std::vector<predictor::AnalyticDeviceParams>* priors) {
  predictor::Profile profile =
      predictor::HostProfile(cpus, gpu.has_value() ? gpu->opencl_device : "", options);
  if (gpu.has_value()) profile.platform.devices.back().name = gpu->name;
  if (priors != nullptr) {
    const auto* analytic = dynamic_cast<const predictor::AnalyticModel*>(profile.model.get());
    for (int d = 0; d < profile.platform.num_devices(); ++d) {
      if (!gpu.has_value() && d == profile.platform.num_devices() - 1) break;
      predictor::AnalyticDeviceParams params;
      if (analytic != nullptr) params = analytic->device(d);
      params.name = profile.platform.devices[static_cast<size_t>(d)].name;
      priors->push_back(std::move(params));
    }
  }
  if (!gpu.has_value()) {
    profile.platform.devices.pop_back();
    profile.model = std::make_shared<DevicePrefixModel>(
        profile.model, static_cast<int>(profile.platform.devices.size()));
  }
  return profile;
}

}  // namespace psched::daemon
