// HostBackend: the real engine pieces behind daemon::Backend — model/ imports ONNX,
// predictor/ + scheduler/ plan for the configured platform, executor/ runs inference.
//
// The platform is the `host` profile (predictor::HostProfile) shaped by the config's
// [[devices]] (CPU devices by core set, an optional OpenCL GPU) or, with `platform = NAME`,
// a named simulated profile (planning only makes sense there; inference still runs on this
// machine's CPU). Inference runs the whole graph with XNNPACK on the first CPU device's
// cores (executor::cpu::CpuGraphExecutor, compiled once when the model loads); executing
// the plan across devices with the co-execution runtime is the next step.
//
// Thread-safety: Load/CheckScheduler/Plan are thread-safe; Run is called by one thread.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "daemon/backend.h"
#include "daemon/config.h"

namespace psched::daemon {

// INVALID_ARGUMENT / NOT_FOUND for a config naming an unknown profile or unusable devices.
absl::StatusOr<std::unique_ptr<Backend>> MakeHostBackend(const DaemonConfig& config);

}  // namespace psched::daemon
