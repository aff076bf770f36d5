// HostBackend: the real engine pieces behind daemon::Backend — model/ imports ONNX,
// predictor/ + scheduler/ plan for the configured platform, executor/ runs inference.
//
// With platform = "host" the platform is the `host` profile (predictor::HostProfile) over
// this machine's CPU devices and an optional OpenCL GPU. The CPU devices are the config's
// [[devices]] when it lists any, else one per core cluster that topology discovery
// (platform/cpu_topology.h, reading config.cpu_topology_root) finds among the cores this
// process may run on - a device runs each subtask on one thread per core of its cluster -
// else, when discovery fails, one device `cpu` on all those cores. What discovery found is
// in platform().discovery.
// Their runtime devices are opened once at creation (the GPU's dispatch + sync overhead is
// measured then and planned with); a GPU that cannot be opened is left out, with the reason
// logged. Inference executes the plan across them with the co-execution runtime
// (executor "coexec"): each distinct plan of a model is compiled once (kernels created,
// weights packed) on first use and reused by later Infer calls. Calibrate times the
// registered models' ops on these devices (alone and under co-run load) and trains the host
// model (executor/calibration/host_training.h: GBDT or the analytic fit per op family);
// UseCalibration switches planning to it.
//
// With `platform = NAME` (a simulated profile) planning targets that profile and inference
// runs the whole graph with XNNPACK on this machine's first CPU core (executor "cpu").
//
// Thread-safety: Load/CheckScheduler/Plan/UseCalibration/platform are thread-safe; Run and
// Calibrate are called by the inference queue's one worker.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "daemon/backend.h"
#include "daemon/config.h"

namespace psched::daemon {

// INVALID_ARGUMENT / NOT_FOUND for a config naming an unknown profile or unusable devices.
absl::StatusOr<std::unique_ptr<Backend>> MakeHostBackend(const DaemonConfig& config);

}  // namespace psched::daemon
