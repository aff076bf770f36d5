// OpenClRuntimeDevice: the GPU as a co-execution runtime Device, backed by one OpenCL device
// (opencl::OpenClDevice) whose kernels read and write the runtime's shared arena in place.
//
// The arena comes from ArenaAllocator() (pass it as RuntimeOptions::allocate_arena). In
// fine-grained SVM, the best mode, CPU kernels and GPU kernels touch it concurrently with no
// copies (paper sec. 2.1). A device without it gets coarse-grained SVM or a mapped buffer: the
// arena stays mapped for the host, and each GPU subtask unmaps it, runs, and maps it back while
// the runtime keeps every other subtask off it (takes_arena_turns) - still no copies, but CPU
// and GPU no longer overlap. Compile turns the runtime's views into arena offsets and pixel strides
// and builds one opencl::OpKernel per subtask (weights uploaded once per op).
//
// Synchronisation (paper, Appendix A): with CounterAllocator() as
// RuntimeOptions::allocate_counters and a device with SVM atomics, the runtime's dependency
// counters live in fine-grained SVM and subtasks are enqueued ahead: each is a psched_wait
// kernel per CPU predecessor, the op's kernels, and a psched_signal kernel
// (opencl::DependencyCounters), so the GPU queue waits for CPU work and publishes its own
// without the host. A wait has no time budget: it ends when its counter is met, or fails when
// the runtime's release word says no CPU work is left to meet it; a signal that CPU threads
// may be parked on wakes them from the event's completion callback. Otherwise (no SVM atomics,
// counters in host memory, or in_queue_sync=false) a subtask Runs from the dispatcher thread: the
// host waits for its inputs, enqueues its kernel and waits for the event. The runtime runs cin
// slices that way too (the last slice of an op combines the partial sums on the host); a cin slice
// adds into its own partial buffer when the runtime gives it one (KernelOptions::partial_output),
// so it never waits for the CPU's slices. Both ways record each kernel's profiled device time.
//
// Create measures the dispatch + sync overhead of one kernel round trip
// (opencl::MeasureDispatchOverheadUs), which planning uses as the predictor's per-GPU-subtask
// constant (predictor::ProfileOptions::gpu_dispatch_us).
//
// Ownership: owns the OpenCL device and its dispatcher thread. Arenas and counters handed out
// by the allocators are shared: the runtime holds them (SharedMemory::owner), and so do the
// subtasks compiled against them; none may outlive this device. Thread-safety: as Device; the
// allocators' functions may be called from any thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "executor/common/pinned_worker.h"
#include "executor/opencl/opencl_device.h"
#include "executor/opencl/svm_arena.h"
#include "executor/opencl/sync_kernels.h"
#include "executor/runtime/device.h"
#include "sync/mutex.h"

namespace psched::executor::runtime {

struct OpenClRuntimeDeviceOptions {
  // Which OpenCL device (opencl::DeviceSelector::Parse syntax): "" picks the first GPU-type
  // device; "pthread" picks PoCL's CPU device on development machines.
  std::string selector;
  // Core the dispatcher thread is pinned to; the OpenCL driver's own worker threads started
  // while opening the device are pinned there too (PoCL's pthread device computes on them, so
  // this is what keeps the "GPU" on its own core). Negative: no pinning.
  int core = -1;
  // Iterations of the dispatch-overhead measurement at creation; 0 skips it.
  int overhead_iterations = 200;
  // Wait and signal through sync kernels in the command queue where the device has SVM
  // atomics; false forces the host-side waits (comparisons, debugging).
  bool in_queue_sync = true;
  // Arena memory; unset picks the best the device has (opencl::BestMemoryMode).
  std::optional<opencl::MemoryMode> arena_mode = std::nullopt;
  // opencl::OpenClDevice::SetProgramCacheDir; "": none.
  std::string program_cache_dir;
};

class OpenClRuntimeDevice final : public Device {
 public:
  // `name` is the logical device name ("gpu"). kNotFound / kUnavailable when no OpenCL device
  // matches; kFailedPrecondition when it lacks the requested arena_mode.
  static absl::StatusOr<std::unique_ptr<OpenClRuntimeDevice>> Create(
      std::string name, const OpenClRuntimeDeviceOptions& options = {});
  ~OpenClRuntimeDevice() override;

  const std::string& name() const override { return name_; }
  absl::Status BindArena(float* base, size_t floats,
                         std::span<const TensorPlacement> placements) override;
  absl::StatusOr<std::unique_ptr<Subtask>> Compile(const model::Graph& graph, model::OpId id,
                                                   WorkSlice slice,
                                                   std::span<const TensorView> inputs,
                                                   const TensorView& output) override;
  absl::Status BindCounters(int32_t* counters, size_t count) override;
  void Post(std::function<void()> job) override;
  absl::Status Finish() override;

  // RuntimeOptions::allocate_arena for runtimes this device takes part in, in arena_mode()
  // (mapped for the host between GPU subtasks when that is not fine-grained SVM).
  std::function<absl::StatusOr<SharedMemory<float>>(size_t floats)> ArenaAllocator();
  // RuntimeOptions::allocate_counters: fine-grained SVM with atomics where the device has
  // them (and in_queue_sync is on), host memory otherwise.
  std::function<absl::StatusOr<SharedMemory<int32_t>>(size_t count)> CounterAllocator();
  // True when subtasks compiled from now on wait and signal inside the command queue.
  bool in_queue_sync() const;

  // Mean wall-clock cost of one kernel dispatch + completion, in microseconds, measured at
  // creation; nullopt when the measurement was skipped or failed.
  std::optional<double> dispatch_overhead_us() const { return dispatch_overhead_us_; }
  const opencl::DeviceInfo& info() const { return device_->info(); }
  opencl::MemoryMode arena_mode() const { return arena_mode_; }
  // Driver threads pinned to options.core at creation (0 when none started or no pinning).
  int pinned_driver_threads() const { return pinned_driver_threads_; }

 public:
  class Clock;  // device profiling clock -> host steady clock

 private:
  struct Binding;

  OpenClRuntimeDevice(std::string name, std::unique_ptr<PinnedWorker> worker,
                      const OpenClRuntimeDeviceOptions& options);
  absl::StatusOr<SharedMemory<float>> AllocateArena(size_t floats);
  absl::StatusOr<SharedMemory<int32_t>> AllocateCounters(size_t count);

  const std::string name_;
  std::unique_ptr<Clock> clock_;
  std::unique_ptr<PinnedWorker> worker_;
  std::unique_ptr<opencl::OpenClDevice> device_;
  std::optional<double> dispatch_overhead_us_;
  int pinned_driver_threads_ = 0;
  const bool in_queue_sync_;
  opencl::MemoryMode arena_mode_ = opencl::MemoryMode::kFineGrainSvm;

  sync::Mutex mu_;
  // Arenas allocated but not yet bound, by host pointer.
  std::map<const float*, std::shared_ptr<opencl::SvmArena>> unbound_ ABSL_GUARDED_BY(mu_);
  std::map<const int32_t*, std::shared_ptr<opencl::DependencyCounters>> unbound_counters_
      ABSL_GUARDED_BY(mu_);
  std::shared_ptr<Binding> current_ ABSL_GUARDED_BY(mu_);
};

}  // namespace psched::executor::runtime
