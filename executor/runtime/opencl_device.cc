#include "executor/runtime/opencl_device.h"

#include <dirent.h>
#include <sched.h>

#include <cstdlib>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "executor/cpu/arena_plan.h"
#include "executor/opencl/opencl_kernels.h"
#include "executor/opencl/sync_kernels.h"
#include "spdlog/spdlog.h"

namespace psched::executor::runtime {

// One runtime's arena and the kernel factory bound to it. Subtasks share it, so the arena
// outlives every kernel whose arguments point into it.
struct OpenClRuntimeDevice::Binding {
  std::unique_ptr<opencl::SvmArena> arena;  // destroyed last
  float* base = nullptr;
  const model::Graph* graph = nullptr;
  std::vector<cpu::TensorPlacement> placements;
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

class OpenClSubtask final : public Subtask {
 public:
  OpenClSubtask(std::shared_ptr<void> binding, std::unique_ptr<opencl::OpKernel> kernel,
                std::mutex* accumulate_mu)
      : binding_(std::move(binding)), kernel_(std::move(kernel)), accumulate_mu_(accumulate_mu) {}

  absl::Status Run() override {
    // A cin slice adds into memory CPU slices add into under the same mutex.
    std::unique_lock<std::mutex> lock;
    if (accumulate_mu_ != nullptr) lock = std::unique_lock<std::mutex>(*accumulate_mu_);
    cl_event event = nullptr;
    if (auto s = kernel_->Enqueue(&event); !s.ok()) return s;
    const cl_int err = clWaitForEvents(1, &event);
    if (err == CL_SUCCESS) {
      auto us = opencl::EventDurationUs(event);
      device_us_ = us.ok() ? std::optional<double>(*us) : std::nullopt;
    }
    clReleaseEvent(event);
    return opencl::ClStatus(err, absl::StrCat("waiting for ", kernel_->name()));
  }
  std::optional<double> last_device_us() const override { return device_us_; }

 private:
  std::shared_ptr<void> binding_;  // keeps the arena alive; declared before the kernel
  std::unique_ptr<opencl::OpKernel> kernel_;
  std::mutex* accumulate_mu_;
  std::optional<double> device_us_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<OpenClRuntimeDevice>> OpenClRuntimeDevice::Create(
    std::string name, const OpenClRuntimeDeviceOptions& options) {
  auto selector = opencl::DeviceSelector::Parse(options.selector);
  if (!selector.ok()) return selector.status();
  std::vector<int> cores;
  if (options.core >= 0) cores.push_back(options.core);
  auto worker = cpu::PinnedWorker::Start(cores);
  if (!worker.ok()) {
    return absl::Status(worker.status().code(),
                        absl::StrCat("device ", name, ": ", worker.status().message()));
  }
  std::unique_ptr<OpenClRuntimeDevice> d(
      new OpenClRuntimeDevice(std::move(name), std::move(*worker)));
  // Open from the pinned thread: threads the driver starts now inherit its affinity, and
  // any it starts elsewhere are pinned explicitly below.
  const std::set<pid_t> before = ThreadIds();
  absl::Status status = d->worker_->Call([&]() -> absl::Status {
    auto device = opencl::OpenClDevice::Open(*selector);
    if (!device.ok()) return device.status();
    d->device_ = std::move(*device);
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
  if (!d->device_->info().svm_fine_grain) {
    return absl::FailedPreconditionError(absl::StrCat(
        "device ", d->name_, ": OpenCL device '", d->device_->info().name,
        "' has no fine-grained SVM; co-execution shares one arena between CPU and GPU and "
        "needs it"));
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

OpenClRuntimeDevice::~OpenClRuntimeDevice() {
  worker_->Drain();
  std::lock_guard<std::mutex> lock(mu_);
  current_.reset();
  unbound_.clear();
}

std::function<absl::StatusOr<float*>(size_t)> OpenClRuntimeDevice::ArenaAllocator() {
  return [this](size_t floats) { return AllocateArena(floats); };
}

absl::StatusOr<float*> OpenClRuntimeDevice::AllocateArena(size_t floats) {
  auto arena = opencl::SvmArena::Create(device_.get(), floats, opencl::MemoryMode::kFineGrainSvm);
  if (!arena.ok()) {
    return absl::Status(arena.status().code(),
                        absl::StrCat("device ", name_, ": arena: ", arena.status().message()));
  }
  float* host = (*arena)->host_data();
  std::lock_guard<std::mutex> lock(mu_);
  unbound_[host] = std::move(*arena);
  return host;
}

absl::Status OpenClRuntimeDevice::BindArena(float* base, size_t floats) {
  std::lock_guard<std::mutex> lock(mu_);
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
  unbound_.erase(it);
  current_ = std::move(binding);
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Subtask>> OpenClRuntimeDevice::Compile(
    const model::Graph& graph, model::OpId id, cpu::WorkSlice slice,
    std::span<const cpu::TensorView> inputs, const cpu::TensorView& output,
    std::mutex* accumulate_mu) {
  std::lock_guard<std::mutex> lock(mu_);
  if (current_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("device ", name_, ": Compile before BindArena"));
  }
  Binding& b = *current_;
  if (b.graph != &graph) {
    // The runtime lays the arena out with the same planner, so every view must land on the
    // placement computed here; the checks below catch any drift.
    b.placements = cpu::PlanArena(graph, /*reuse_memory=*/false).tensors;
    std::vector<opencl::TensorPlacement> placements;
    for (const cpu::TensorPlacement& p : b.placements) {
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
  auto check = [&](model::TensorId t, const cpu::TensorView& v) -> absl::Status {
    const cpu::TensorPlacement& p = b.placements[static_cast<size_t>(t)];
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
  if (auto s = check(graph.op(id).output, output); !s.ok()) return s;
  const bool cin = slice.axis == model::SplitAxis::kInputChannels;
  // Partial sums are serialised by the op's mutex, so plain adds suffice.
  auto kernel =
      b.factory->Create(id, {slice.axis, slice.begin, slice.end}, {.atomic_partial_sums = false});
  if (!kernel.ok()) return kernel.status();
  return std::make_unique<OpenClSubtask>(current_, std::move(*kernel),
                                         cin ? accumulate_mu : nullptr);
}

void OpenClRuntimeDevice::Post(std::function<void()> job) { worker_->Post(std::move(job)); }

}  // namespace psched::executor::runtime
