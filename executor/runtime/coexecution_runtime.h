// CoExecutionRuntime: runs a graph under an ExecutionPlan across several devices that share
// one activation arena (the paper's Appendix: per-device ordered queues, dependency
// counters in shared memory, per-subtask timestamps).
//
// Create validates the plan, lays out the arena (no memory reuse: devices run concurrently),
// and has each device compile its subtasks against fixed arena views. Run copies the inputs
// in, posts each device its whole queue, and lets the devices synchronise among themselves:
// op j's subtasks wait (std::atomic wait) until every predecessor op's subtask counter has
// reached zero; the device finishing an op's last subtask applies a cin split's activation
// and releases the op's successors. Run returns once every queue has drained, then copies
// the outputs out. If a subtask fails, the others stop at their next step.
//
// Devices are not owned and must outlive the runtime. Thread-safety: Run calls are
// serialized internally (one arena).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/cpu/arena_plan.h"
#include "executor/cpu/cpu_kernel.h"
#include "executor/runtime/device.h"
#include "executor/runtime/execution_plan.h"
#include "model/graph.h"

namespace psched::executor::runtime {

struct SubtaskTiming {
  int device = 0;
  PlanStep step;
  int64_t start_ns = 0;  // since the start of Run
  int64_t end_ns = 0;
  // The device's own execution time (GPU event profiling); negative when it reports none.
  double device_us = -1;
};

struct RuntimeOptions {
  // Allocates the shared arena of `floats` elements (64-byte aligned), e.g. in fine-grained
  // OpenCL SVM so a GPU device reads and writes it in place. The memory stays the caller's
  // and must outlive the runtime. Empty: the runtime allocates host memory itself.
  std::function<absl::StatusOr<float*>(size_t floats)> allocate_arena;
};

class CoExecutionRuntime {
 public:
  static absl::StatusOr<std::unique_ptr<CoExecutionRuntime>> Create(
      const model::Graph& graph, std::vector<Device*> devices, ExecutionPlan plan,
      const RuntimeOptions& options = {});
  ~CoExecutionRuntime();

  // One NHWC buffer per graph input / output in graph order.
  absl::Status Run(std::span<const float* const> inputs_nhwc, std::span<float* const> outputs_nhwc);
  absl::StatusOr<std::vector<std::vector<float>>> Run(
      const std::vector<std::vector<float>>& inputs_nhwc);

  // Per-subtask timestamps of the last Run, device by device in queue order.
  const std::vector<SubtaskTiming>& last_timings() const { return timings_; }

 private:
  struct OpState {
    std::vector<model::OpId> successors;
    int32_t num_preds = 0;
    int32_t num_subtasks = 0;
    bool cin_split = false;
    model::Activation activation;
    cpu::TensorView output;
    std::unique_ptr<std::mutex> accumulate_mu;
    // Shared by the device threads during Run.
    std::atomic<int32_t> pending_preds{0};
    std::atomic<int32_t> pending_subtasks{0};
    std::atomic<int32_t> ready{0};
  };
  struct Queued {
    PlanStep step;
    std::unique_ptr<Subtask> subtask;
    size_t timing_index = 0;
  };

  CoExecutionRuntime() = default;
  absl::Status Compile(const model::Graph& graph, const RuntimeOptions& options);
  void RunQueue(int device, int64_t start_ns);
  void FinishSubtask(model::OpId op);
  void Abort(absl::Status status);

  std::vector<Device*> devices_;
  ExecutionPlan plan_;
  cpu::ArenaPlan arena_plan_;
  struct FreeDeleter {
    void operator()(float* p) const;
  };
  std::unique_ptr<float, FreeDeleter> owned_arena_;  // null when the caller allocated it
  float* arena_ = nullptr;
  std::vector<cpu::TensorView> inputs_, outputs_;
  std::vector<OpState> ops_;
  std::vector<std::vector<Queued>> queues_;
  std::vector<SubtaskTiming> timings_;
  std::mutex run_mu_;  // serializes Run
  std::mutex error_mu_;
  absl::Status error_;
  std::atomic<bool> aborted_{false};
};

}  // namespace psched::executor::runtime
