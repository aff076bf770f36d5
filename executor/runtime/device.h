// Device: one logical device of the co-execution runtime (a CPU core set, a GPU).
//
// The runtime owns the shared activation arena and the plan; a device only compiles
// subtasks against views into that arena and runs jobs on its own thread, in submission
// order. The CPU implementation is CpuDevice; a GPU backend implements the same interface.
//
// Dependencies between devices go through the runtime's counters (one int32 per op, counting
// finished subtasks, in memory every device can update atomically). A subtask either Runs on
// its device's thread after the runtime has waited for its inputs on the host, or - on a
// device with its own command queue and atomics on the counters (a GPU with fine-grained SVM
// atomics) - is Enqueued with its waits and its completion signal, so the queue synchronises
// with the CPU devices without a host round trip (paper, Appendix A).
//
// Thread-safety: Compile and Post may be called from any thread; a subtask's Run is only
// called from the device's own thread, or from a caller the device lets run a job in its place
// (TryRunHere), which it then runs no job beside.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/common/arena_plan.h"
#include "executor/common/tensor_view.h"
#include "executor/common/work_slice.h"
#include "model/graph.h"

namespace psched::executor::runtime {

// Memory a device allocates for a runtime (the arena, the dependency counters) together with
// what keeps it alive: the runtime holds `owner` for as long as it uses `data`, so the memory
// outlives the runtime even when none of its subtasks runs on the allocating device.
template <typename T>
struct SharedMemory {
  T* data = nullptr;
  std::shared_ptr<void> owner;  // null: the caller keeps `data` alive some other way
};

// "Wait until dependency counter `counter` has reached `target`."
struct CounterWait {
  size_t counter = 0;
  int32_t target = 0;
};

// When enqueued work ran, on the std::chrono::steady_clock, in nanoseconds.
struct TimeSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
};

// One compiled slice of one op on one device.
class Subtask {
 public:
  virtual ~Subtask() = default;
  // Runs the slice to completion on the calling (device) thread; its output is then visible
  // to every device.
  virtual absl::Status Run() = 0;
  // The device's own measure of the last run's execution time (a GPU kernel's profiled
  // duration), in microseconds; nullopt when the device has none beyond wall-clock time.
  virtual std::optional<double> last_device_us() const { return std::nullopt; }

  // True when the arena is not coherent between this device and the host (coarse-grained SVM,
  // mapped buffers): the device unmaps it for the length of Run, so the runtime lets no other
  // subtask touch the arena meanwhile - CPU and GPU take turns.
  virtual bool takes_arena_turns() const { return false; }
  // True when the subtask can run from the device's command queue: Enqueue instead of Run.
  virtual bool can_enqueue() const { return false; }
  // Enqueues, in the device's queue and in this order, a wait for each of `waits`, the slice,
  // and an atomic +1 on counter `signal`, and returns without waiting for any of it.
  // `release` is the counter the runtime sets once no host thread will add to any counter in
  // this run: a wait still short of its target then can never be met and fails (a lost
  // signal is an error, decided without a clock). `wake_host`: host threads may be parked on
  // counter `signal` (FutexWait); wake them once the signal has landed.
  virtual absl::Status Enqueue(std::span<const CounterWait> waits, size_t signal, size_t release,
                               bool wake_host) {
    return absl::UnimplementedError("this subtask cannot be enqueued");
  }
  // After Device::Finish: the status of the last enqueued run (an error when it, or a wait
  // before it, failed).
  virtual absl::Status CollectEnqueued() {
    return absl::UnimplementedError("this subtask cannot be enqueued");
  }
  // When the last run (Run, or Enqueue once collected) executed on the device by the device's
  // own clock mapped onto the host's; nullopt when the device has no clock of its own, so the
  // host's timestamps around Run are the truth.
  virtual std::optional<TimeSpan> last_span() const { return std::nullopt; }
};

class Device {
 public:
  virtual ~Device() = default;

  virtual const std::string& name() const = 0;
  // Called once before any Compile with the shared arena every view points into and where each
  // tensor of the graph lives in it (indexed by TensorId; tensors may share memory, as the
  // runtime's plan orders them); a GPU device maps view pointers to offsets from `base`. No-op
  // for CPU devices.
  virtual absl::Status BindArena(float* base, size_t floats,
                                 std::span<const TensorPlacement> placements) {
    return absl::OkStatus();
  }
  // Called once before any Compile with the runtime's `count` dependency counters (one per op
  // and the release word). A device that can update them from its own queue (they came from
  // its allocator) compiles subtasks that can_enqueue(); any other device ignores them.
  virtual absl::Status BindCounters(int32_t* counters, size_t count) { return absl::OkStatus(); }
  // Compiles op `id`'s `slice` reading `inputs` (one view per activation input, in op.inputs
  // order) and writing `output` (the whole op's output view). A cin slice adds its partial
  // sums into `output`, which is then either the op's output or a partial buffer of the same
  // shape that only this slice writes (no other slice touches the memory it adds into); the
  // runtime zeroes it before, and combines the partials and applies the fused activation
  // after the last slice.
  virtual absl::StatusOr<std::unique_ptr<Subtask>> Compile(const model::Graph& graph,
                                                           model::OpId id, WorkSlice slice,
                                                           std::span<const TensorView> inputs,
                                                           const TensorView& output) = 0;
  // Whether the device compiles a whole conv and the residual Add after it as one subtask.
  virtual bool FusesResidualAdds() const { return false; }
  // Compiles whole conv `conv` and the residual Add `add` that follows it as one subtask
  // (executor/cpu/residual_added_conv.h): `inputs` are the conv's activation inputs, then the
  // conv's output and the residual; `output` is the add's. REQUIRES: FusesResidualAdds().
  virtual absl::StatusOr<std::unique_ptr<Subtask>> CompileResidualAddedConv(
      const model::Graph& graph, model::OpId conv, model::OpId add,
      std::span<const TensorView> inputs, const TensorView& output) {
    return absl::UnimplementedError("this device does not fuse residual adds");
  }
  // Runs `job` on the device's thread without waiting; jobs run in submission order.
  virtual void Post(std::function<void()> job) = 0;
  // Whether the calling thread is on a core of the device's thread, or on another core of a
  // cluster it can free (a hint: which device's job a caller might run itself).
  virtual bool CallerOnItsCores() const { return false; }
  // Runs `job` on the calling thread, in the device thread's place, when that changes nothing:
  // the device has no job queued or running and the caller is on its thread's core, or on
  // another core of a cluster that the device frees for it (pinned there for the job). False,
  // without running `job`, otherwise; the caller then Posts it.
  virtual bool TryRunHere(const std::function<void()>& job) { return false; }
  // Runs fn(i) for every i in [0, n) across the device's cores, the calling thread among them,
  // and returns when every call has. Called in a job the device runs (on its thread, or on a
  // caller in its place); on the caller alone by default.
  virtual void ParallelFor(size_t n, absl::FunctionRef<void(size_t)> fn) {
    for (size_t i = 0; i < n; ++i) fn(i);
  }
  // Blocks until everything enqueued so far has executed. Called on the device's thread.
  virtual absl::Status Finish() { return absl::OkStatus(); }
};

}  // namespace psched::executor::runtime
