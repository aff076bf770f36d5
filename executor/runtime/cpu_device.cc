#include "executor/runtime/cpu_device.h"

#include "absl/strings/str_cat.h"

namespace psched::executor::runtime {
namespace {

class CpuSubtask final : public Subtask {
 public:
  explicit CpuSubtask(std::unique_ptr<cpu::CpuKernel> kernel) : kernel_(std::move(kernel)) {}
  absl::Status Run() override { return kernel_->Run(); }

 private:
  std::unique_ptr<cpu::CpuKernel> kernel_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuDevice>> CpuDevice::Create(std::string name,
                                                             std::vector<int> cores, int threads) {
  if (threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", name, ": threads must be >= 1, got ", threads));
  }
  std::unique_ptr<CpuDevice> device(new CpuDevice(std::move(name)));
  CpuDevice* d = device.get();
  // Between runs the pool's threads sleep instead of spinning out the cluster's cores.
  auto worker = PinnedWorker::Start(std::move(cores), [d] {
    if (d->threadpool_ != nullptr) d->threadpool_->Park();
  });
  if (!worker.ok()) {
    return absl::Status(worker.status().code(),
                        absl::StrCat("device ", d->name_, ": ", worker.status().message()));
  }
  d->worker_ = std::move(*worker);
  // On the worker: it becomes the pool's thread 0.
  if (auto s = d->worker_->Call([d, threads] {
        auto pool = cpu::CpuThreadpool::Create(threads, d->worker_->cores());
        if (!pool.ok()) return pool.status();
        d->threadpool_ = std::move(*pool);
        return absl::OkStatus();
      });
      !s.ok()) {
    return absl::Status(s.code(), absl::StrCat("device ", d->name_, ": ", s.message()));
  }
  return device;
}

CpuDevice::~CpuDevice() {
  // The worker goes first: its idle hook uses the threadpool.
  worker_->Drain();
  worker_.reset();
}

absl::StatusOr<std::unique_ptr<Subtask>> CpuDevice::Compile(const model::Graph& graph,
                                                            model::OpId id, WorkSlice slice,
                                                            std::span<const TensorView> inputs,
                                                            const TensorView& output) {
  std::unique_ptr<Subtask> subtask;
  const absl::Status status = worker_->Call([&]() -> absl::Status {
    cpu::KernelLayout layout;
    for (const TensorView& v : inputs) layout.input_pixel_strides.push_back(v.pixel_stride);
    layout.output_pixel_stride = output.pixel_stride;
    auto kernel = cpu::CreateCpuKernel(graph, id, slice, layout, threadpool_->get());
    if (!kernel.ok()) return kernel.status();
    if (auto s = (*kernel)->Setup(inputs, output); !s.ok()) return s;
    subtask = std::make_unique<CpuSubtask>(std::move(*kernel));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return subtask;
}

void CpuDevice::Post(std::function<void()> job) { worker_->Post(std::move(job)); }

}  // namespace psched::executor::runtime
