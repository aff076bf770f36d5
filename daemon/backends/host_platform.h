// The host platform's devices and latency model, as pschedd builds them from its config:
// the CPU devices (the config's [[devices]], else one per core cluster that topology
// discovery finds, else one device on every allowed core) and the `host` profile over
// them with an optional OpenCL GPU last. Pure functions over the config and /sys; used by
// MakeHostBackend only. Thread-safe.
#pragma once

#include <optional>
#include <vector>

#include "daemon/engine/backend.h"
#include "daemon/engine/config.h"
#include "predictor/analytic_model.h"
#include "predictor/profiles.h"

namespace psched::daemon {

// The host's CPU devices: the config's when it lists any, else one per discovered cluster,
// else (discovery failed) one device on every core this process may use. `discovery`
// receives what was found and where the devices came from.
std::vector<predictor::HostCpu> HostCpus(const DaemonConfig& config, DiscoveryInfo& discovery);

// The `host` profile for these devices: the CPU devices' names and core sets, the GPU last
// (left out when `gpu` is unset). `priors` (when given) receives each device's analytic
// parameters, calibration's start.
predictor::Profile HostPlatformProfile(
    const std::vector<predictor::HostCpu>& cpus, const std::optional<DeviceConfig>& gpu,
    const predictor::ProfileOptions& options = {},
    std::vector<predictor::AnalyticDeviceParams>* priors = nullptr);

}  // namespace psched::daemon
