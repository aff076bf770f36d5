// Which devices of the host's platform run plans together during calibration, and the platform
// those plans are made for.
//
// Host calibration probes the usable CPU devices together, then the GPU beside the first of them
// (its waits and signals run in its own queue, so an edge between it and a host thread costs
// something else than one between two host threads). The run-cost probes (run_cost_calibration.h)
// run plans of these subsets; the planned cases (planned_cases.h) time what those plans put on
// each device. Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "platform/platform.h"

namespace psched::executor::run_calibration {

struct DeviceSubset {
  std::vector<int> indices;  // into the platform's devices, in its order
  std::string suffix;        // "cpus" or "gpu": names the subset's platform
  // Core the GPU's dispatcher is pinned to: one of another CPU device's cores, off the probed
  // one's, as psched_coexec_bench's platform B has it. Negative: not pinned, or no GPU.
  int gpu_core = -1;
};

// The usable (`usable[d]`; every device when empty) CPU devices together, then, with a usable
// GPU, the first of them and the first GPU. Empty without a usable CPU device.
std::vector<DeviceSubset> HostProbeSubsets(const platform::Platform& platform,
                                           const std::vector<bool>& usable);

// `platform` with only the subset's devices (its cache line and bandwidth kept), named
// "<platform>-<suffix>"; a GPU names the OpenCL device per-op calibration timed.
platform::Platform SubsetPlatform(const platform::Platform& platform, const DeviceSubset& subset);

}  // namespace psched::executor::run_calibration
