// Device: one logical device of the co-execution runtime (a CPU core set, a GPU).
//
// The runtime owns the shared activation arena and the plan; a device only compiles
// subtasks against views into that arena and runs jobs on its own thread, in submission
// order. The CPU implementation is CpuDevice; a GPU backend implements the same interface
// (its thread drives the GPU queue and waits for each kernel, so a subtask's Run returns
// when the data is visible to the host).
//
// Thread-safety: Compile and Post may be called from any thread; a subtask's Run is only
// called from the device's own thread.
#pragma once

#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/cpu/cpu_kernel.h"
#include "model/graph.h"

namespace psched::executor::runtime {

// One compiled slice of one op on one device.
class Subtask {
 public:
  virtual ~Subtask() = default;
  virtual absl::Status Run() = 0;
  // The device's own measure of the last Run's execution time (a GPU kernel's profiled
  // duration), in microseconds; nullopt when the device has none beyond wall-clock time.
  virtual std::optional<double> last_device_us() const { return std::nullopt; }
};

class Device {
 public:
  virtual ~Device() = default;

  virtual const std::string& name() const = 0;
  // Called once before any Compile with the shared arena every view points into; a GPU
  // device maps view pointers to offsets from `base`. No-op for CPU devices.
  virtual absl::Status BindArena(float* base, size_t floats) { return absl::OkStatus(); }
  // Compiles op `id`'s `slice` reading `inputs` (one view per activation input, in op.inputs
  // order) and writing `output` (the whole op's output view). cin slices add into the
  // output while holding `accumulate_mu`, which all slices of that op share; the runtime
  // zeroes the output before and applies the fused activation after them.
  virtual absl::StatusOr<std::unique_ptr<Subtask>> Compile(const model::Graph& graph,
                                                           model::OpId id, cpu::WorkSlice slice,
                                                           std::span<const cpu::TensorView> inputs,
                                                           const cpu::TensorView& output,
                                                           std::mutex* accumulate_mu) = 0;
  // Runs `job` on the device's thread without waiting; jobs run in submission order.
  virtual void Post(std::function<void()> job) = 0;
};

}  // namespace psched::executor::runtime
