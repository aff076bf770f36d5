#include "executor/runtime/cpu_device.h"

#include "absl/strings/str_cat.h"
#include "executor/cpu/residual_added_conv.h"

namespace psched::executor::runtime {
namespace {

class CpuSubtask final : public Subtask {
 public:
  explicit CpuSubtask(std::unique_ptr<cpu::CpuKernel> kernel) : kernel_(std::move(kernel)) {}
  absl::Status Run() override { return kernel_->Run(); }

 private:
  std::unique_ptr<cpu::CpuKernel> kernel_;
};

// The pixel strides of the views a kernel will be set up with.
cpu::KernelLayout LayoutOf(std::span<const TensorView> inputs, const TensorView& output) {
  cpu::KernelLayout layout;
  for (const TensorView& v : inputs) layout.input_pixel_strides.push_back(v.pixel_stride);
  layout.output_pixel_stride = output.pixel_stride;
  return layout;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CpuDevice>> CpuDevice::Create(std::string name,
                                                             std::vector<int> cores, int threads) {
  if (threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("device ", name, ": threads must be >= 1, got ", threads));
  }
  std::unique_ptr<CpuDevice> device(new CpuDevice(std::move(name)));
  CpuDevice* d = device.get();
  auto worker = cpu::StartPoolWorker(std::move(cores), &d->threadpool_);
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

absl::StatusOr<std::unique_ptr<Subtask>> CpuDevice::CompileOnWorker(
    const std::function<absl::StatusOr<std::unique_ptr<cpu::CpuKernel>>(pthreadpool_t)>& create,
    std::span<const TensorView> inputs, const TensorView& output) {
  std::unique_ptr<Subtask> subtask;
  const absl::Status status = worker_->Call([&]() -> absl::Status {
    auto kernel = create(threadpool_->get());
    if (!kernel.ok()) return kernel.status();
    if (auto s = (*kernel)->Setup(inputs, output); !s.ok()) return s;
    subtask = std::make_unique<CpuSubtask>(std::move(*kernel));
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return subtask;
}

absl::StatusOr<std::unique_ptr<Subtask>> CpuDevice::Compile(const model::Graph& graph,
                                                            model::OpId id, WorkSlice slice,
                                                            std::span<const TensorView> inputs,
                                                            const TensorView& output) {
  const cpu::KernelLayout layout = LayoutOf(inputs, output);
  return CompileOnWorker(
      [&](pthreadpool_t pool) { return cpu::CreateCpuKernel(graph, id, slice, layout, pool); },
      inputs, output);
}

absl::StatusOr<std::unique_ptr<Subtask>> CpuDevice::CompileResidualAddedConv(
    const model::Graph& graph, model::OpId conv, model::OpId add,
    std::span<const TensorView> inputs, const TensorView& output) {
  if (inputs.size() < 3) {
    return absl::InvalidArgumentError(absl::StrCat(
        "device ", name_,
        ": a conv with a residual add takes its inputs, its output and the residual; got ",
        inputs.size(), " views"));
  }
  // The conv's own views: its inputs, then its output (the residual comes last).
  const cpu::ResidualAddLayout layout{
      .conv = LayoutOf(inputs.first(inputs.size() - 2), inputs[inputs.size() - 2]),
      .residual_pixel_stride = inputs.back().pixel_stride,
      .output_pixel_stride = output.pixel_stride};
  return CompileOnWorker(
      [&](pthreadpool_t pool) {
        return cpu::CreateResidualAddedConv(graph, conv, add, layout, pool);
      },
      inputs, output);
}

void CpuDevice::Post(std::function<void()> job) { worker_->Post(std::move(job)); }

}  // namespace psched::executor::runtime
