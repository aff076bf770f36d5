// CpuGraphExecutor: runs a whole graph on one CPU core set with XNNPACK.
//
// Create compiles the graph once: validates every op, plans one activation arena from
// tensor lifetimes (arena_plan.h), starts a worker thread pinned to `cores`, and on it
// creates one kernel per op (weights packed) and binds every kernel to its fixed arena
// views. Run then copies the inputs into the arena, runs the kernels in op order on the
// worker and copies the outputs out. Buffers are NHWC; use executor/layout.h for NCHW.
//
// Thread-safety: Run may be called from any thread; concurrent calls are serialized (one
// arena). The graph is not referenced after Create.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/common/aligned_floats.h"
#include "executor/common/arena_plan.h"
#include "executor/common/pinned_worker.h"
#include "executor/cpu/cpu_kernel.h"
#include "executor/cpu/cpu_threadpool.h"
#include "model/graph.h"

namespace psched::executor::cpu {

struct CpuExecutorOptions {
  // CPU ids the worker (and XNNPACK's threads) are pinned to; empty leaves placement to the
  // OS scheduler.
  std::vector<int> cores;
  // XNNPACK threadpool size. 1 runs every kernel on the worker alone; more threads help
  // large convolutions but contend with co-running devices on the same cores. With one core
  // per thread in `cores`, each thread is pinned to its own core (CpuThreadpool).
  int threads = 1;
  // Run a conv and the residual Add right after it as one kernel (residual_added_conv.h). The add's
  // own time then counts in the conv's (last_op_timings); off to time every op by itself.
  bool fuse_residual_adds = true;
};

class CpuGraphExecutor {
 public:
  static absl::StatusOr<std::unique_ptr<CpuGraphExecutor>> Create(const model::Graph& graph,
                                                                  CpuExecutorOptions options);
  ~CpuGraphExecutor();
  CpuGraphExecutor(const CpuGraphExecutor&) = delete;
  CpuGraphExecutor& operator=(const CpuGraphExecutor&) = delete;

  // One NHWC buffer per graph input / output in graph order, sized as input_shape(i) /
  // output_shape(i).
  absl::Status Run(std::span<const float* const> inputs_nhwc, std::span<float* const> outputs_nhwc);
  // As above with owned buffers; checks every input's size.
  absl::StatusOr<std::vector<std::vector<float>>> Run(
      const std::vector<std::vector<float>>& inputs_nhwc);

  const model::Shape& input_shape(size_t i) const { return inputs_[i].shape; }
  const model::Shape& output_shape(size_t i) const { return outputs_[i].shape; }
  size_t num_inputs() const { return inputs_.size(); }
  size_t num_outputs() const { return outputs_.size(); }
  const ArenaPlan& arena_plan() const { return plan_; }
  // Start and end of every op in the last successful Run, in ns since that Run began,
  // indexed by OpId. Read it between Runs.
  struct OpTiming {
    int64_t start_ns = 0;
    int64_t end_ns = 0;
  };
  const std::vector<OpTiming>& last_op_timings() const { return timings_; }
  // Residual adds that run inside their conv's kernel.
  int fused_residual_adds() const { return fused_residual_adds_; }

  // For overhead measurements (bench/cpu_overhead): runs `job` on the pinned worker with the
  // compiled kernels in execution order and the XNNPACK threadpool (null for one thread).
  // The job must not keep the pointers.
  absl::Status CallOnWorker(
      const std::function<absl::Status(std::span<const std::unique_ptr<CpuKernel>>, pthreadpool_t)>&
          job);

 private:
  struct Endpoint {
    model::Shape shape;
    TensorView view;
  };

  CpuGraphExecutor() = default;
  absl::Status Compile(const model::Graph& graph, int threads, bool fuse_residual_adds);
  absl::Status RunOnWorker(std::span<const float* const> inputs, std::span<float* const> outputs);
  TensorView ViewOf(const model::Graph& graph, model::TensorId t) const;

  ArenaPlan plan_;
  AlignedFloats arena_;
  std::vector<Endpoint> inputs_, outputs_;
  std::vector<std::unique_ptr<CpuKernel>> kernels_;  // one per op, in op order
  std::vector<OpTiming> timings_;
  int fused_residual_adds_ = 0;
  std::unique_ptr<CpuThreadpool> threadpool_;
  std::unique_ptr<PinnedWorker> worker_;
};

}  // namespace psched::executor::cpu
