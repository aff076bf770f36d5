#include "predictor/profiles.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "predictor/analytic_model.h"

namespace psched::predictor {
namespace {

using platform::DeviceKind;
using platform::DeviceSpec;

// Conv GFLOP/s of the three devices; everything else derives from them.
struct PhoneSpec {
  std::string_view name;
  double gpu_conv;
  double big_conv;
  double mid_conv;
  double gpu_bandwidth;
  double cpu_bandwidth;
};

// Fitted so that, averaged over 13 of the paper's workloads, whole-model single-device
// latencies relate as in the paper's simulation rows (paper-tables/simulation_full.csv):
// CPU(L)-only / GPU-only = 4.61 (paper 4.6), 4.83 (4.8), 2.99 (3.0), 2.28 (2.29) and
// CPU(M)-only / GPU-only = 4.23 (4.2), 4.00 (4.0), 1.85 (1.81), 2.45 (2.42) for oneplus11,
// motorola2022, pixel4, pixel5.
constexpr PhoneSpec kPhones[] = {
    {"oneplus11", 240.0, 41.0, 45.0, 40.0, 20.0},
    {"motorola2022", 220.0, 36.0, 44.0, 36.0, 18.0},
    {"pixel4", 130.0, 36.0, 60.0, 24.0, 16.0},
    {"pixel5", 75.0, 28.0, 26.0, 16.0, 12.0},
};

AnalyticDeviceParams GpuParams(double conv, double bandwidth, const ProfileOptions& options,
                               double default_dispatch_us = 10.0) {
  AnalyticDeviceParams p;
  p.name = "gpu";
  p.gpu = true;
  p.SetThroughput(conv, conv / 6.0, conv / 4.0, conv / 8.0);
  p.bandwidth_gbps = bandwidth;
  p.overhead_us = 2.0;
  p.concat_us = p.overhead_us;
  p.dispatch_us = options.gpu_dispatch_us.value_or(default_dispatch_us);
  p.half_parallelism = 4096.0;
  return p;
}

AnalyticDeviceParams CpuParams(std::string name, double conv, double bandwidth, int threads) {
  AnalyticDeviceParams p;
  p.name = std::move(name);
  p.SetThroughput(conv, conv / 5.0, conv / 2.5, conv / 4.0);
  p.bandwidth_gbps = bandwidth;
  p.overhead_us = 2.0 + threads;
  p.concat_us = p.overhead_us;
  p.half_parallelism = 128.0 * threads;
  return p;
}

Profile PhoneProfile(const PhoneSpec& spec, const ProfileOptions& options) {
  Profile profile;
  profile.platform.name = std::string(spec.name);
  profile.platform.devices = {DeviceSpec{"gpu", DeviceKind::kGpu, 0, {}, ""},
                              DeviceSpec{"cpu.l", DeviceKind::kCpu, 0, {}, ""},
                              DeviceSpec{"cpu.m", DeviceKind::kCpu, 0, {}, ""}};
  const int mid_threads = spec.name == "pixel5" ? 1 : 2;
  profile.model = std::make_shared<AnalyticModel>(
      std::string(spec.name),
      std::vector<AnalyticDeviceParams>{
          GpuParams(spec.gpu_conv, spec.gpu_bandwidth, options),
          CpuParams("cpu.l", spec.big_conv, spec.cpu_bandwidth, 1),
          CpuParams("cpu.m", spec.mid_conv, spec.cpu_bandwidth, mid_threads)});
  return profile;
}

}  // namespace

std::vector<std::string> ProfileNames() {
  std::vector<std::string> names;
  for (const PhoneSpec& p : kPhones) names.emplace_back(p.name);
  names.emplace_back("host");
  return names;
}

Profile HostProfile(const std::vector<HostCpu>& cpus, std::string opencl_device,
                    const ProfileOptions& options) {
  Profile profile;
  profile.platform.name = "host";
  std::vector<AnalyticDeviceParams> params;
  for (const HostCpu& cpu : cpus) {
    profile.platform.devices.push_back(DeviceSpec{cpu.name, DeviceKind::kCpu, 0, cpu.cores, ""});
    const int threads = std::max<int>(1, static_cast<int>(cpu.cores.size()));
    const double compute = cpu.relative_speed * (1.0 + 0.9 * (threads - 1));
    const double bandwidth = 1.0 + 0.5 * (threads - 1);
    params.push_back(CpuParams(cpu.name, 15.0 * compute, 8.0 * bandwidth, threads));
  }
  profile.platform.devices.push_back(
      DeviceSpec{"gpu", DeviceKind::kGpu, 0, {}, std::move(opencl_device)});
  // PoCL runs kernels on a CPU core: slow, and every enqueue costs more than on a phone.
  AnalyticDeviceParams gpu = GpuParams(6.0, 8.0, options, 30.0);
  gpu.half_parallelism = 1024.0;
  params.push_back(gpu);
  profile.model = std::make_shared<AnalyticModel>("host", std::move(params));
  return profile;
}

Profile HostProfile(int cpu_cores, std::string opencl_device, const ProfileOptions& options) {
  std::vector<HostCpu> cpus;
  for (int core = 0; core < cpu_cores; ++core) {
    cpus.push_back(HostCpu{absl::StrCat("cpu.", core), {core}, 1.0});
  }
  return HostProfile(cpus, std::move(opencl_device), options);
}

absl::StatusOr<Profile> LoadProfile(std::string_view name, const ProfileOptions& options) {
  if (options.gpu_dispatch_us.has_value() &&
      !(std::isfinite(*options.gpu_dispatch_us) && *options.gpu_dispatch_us >= 0)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "gpu_dispatch_us must be a finite value >= 0, got ", *options.gpu_dispatch_us));
  }
  for (const PhoneSpec& p : kPhones) {
    if (p.name == name) return PhoneProfile(p, options);
  }
  if (name == "host") return HostProfile(2, "", options);
  const std::string known = absl::StrJoin(ProfileNames(), ", ");
  return absl::NotFoundError(
      absl::StrCat("unknown platform profile '", std::string(name), "'; known: ", known));
}

}  // namespace psched::predictor
