#include "predictor/profiles.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "predictor/analytic_model.h"
#include "predictor/gbdt/embedded_models.h"
#include "predictor/gbdt/gbdt_latency_model.h"

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

absl::StatusOr<std::string> ModelFileText(const std::string& model_dir, const std::string& path) {
  if (model_dir.empty()) {
    std::optional<absl::string_view> embedded = gbdt::EmbeddedModelFile(path);
    if (!embedded.has_value()) {
      return absl::NotFoundError(
          absl::StrCat("model file ", path, " is not built in (make phone-models creates it)"));
    }
    return std::string(*embedded);
  }
  const std::string file = absl::StrCat(model_dir, "/", path);
  std::ifstream in(file, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open model file ", file));
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

absl::StatusOr<Profile> MeasuredProfile(const MeasuredPlatform& measured,
                                        const ProfileOptions& options) {
  Profile profile;
  profile.platform.name = measured.name;
  std::vector<gbdt::GbdtLatencyModel::DeviceSource> sources;
  for (const MeasuredDevice& d : measured.devices) {
    profile.platform.devices.push_back(
        DeviceSpec{d.name, d.gpu ? DeviceKind::kGpu : DeviceKind::kCpu, 0, {}, ""});
    const std::string path = absl::StrCat(measured.name, "/", d.name, ".gbdt");
    absl::StatusOr<std::string> text = ModelFileText(options.model_dir, path);
    if (!text.ok()) return text.status();
    gbdt::GbdtLatencyModel::DeviceSource source;
    source.name = d.name;
    source.source = options.model_dir.empty() ? absl::StrCat("embedded:", path)
                                              : absl::StrCat(options.model_dir, "/", path);
    source.text = *std::move(text);
    source.expected_device = d.measured_id;
    source.gpu = d.gpu;
    // The measured per-op times hold no co-execution synchronisation; add the paper's.
    source.extra_us = d.gpu ? options.gpu_dispatch_us.value_or(10.0) : 0.0;
    sources.push_back(std::move(source));
  }
  absl::StatusOr<std::unique_ptr<gbdt::GbdtLatencyModel>> model =
      gbdt::GbdtLatencyModel::Create(measured.name, std::move(sources));
  if (!model.ok()) return model.status();
  profile.model = *std::move(model);
  return profile;
}

}  // namespace

const std::vector<MeasuredPlatform>& MeasuredPlatforms() {
  // As the paper's device table: cpu.l is the large-core cluster, cpu.m the medium one. The
  // Pixel 4 (Snapdragon 855) has one prime core and three medium ones, of which the paper
  // uses two; the Galaxy S10 (Exynos 9820) has two large and two medium cores.
  static const std::vector<MeasuredPlatform> platforms = {
      {"pixel4-measured",
       "Pixel 4: Adreno 640 GPU, 1 large core, 2 medium cores (GBDT, measured)",
       {{"gpu", true, "pixel4/gpu", "tflite-gpu"},
        {"cpu.l", false, "pixel4/1large", ""},
        {"cpu.m", false, "pixel4/2med", ""}}},
      {"s10-measured",
       "Galaxy S10: Mali-G76 GPU, 2 large cores, 2 medium cores (GBDT, measured)",
       {{"gpu", true, "s10/gpu", "tflite-gpu-winograd"},
        {"cpu.l", false, "s10/2large", ""},
        {"cpu.m", false, "s10/2med", ""}}},
  };
  return platforms;
}

std::vector<std::string> ProfileNames() {
  std::vector<std::string> names;
  for (const MeasuredPlatform& m : MeasuredPlatforms()) names.push_back(m.name);
  for (const PhoneSpec& p : kPhones) names.emplace_back(p.name);
  names.emplace_back("host");
  return names;
}

std::string DescribeProfiles() {
  std::vector<std::string> lines;
  for (const MeasuredPlatform& m : MeasuredPlatforms()) {
    lines.push_back(absl::StrCat("  ", m.name, ": ", m.description));
  }
  for (const PhoneSpec& p : kPhones) {
    lines.push_back(absl::StrCat("  ", std::string(p.name),
                                 ": SYNTHETIC analytic roofline fitted to the paper's "
                                 "single-device ratios"));
  }
  lines.push_back("  host: this machine's CPU cores and OpenCL GPU (analytic until calibrated)");
  return absl::StrJoin(lines, "\n");
}

Profile HostProfile(const std::vector<HostCpu>& cpus, std::string opencl_device,
                    const ProfileOptions& options) {
  Profile profile;
  profile.platform.name = "host";
  // x86-64 and the ARM cores of the supported boards keep 64-byte lines coherent.
  profile.platform.cache_line_bytes = 64;
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
  for (const MeasuredPlatform& m : MeasuredPlatforms()) {
    if (m.name == name) return MeasuredProfile(m, options);
  }
  if (name == "host") return HostProfile(2, "", options);
  const std::string known = absl::StrJoin(ProfileNames(), ", ");
  return absl::NotFoundError(
      absl::StrCat("unknown platform profile '", std::string(name), "'; known: ", known));
}

}  // namespace psched::predictor
