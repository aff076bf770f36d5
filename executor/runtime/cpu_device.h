// CpuDevice: a Device backed by a PinnedWorker and XNNPACK CPU kernels - one core, or a core
// cluster that runs each subtask on all of its cores.
//
// Owns its worker thread (pinned to `cores`) and, when `threads` > 1, an XNNPACK threadpool
// created on that worker (cpu::CpuThreadpool): with one thread per core each thread is pinned
// to its own core, so a cluster device of n cores runs every kernel on n pinned threads.
// Thread-safe as Device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/common/pinned_worker.h"
#include "executor/cpu/cpu_kernel.h"
#include "executor/cpu/cpu_threadpool.h"
#include "executor/runtime/device.h"

namespace psched::executor::runtime {

class CpuDevice final : public Device {
 public:
  // `name` is the logical device name (e.g. "cpu.0", "cpu.big"); `threads` the XNNPACK
  // threads of every subtask (platform devices use one per core of `cores`).
  static absl::StatusOr<std::unique_ptr<CpuDevice>> Create(std::string name, std::vector<int> cores,
                                                           int threads = 1);
  ~CpuDevice() override;

  const std::string& name() const override { return name_; }
  int threads() const { return threadpool_->threads(); }
  absl::StatusOr<std::unique_ptr<Subtask>> Compile(const model::Graph& graph, model::OpId id,
                                                   WorkSlice slice,
                                                   std::span<const TensorView> inputs,
                                                   const TensorView& output) override;
  bool FusesResidualAdds() const override { return true; }
  absl::StatusOr<std::unique_ptr<Subtask>> CompileResidualAddedConv(
      const model::Graph& graph, model::OpId conv, model::OpId add,
      std::span<const TensorView> inputs, const TensorView& output) override;
  void Post(std::function<void()> job) override;
  bool CallerOnItsCores() const override { return worker_->CallerOnItsCores(); }
  bool TryRunHere(const std::function<void()>& job) override { return worker_->TryRunHere(job); }
  void ParallelFor(size_t n, absl::FunctionRef<void(size_t)> fn) override {
    cpu::ParallelFor(threadpool_->get(), n, fn);
  }

 private:
  explicit CpuDevice(std::string name) : name_(std::move(name)) {}
  // Creates a kernel on the worker, sets it up with `inputs` and `output`, and wraps it.
  absl::StatusOr<std::unique_ptr<Subtask>> CompileOnWorker(
      const std::function<absl::StatusOr<std::unique_ptr<cpu::CpuKernel>>(pthreadpool_t)>& create,
      std::span<const TensorView> inputs, const TensorView& output);

  const std::string name_;
  std::unique_ptr<PinnedWorker> worker_;
  std::unique_ptr<cpu::CpuThreadpool> threadpool_;  // created and used on worker_
};

}  // namespace psched::executor::runtime
