// CpuDevice: a Device backed by a PinnedWorker and XNNPACK CPU kernels.
//
// Owns its worker thread (pinned to `cores`) and, when `threads` > 1, an XNNPACK threadpool
// created on that worker so its threads inherit the pinning. Thread-safe as Device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "executor/common/pinned_worker.h"
#include "executor/cpu/cpu_kernel.h"
#include "executor/runtime/device.h"

namespace psched::executor::runtime {

class CpuDevice final : public Device {
 public:
  // `name` is the logical device name (e.g. "cpu.0").
  static absl::StatusOr<std::unique_ptr<CpuDevice>> Create(std::string name, std::vector<int> cores,
                                                           int threads = 1);
  ~CpuDevice() override;

  const std::string& name() const override { return name_; }
  absl::StatusOr<std::unique_ptr<Subtask>> Compile(const model::Graph& graph, model::OpId id,
                                                   WorkSlice slice,
                                                   std::span<const TensorView> inputs,
                                                   const TensorView& output) override;
  void Post(std::function<void()> job) override;

 private:
  CpuDevice(std::string name, std::unique_ptr<PinnedWorker> worker)
      : name_(std::move(name)), worker_(std::move(worker)) {}

  const std::string name_;
  std::unique_ptr<PinnedWorker> worker_;
  pthreadpool_t threadpool_ = nullptr;
};

}  // namespace psched::executor::runtime
