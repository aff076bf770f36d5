// MakeHostBackend: the Backend pschedd serves with, chosen by the config's platform.
//
// With platform = "host": a CoExecBackend (daemon/backends/coexec_backend.h) over this machine's
// CPU devices and an optional OpenCL GPU. The CPU devices are the config's [[devices]] when it
// lists any, else one per core cluster that topology discovery (platform/cpu_topology.h,
// reading config.cpu_topology_root) finds among the cores this process may run on - a
// device runs each subtask on one thread per core of its cluster - else, when discovery
// fails, one device `cpu` on all those cores (daemon/backends/host_platform.h). What discovery
// found is in platform().discovery. Their runtime devices are opened here, once (the GPU's dispatch
// + sync overhead is measured then and planned with); a GPU that cannot be opened is left out, with
// the reason logged.
//
// With `platform = NAME` (a simulated profile): a SimulatedBackend
// (daemon/backends/simulated_backend.h), which plans for that profile and runs the whole graph with
// XNNPACK on one CPU device.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "daemon/engine/backend.h"
#include "daemon/engine/config.h"

namespace psched::daemon {

// INVALID_ARGUMENT / NOT_FOUND for a config naming an unknown profile or unusable devices.
absl::StatusOr<std::unique_ptr<Backend>> MakeHostBackend(const DaemonConfig& config);

}  // namespace psched::daemon
