// Named platforms with their latency models.
//
// Data-backed (measured) platforms: `pixel4-measured` and `s10-measured` predict with GBDT
// models (predictor/gbdt) trained by psched-train from the phones' measurements in
// mobile-ml-benchmark - per-op GPU latencies of the TFLite GPU delegate, and CPU cluster
// models fitted to whole-model latencies. Their model files live in predictor/models and are
// built into the binary (predictor/models/<platform>/TRAINING.md has their held-out error).
//
// Synthetic platforms: the phone profiles `oneplus11`, `motorola2022`, `pixel4`, `pixel5` are
// analytic rooflines, not measurements: three logical devices named `gpu`, `cpu.l`, `cpu.m`
// in one memory domain, with throughputs fitted so whole-model single-device latencies relate
// as the paper's single-device rows (GPU-only 2.3-4.8x faster than cpu.l-only; cpu.m-only
// 0.6-1.1x the time of cpu.l-only). `host` describes a development machine: two single-core
// CPU devices `cpu.0`, `cpu.1` and a `gpu` served by PoCL, with conservative numbers
// (pschedd builds it from the discovered clusters instead).
// Profiles are values; the model is shared and immutable.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "platform/platform.h"
#include "predictor/latency_model.h"

namespace psched::predictor {

struct Profile {
  platform::Platform platform;
  std::shared_ptr<const LatencyModel> model;  // device i predicts platform.devices[i]
};

struct ProfileOptions {
  // The constant added to every GPU subtask for its synchronisation kernel (paper sec.
  // 2.1: 10 us on the phones). Unset: the profile's own value (10 us; 30 us for PoCL).
  std::optional<double> gpu_dispatch_us;
  // Measured platforms: read <model_dir>/<platform>/<device>.gbdt instead of the model files
  // built into the binary (e.g. fresh psched-train output). Empty: the built-in ones.
  std::string model_dir = {};
};

// A device of a data-backed platform: which measured device its model was trained for.
struct MeasuredDevice {
  std::string name;  // the platform's device name: "gpu", "cpu.l", "cpu.m"
  bool gpu = false;
  std::string measured_id;  // the device in the data: "pixel4/gpu", "pixel4/1large"
  std::string dispatch;     // GPU: the dispatch scheme of its model (predictor/gbdt/dispatch.h)
};

struct MeasuredPlatform {
  std::string name;         // "pixel4-measured"
  std::string description;  // one line for --help
  std::vector<MeasuredDevice> devices;
};

// Every data-backed platform, in ProfileNames() order.
const std::vector<MeasuredPlatform>& MeasuredPlatforms();

// The names LoadProfile accepts.
std::vector<std::string> ProfileNames();
// One line per profile: its name and whether it is measured or synthetic (for --help).
std::string DescribeProfiles();

// NotFound (listing the known names) for an unknown profile; InvalidArgument for a
// negative or non-finite dispatch overhead, and, for a measured platform, a model file that
// is missing, malformed or trained for another device (the message names the file and line).
absl::StatusOr<Profile> LoadProfile(std::string_view name, const ProfileOptions& options = {});

// A CPU device of the `host` profile: a core cluster (or one core) running each subtask on
// one thread per core.
struct HostCpu {
  std::string name;
  std::vector<int> cores;
  // A core's speed against the machine's fastest (cpu_capacity / 1024); 1 when unknown.
  double relative_speed = 1.0;
};

// The `host` profile for these CPU devices plus a `gpu` on `opencl_device` (empty: the
// default OpenCL device). Until calibration measures them, a device's priors scale one core's
// numbers by its relative speed and its thread count: n threads compute 1 + 0.9 (n - 1) times
// as fast as one (XNNPACK's GEMMs scale nearly linearly; the threadpool's fork and join is
// in the per-op overhead, which grows with n) and stream 1 + 0.5 (n - 1) times the bytes
// (cores share the memory bus).
Profile HostProfile(const std::vector<HostCpu>& cpus, std::string opencl_device = "",
                    const ProfileOptions& options = {});

// `cpu_cores` single-core CPU devices cpu.0..cpu.N-1 pinned to those cores, plus the gpu.
Profile HostProfile(int cpu_cores = 2, std::string opencl_device = "",
                    const ProfileOptions& options = {});

}  // namespace psched::predictor
