// Which devices of the host's platform run plans together during calibration, the platform
// those plans are made for, and the plans themselves.
//
// Host calibration probes the usable CPU devices together, then the GPU beside the first of them
// (its waits and signals run in its own queue, so an edge between it and a host thread costs
// something else than one between two host threads). The run-cost probes (run_cost_calibration.h)
// run plans of these subsets; the planned cases (planned_cases.h) time what those plans put on
// each device; both make their plans with PlanProbes, so the cases timed are the probes' own.
// Pure functions apart from `plan`; thread-safe when it is.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "model/graph.h"
#include "platform/platform.h"
#include "predictor/latency_model.h"
#include "scheduler/problem.h"
#include "scheduler/schedule.h"

namespace psched::calibration {

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

// Plans `problem` with the scheduling method named `method` ("heft", "single:cpu.0", ...).
using PlanFn = std::function<absl::StatusOr<scheduler::Schedule>(const scheduler::Problem& problem,
                                                                 const std::string& method)>;

struct ProbePlan {
  size_t graph = 0;  // index into the graphs planned
  std::string method;
  scheduler::Schedule schedule;  // device i is the platform's device i
};

// Each of `graphs` planned for `platform` with `model`'s predictions: on every device alone
// ("single:<name>", left out for a device without a kernel for one of the graph's ops: the
// GPU and a transformer), then, with two or more devices, with each of `methods`; graph by graph,
// in that order. Errors name the graph and method after `what` ("run costs: planning chain with
// single:cpu.0: ...").
absl::StatusOr<std::vector<ProbePlan>> PlanProbes(std::span<const model::Graph> graphs,
                                                  const platform::Platform& platform,
                                                  const predictor::LatencyModel& model,
                                                  const PlanFn& plan,
                                                  std::span<const std::string> methods,
                                                  absl::string_view what);

}  // namespace psched::calibration
