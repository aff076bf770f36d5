// Named platforms with their latency models.
//
// The phone profiles (`oneplus11`, `motorola2022`, `pixel4`, `pixel5`) are analytic
// stand-ins for the paper's devices until measured GBDT predictors exist: three logical
// devices named `gpu`, `cpu.l`, `cpu.m` in one memory domain, with throughputs fitted so
// whole-model single-device latencies relate as the paper's single-device rows (GPU-only
// 2.3-4.8x faster than cpu.l-only; cpu.m-only 0.6-1.1x the time of cpu.l-only). `host` describes a
// development machine: two single-core CPU devices `cpu.0`, `cpu.1` and a `gpu` served by
// PoCL, with conservative numbers. Profiles are values; the model is shared and immutable.
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
};

// The names LoadProfile accepts.
std::vector<std::string> ProfileNames();

// NotFound (listing the known names) for an unknown profile; InvalidArgument for a
// negative or non-finite dispatch overhead.
absl::StatusOr<Profile> LoadProfile(std::string_view name, const ProfileOptions& options = {});

// The `host` profile: `cpu_cores` single-core CPU devices cpu.0..cpu.N-1 pinned to those
// cores, plus a `gpu` on `opencl_device` (empty: the default OpenCL device).
Profile HostProfile(int cpu_cores = 2, std::string opencl_device = "",
                    const ProfileOptions& options = {});

}  // namespace psched::predictor
