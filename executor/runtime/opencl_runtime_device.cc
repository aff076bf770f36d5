#include "executor/runtime/opencl_runtime_device.h"

#include <dirent.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <limits>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "executor/common/arena_plan.h"
#include "executor/common/futex.h"
#include "executor/opencl/opencl_kernels.h"
#include "executor/opencl/sync_kernels.h"
#include "spdlog/spdlog.h"

namespace psched::executor::runtime {

// One runtime's arena and the kernel factory bound to it. Subtasks share it, so the arena
// outlives every kernel whose arguments point into it.
struct OpenClRuntimeDevice::Binding {
  std::shared_ptr<opencl::SvmArena> arena;  // destroyed last (and shared with the runtime)
  // The runtime's counters when this device allocated them (in SVM when device_side()).
  std::shared_ptr<opencl::DependencyCounters> counters;
  float* base = nullptr;
  const model::Graph* graph = nullptr;
  std::vector<TensorPlacement> placements;
  std::unique_ptr<opencl::KernelFactory> factory;
};

namespace {

std::set<pid_t> ThreadIds() {
  std::set<pid_t> ids;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return ids;
  while (dirent* entry = readdir(dir)) {
    int id = 0;
    if (absl::SimpleAtoi(entry->d_name, &id)) ids.insert(static_cast<pid_t>(id));
  }
  closedir(dir);
  return ids;
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

absl::StatusOr<cl_ulong> ProfilingTime(cl_event event, cl_profiling_info what) {
  cl_ulong ns = 0;
  const cl_int err = clGetEventProfilingInfo(event, what, sizeof(ns), &ns, nullptr);
  if (err != CL_SUCCESS) return opencl::ClStatus(err, "clGetEventProfilingInfo");
  return ns;
}

}  // namespace

// Maps the device's profiling clock onto the host's steady clock. Each enqueue gives a lower
// bound on the offset (host time taken just before the call, device time stamped during it);
// the largest bound seen is the tightest. Both clocks tick in nanoseconds.
class OpenClRuntimeDevice::Clock {
 public:
  void Observe(int64_t host_before_ns, cl_ulong device_queued_ns) {
    const int64_t bound = host_before_ns - static_cast<int64_t>(device_queued_ns);
    int64_t current = offset_.load(std::memory_order_relaxed);
    while (bound > current && !offset_.compare_exchange_weak(current, bound)) {
    }
  }
  int64_t ToHost(cl_ulong device_ns) const {
    return static_cast<int64_t>(device_ns) + offset_.load(std::memory_order_relaxed);
  }

 private:
  std::atomic<int64_t> offset_{std::numeric_limits<int64_t>::min()};
};

namespace {

void CL_CALLBACK WakeOnComplete(cl_event, cl_int, void* word) {
  FutexWakeAll(static_cast<int32_t*>(word));
}

class OpenClSubtask final : public Subtask {
 public:
  // `counters` non-null: the subtask can be enqueued with in-queue waits and signal.
  OpenClSubtask(std::shared_ptr<void> binding, opencl::SvmArena* arena,
                std::unique_ptr<opencl::OpKernel> kernel, opencl::OpenClDevice* device,
                opencl::DependencyCounters* counters, OpenClRuntimeDevice::Clock* clock)
      : clock_(clock),
        binding_(std::move(binding)),
        arena_(arena),
        kernel_(std::move(kernel)),
        device_(device),
        counters_(counters) {}
  ~OpenClSubtask() override { ReleaseEvents(); }

  absl::Status Run() override {
    // Not coherent: hand the arena to the device for the kernel (the runtime keeps everyone
    // else off it meanwhile) and take it back for the host after.
    float* const host = arena_->host_data();
    if (takes_arena_turns()) {
      if (auto s = arena_->EndHostAccess(); !s.ok()) return s;
    }
    absl::Status status = EnqueueKernel();
    if (status.ok()) {
      const cl_int err = clWaitForEvents(1, &last_);
      status = err == CL_SUCCESS
                   ? ReadProfile()
                   : opencl::ClStatus(err, absl::StrCat("waiting for ", kernel_->name()));
    }
    ReleaseEvents();
    if (takes_arena_turns()) {
      absl::StatusOr<float*> mapped = arena_->BeginHostAccess();
      if (!mapped.ok()) return mapped.status();
      // Every CPU kernel was compiled against the first mapping's address.
      if (*mapped != host) {
        return absl::InternalError(
            "the OpenCL driver mapped the arena back at a different address, which the CPU "
            "kernels cannot follow; use fine-grained or coarse-grained SVM on this device");
      }
    }
    return status;
  }
  bool takes_arena_turns() const override { return !arena_->host_coherent(); }
  std::optional<double> last_device_us() const override { return device_us_; }
  std::optional<TimeSpan> last_span() const override { return span_; }

  bool can_enqueue() const override { return counters_ != nullptr; }

  absl::Status Enqueue(std::span<const CounterWait> waits, size_t signal, size_t release,
                       bool wake_host) override {
    if (!can_enqueue()) return Subtask::Enqueue(waits, signal, release, wake_host);
    waited_ = !waits.empty();
    for (const CounterWait& w : waits) {
      if (auto s = counters_->EnqueueWait(w.counter, w.target, release); !s.ok()) return s;
    }
    if (auto s = EnqueueKernel(); !s.ok()) return s;
    cl_event signalled = nullptr;
    if (auto s = counters_->EnqueueSignal(signal, 1, wake_host ? &signalled : nullptr); !s.ok()) {
      return s;
    }
    if (signalled != nullptr) {
      // The counter is already raised when the event completes; wake whoever parked on it.
      const cl_int err =
          clSetEventCallback(signalled, CL_COMPLETE, WakeOnComplete, counters_->data() + signal);
      clReleaseEvent(signalled);
      if (err != CL_SUCCESS) return opencl::ClStatus(err, "clSetEventCallback for a signal");
    }
    // Start at once: a CPU device may be waiting for this signal.
    return device_->Flush();
  }

  absl::Status CollectEnqueued() override {
    if (waited_ && counters_->TakeTimeout()) {
      ReleaseEvents();
      return absl::InternalError(
          "a wait kernel in the GPU queue was released with its CPU inputs unfinished after "
          "every CPU subtask had ended (a lost signal)");
    }
    return ReadProfile();
  }

 private:
  absl::Status EnqueueKernel() {
    ReleaseEvents();
    span_.reset();
    device_us_.reset();
    host_enqueue_ns_ = SteadyNowNs();
    return kernel_->Enqueue(&last_, &first_);
  }

  // Reads the finished kernel's profiling into span_ and device_us_, on the host's clock.
  absl::Status ReadProfile() {
    if (first_ == nullptr || last_ == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(kernel_->name(), ": nothing enqueued"));
    }
    auto queued = ProfilingTime(first_, CL_PROFILING_COMMAND_QUEUED);
    auto start = ProfilingTime(first_, CL_PROFILING_COMMAND_START);
    auto end = ProfilingTime(last_, CL_PROFILING_COMMAND_END);
    ReleaseEvents();
    if (!queued.ok()) return queued.status();
    if (!start.ok()) return start.status();
    if (!end.ok()) return end.status();
    device_us_ = static_cast<double>(*end - *start) / 1000.0;
    clock_->Observe(host_enqueue_ns_, *queued);
    span_ = TimeSpan{clock_->ToHost(*start), clock_->ToHost(*end)};
    return absl::OkStatus();
  }

  void ReleaseEvents() {
    for (cl_event* e : {&first_, &last_}) {
      if (*e != nullptr) clReleaseEvent(*e);
      *e = nullptr;
    }
  }

  OpenClRuntimeDevice::Clock* clock_;  // the device's
  std::shared_ptr<void> binding_;      // keeps the arena alive; declared before the kernel
  opencl::SvmArena* arena_;            // owned by the binding
  std::unique_ptr<opencl::OpKernel> kernel_;
  opencl::OpenClDevice* device_;
  opencl::DependencyCounters* counters_;  // owned by the binding
  std::optional<double> device_us_;
  std::optional<TimeSpan> span_;
  // The last run's events and the host time of its enqueue.
  cl_event first_ = nullptr;
  cl_event last_ = nullptr;
  int64_t host_enqueue_ns_ = 0;
  bool waited_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OpenClRuntimeDevice>> OpenClRuntimeDevice::Create(
    std::string name, const OpenClRuntimeDeviceOptions& options) {
  auto selector = opencl::DeviceSelector::Parse(options.selector);
  if (!selector.ok()) return selector.status();
  std::vector<int> cores;
  if (options.core >= 0) cores.push_back(options.core);
  auto worker = PinnedWorker::Start(cores);
  if (!worker.ok()) {
    return absl::Status(worker.status().code(),
                        absl::StrCat("device ", name, ": ", worker.status().message()));
  }
  std::unique_ptr<OpenClRuntimeDevice> d(
      new OpenClRuntimeDevice(std::move(name), std::move(*worker), options));
  // Open from the pinned thread: threads the driver starts now inherit its affinity, and
  // any it starts elsewhere are pinned explicitly below.
  const std::set<pid_t> before = ThreadIds();
  absl::Status status = d->worker_->Call([&]() -> absl::Status {
    auto device = opencl::OpenClDevice::Open(*selector);
    if (!device.ok()) return device.status();
    d->device_ = std::move(*device);
    d->device_->SetProgramCacheDir(options.program_cache_dir);
    return absl::OkStatus();
  });
  if (!status.ok()) {
    return absl::Status(status.code(), absl::StrCat("device ", d->name_, ": ", status.message()));
  }
  if (options.core >= 0) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(options.core, &set);
    for (pid_t tid : ThreadIds()) {
      if (before.count(tid) == 0 && sched_setaffinity(tid, sizeof(set), &set) == 0) {
        ++d->pinned_driver_threads_;
      }
    }
  }
  const opencl::DeviceInfo& info = d->device_->info();
  d->arena_mode_ = options.arena_mode.value_or(opencl::BestMemoryMode(info));
  const bool supported =
      d->arena_mode_ == opencl::MemoryMode::kBuffer ||
      (d->arena_mode_ == opencl::MemoryMode::kCoarseGrainSvm && info.svm_coarse_grain) ||
      (d->arena_mode_ == opencl::MemoryMode::kFineGrainSvm && info.svm_fine_grain);
  if (!supported) {
    return absl::FailedPreconditionError(
        absl::StrCat("device ", d->name_, ": OpenCL device '", info.name, "' has no ",
                     std::string(opencl::MemoryModeName(d->arena_mode_)), " memory"));
  }
  if (d->arena_mode_ != opencl::MemoryMode::kFineGrainSvm) {
    spdlog::warn(
        "device {}: no fine-grained SVM in use ({}): CPU and GPU subtasks take turns on "
        "the arena instead of overlapping",
        d->name_, opencl::MemoryModeName(d->arena_mode_));
  }
  if (options.overhead_iterations > 0) {
    double overhead = 0;
    opencl::OpenClDevice* cl = d->device_.get();
    const int iterations = options.overhead_iterations;
    status = d->worker_->Call([&]() -> absl::Status {
      auto us = opencl::MeasureDispatchOverheadUs(cl, iterations);
      if (!us.ok()) return us.status();
      overhead = *us;
      return absl::OkStatus();
    });
    if (status.ok()) {
      d->dispatch_overhead_us_ = overhead;
    } else {
      spdlog::warn("device {}: dispatch overhead not measured: {}", d->name_,
                   std::string(status.message()));
    }
  }
  return d;
}

OpenClRuntimeDevice::OpenClRuntimeDevice(std::string name, std::unique_ptr<PinnedWorker> worker,
                                         const OpenClRuntimeDeviceOptions& options)
    : name_(std::move(name)),
      clock_(std::make_unique<Clock>()),
      worker_(std::move(worker)),
      in_queue_sync_(options.in_queue_sync) {}

OpenClRuntimeDevice::~OpenClRuntimeDevice() {
  worker_->Drain();
  sync::MutexLock lock(&mu_);
  current_.reset();
  unbound_.clear();
  unbound_counters_.clear();
}

std::function<absl::StatusOr<SharedMemory<float>>(size_t)> OpenClRuntimeDevice::ArenaAllocator() {
  return [this](size_t floats) { return AllocateArena(floats); };
}

std::function<absl::StatusOr<SharedMemory<int32_t>>(size_t)>
OpenClRuntimeDevice::CounterAllocator() {
  return [this](size_t count) { return AllocateCounters(count); };
}

bool OpenClRuntimeDevice::in_queue_sync() const {
  return in_queue_sync_ && device_->info().svm_atomics;
}

absl::StatusOr<SharedMemory<int32_t>> OpenClRuntimeDevice::AllocateCounters(size_t count) {
  opencl::SyncOptions options;
  options.force_host_side = !in_queue_sync();
  auto counters =
      opencl::DependencyCounters::Create(device_.get(), std::max<size_t>(count, 1), options);
  if (!counters.ok()) {
    return absl::Status(
        counters.status().code(),
        absl::StrCat("device ", name_, ": counters: ", counters.status().message()));
  }
  std::shared_ptr<opencl::DependencyCounters> shared = std::move(*counters);
  sync::MutexLock lock(&mu_);
  unbound_counters_[shared->data()] = shared;
  return SharedMemory<int32_t>{shared->data(), shared};
}

absl::StatusOr<SharedMemory<float>> OpenClRuntimeDevice::AllocateArena(size_t floats) {
  auto arena = opencl::SvmArena::Create(device_.get(), floats, arena_mode_);
  absl::StatusOr<float*> host =
      arena.ok() ? (*arena)->BeginHostAccess() : absl::StatusOr<float*>(arena.status());
  if (!host.ok()) {
    return absl::Status(host.status().code(),
                        absl::StrCat("device ", name_, ": arena: ", host.status().message()));
  }
  sync::MutexLock lock(&mu_);
  std::shared_ptr<opencl::SvmArena> shared = std::move(*arena);
  unbound_[*host] = shared;
  return SharedMemory<float>{*host, shared};
}

absl::Status OpenClRuntimeDevice::BindArena(float* base, size_t floats,
                                            std::span<const TensorPlacement> placements) {
  sync::MutexLock lock(&mu_);
  auto it = unbound_.find(base);
  if (it == unbound_.end()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device ", name_,
        ": the runtime's arena is not OpenCL SVM; pass the device's ArenaAllocator() as "
        "RuntimeOptions::allocate_arena"));
  }
  if (it->second->size() < floats) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", name_, ": arena holds ", it->second->size(), " floats, runtime needs ", floats));
  }
  auto binding = std::make_shared<Binding>();
  binding->arena = std::move(it->second);
  binding->base = base;
  binding->placements.assign(placements.begin(), placements.end());
  unbound_.erase(it);
  current_ = std::move(binding);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Subtask>> OpenClRuntimeDevice::Compile(
    const model::Graph& graph, model::OpId id, WorkSlice slice, std::span<const TensorView> inputs,
    const TensorView& output) {
  sync::MutexLock lock(&mu_);
  if (current_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("device ", name_, ": Compile before BindArena"));
  }
  Binding& b = *current_;
  if (b.placements.size() != graph.tensors.size()) {
    return absl::InvalidArgumentError(absl::StrCat("device ", name_, ": the arena places ",
                                                   b.placements.size(), " tensors, graph '",
                                                   graph.name, "' has ", graph.tensors.size()));
  }
  if (b.graph != &graph) {
    // Every view must land on the runtime's placement; the checks below catch any drift.
    std::vector<TensorPlacement> placements;
    for (const TensorPlacement& p : b.placements) {
      placements.push_back({p.offset, p.pixel_stride});
    }
    auto factory =
        opencl::KernelFactory::Create(device_.get(), &graph, b.arena.get(), std::move(placements));
    if (!factory.ok()) return factory.status();
    b.factory = std::move(*factory);
    b.graph = &graph;
  }
  const std::vector<model::TensorId> in_tensors = graph.ActivationInputs(id);
  if (in_tensors.size() != inputs.size()) {
    return absl::InvalidArgumentError(absl::StrCat("op ", id, " '", graph.op(id).name, "' takes ",
                                                   in_tensors.size(), " inputs, got ",
                                                   inputs.size(), " views"));
  }
  auto check = [&](model::TensorId t, const TensorView& v) -> absl::Status {
    const TensorPlacement& p = b.placements[static_cast<size_t>(t)];
    if (v.data - b.base != p.offset || v.pixel_stride != p.pixel_stride) {
      return absl::InvalidArgumentError(
          absl::StrCat("op ", id, " '", graph.op(id).name, "': tensor ", t, " is viewed at offset ",
                       v.data - b.base, " stride ", v.pixel_stride, ", the arena plan has ",
                       p.offset, " stride ", p.pixel_stride));
    }
    return absl::OkStatus();
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (auto s = check(in_tensors[i], inputs[i]); !s.ok()) return s;
  }
  const bool cin = slice.axis == model::SplitAxis::kInputChannels;
  opencl::KernelOptions options{.atomic_partial_sums = false};
  const TensorPlacement& out = b.placements[static_cast<size_t>(graph.op(id).output)];
  if (cin && output.data - b.base != out.offset) {
    // A partial buffer of this slice's own: nobody else adds into it, so plain adds suffice.
    options.partial_output = TensorPlacement{output.data - b.base, output.pixel_stride};
  } else if (auto s = check(graph.op(id).output, output); !s.ok()) {
    return s;
  }
  // In-queue sync needs the arena coherent too: a queue running ahead cannot take turns.
  const bool in_queue =
      b.counters != nullptr && b.counters->device_side() && b.arena->host_coherent();
  auto kernel = b.factory->Create(id, {slice.axis, slice.begin, slice.end}, options);
  if (!kernel.ok()) return kernel.status();
  return std::make_unique<OpenClSubtask>(current_, b.arena.get(), std::move(*kernel), device_.get(),
                                         in_queue ? b.counters.get() : nullptr, clock_.get());
}

void OpenClRuntimeDevice::Post(std::function<void()> job) { worker_->Post(std::move(job)); }

absl::Status OpenClRuntimeDevice::Finish() { return device_->Finish(); }

absl::Status OpenClRuntimeDevice::BindCounters(int32_t* counters, size_t count) {
  sync::MutexLock lock(&mu_);
  if (current_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("device ", name_, ": BindCounters before BindArena"));
  }
  auto it = unbound_counters_.find(counters);
  // Counters from elsewhere (host memory): this runtime synchronises the GPU on the host.
  if (it == unbound_counters_.end()) return absl::OkStatus();
  if (it->second->size() < count) {
    return absl::InvalidArgumentError(absl::StrCat("device ", name_, ": ", it->second->size(),
                                                   " counters allocated, runtime needs ", count));
  }
  current_->counters = std::move(it->second);
  unbound_counters_.erase(it);
  return absl::OkStatus();
}

}  // namespace psched::executor::runtime
