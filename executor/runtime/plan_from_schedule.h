// From planning to running: turns a scheduler::Schedule into the runtime's ExecutionPlan and a
// platform::Platform into the runtime devices that execute it on this host.
//
// PlanFromSchedule keeps the scheduler's decisions exactly (partition plans, devices, per-device
// order by predicted start time); the runtime then runs each device's queue as fast as the
// dependencies allow, so measured times may drift from the predicted ones but never the order.
//
// PlatformDevices::Create builds one CpuDevice per CPU device (a worker and an XNNPACK
// threadpool of one thread per core of its cpu_cores, each thread pinned to its core: a core
// cluster runs every subtask on all its cores) and one OpenClRuntimeDevice for the GPU
// (DeviceSpec::opencl_device is its selector; "pthread" picks PoCL). The result owns the devices;
// runtimes built with its runtime_options() must be destroyed before it. Plain functions;
// thread-safe.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/runtime/coexecution_runtime.h"
#include "executor/runtime/device.h"
#include "executor/runtime/execution_plan.h"
#include "executor/runtime/opencl_runtime_device.h"
#include "model/graph.h"
#include "platform/platform.h"
#include "scheduler/schedule.h"

namespace psched::executor::runtime {

// One ExecutionPlan step per scheduled subtask; device d of the plan is device d of the
// schedule, steps ordered by predicted start (ties: op order). kInvalidArgument when the
// schedule does not fit `graph` (op count, op ids) or the resulting plan is not valid
// (ValidateExecutionPlan's message).
absl::StatusOr<ExecutionPlan> PlanFromSchedule(const model::Graph& graph,
                                               const scheduler::Schedule& schedule);

struct PlatformDeviceOptions {
  // Core the GPU's dispatcher (and PoCL's worker threads) is pinned to; negative: none.
  int gpu_core = -1;
  // Dispatch-overhead measurement iterations at GPU creation (0: skip).
  int gpu_overhead_iterations = 200;
  // Where the GPU keeps compiled OpenCL programs (opencl::OpenClDevice::SetProgramCacheDir);
  // "": compile on every start.
  std::string gpu_program_cache_dir;
};

class PlatformDevices {
 public:
  // kInvalidArgument for a platform with no device or more than one GPU; device creation
  // errors (no OpenCL device, bad core) name the device.
  static absl::StatusOr<std::unique_ptr<PlatformDevices>> Create(
      const platform::Platform& platform, const PlatformDeviceOptions& options = {});

  // In platform order, for CoExecutionRuntime::Create.
  const std::vector<Device*>& devices() const { return devices_; }
  std::vector<std::string> names() const;
  // Puts the arena in the GPU's SVM when the platform has a GPU.
  RuntimeOptions runtime_options() const;
  // The GPU device, or nullptr.
  OpenClRuntimeDevice* gpu() const { return gpu_; }
  // The GPU's measured dispatch + sync overhead, for predictor::ProfileOptions::gpu_dispatch_us.
  std::optional<double> gpu_dispatch_overhead_us() const {
    return gpu_ != nullptr ? gpu_->dispatch_overhead_us() : std::nullopt;
  }

 private:
  PlatformDevices() = default;

  std::vector<std::unique_ptr<Device>> owned_;
  std::vector<Device*> devices_;
  OpenClRuntimeDevice* gpu_ = nullptr;
};

}  // namespace psched::executor::runtime
