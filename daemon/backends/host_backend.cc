#include "daemon/backends/host_backend.h"

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/backends/coexec_backend.h"
#include "daemon/backends/host_platform.h"
#include "daemon/backends/simulated_backend.h"
#include "platform/cpu_topology.h"
#include "platform/sysfs_cpu.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {

namespace rt = executor::runtime;

absl::StatusOr<std::unique_ptr<Backend>> MakeHostBackend(const DaemonConfig& config) {
  if (config.platform != "host") {
    absl::StatusOr<predictor::Profile> profile = predictor::LoadProfile(config.platform);
    if (!profile.ok()) return profile.status();
    if (!config.devices.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "[[devices]] only applies to platform = \"host\", not '", config.platform, "'"));
    }
    return std::make_unique<SimulatedBackend>(std::move(*profile));
  }

  DiscoveryInfo discovery;
  const std::vector<predictor::HostCpu> cpus = HostCpus(config, discovery);
  std::optional<DeviceConfig> gpu;
  if (config.devices.empty()) gpu = DeviceConfig{"gpu", "gpu", {}, ""};
  for (const DeviceConfig& device : config.devices) {
    if (device.kind == "cpu") continue;
    if (gpu.has_value()) {
      return absl::InvalidArgumentError("the host platform supports at most one GPU device");
    }
    gpu = device;
  }
  for (const predictor::HostCpu& cpu : cpus) {
    if (gpu.has_value() && cpu.name == gpu->name) {
      return absl::InvalidArgumentError(
          absl::StrCat("the GPU device's name '", gpu->name, "' is a CPU device's name"));
    }
  }

  rt::PlatformDeviceOptions device_options;
  if (gpu.has_value() && !gpu->cores.empty()) device_options.gpu_core = gpu->cores.front();
  device_options.gpu_program_cache_dir = config.state_dir + "/opencl-programs";
  absl::StatusOr<std::unique_ptr<rt::PlatformDevices>> devices = absl::UnknownError("");
  if (gpu.has_value()) {
    devices = rt::PlatformDevices::Create(HostPlatformProfile(cpus, gpu).platform, device_options);
    if (!devices.ok()) {
      spdlog::warn("GPU '{}' (OpenCL selector '{}') is not used: {}; running on the CPUs only",
                   gpu->name, gpu->opencl_device, std::string(devices.status().message()));
      gpu.reset();
    }
  }
  if (!gpu.has_value()) {
    devices = rt::PlatformDevices::Create(HostPlatformProfile(cpus, gpu).platform, device_options);
    if (!devices.ok()) return devices.status();
  }
  predictor::ProfileOptions profile_options;
  if (std::optional<double> overhead = (*devices)->gpu_dispatch_overhead_us()) {
    profile_options.gpu_dispatch_us = *overhead;
    spdlog::info("GPU dispatch + sync overhead measured at {:.1f} us; planning with it", *overhead);
  }
  std::vector<predictor::AnalyticDeviceParams> priors;
  predictor::Profile profile = HostPlatformProfile(cpus, gpu, profile_options, &priors);
  std::shared_ptr<rt::PlatformDevices> shared(std::move(*devices));
  std::vector<std::string> described;
  for (const platform::DeviceSpec& spec : profile.platform.devices) {
    described.push_back(
        spec.kind == platform::DeviceKind::kCpu
            ? absl::StrCat(spec.name, " (cores ", platform::FormatCpuList(spec.cpu_cores), ")")
            : spec.name);
  }
  spdlog::info("co-execution on {}; CPU devices {}", absl::StrJoin(described, ", "),
               discovery.cpu_devices_from);
  return std::make_unique<CoExecBackend>(std::move(profile), std::move(shared), std::move(priors),
                                         std::move(discovery));
}

}  // namespace psched::daemon
