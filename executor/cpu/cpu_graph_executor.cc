#include "executor/cpu/cpu_graph_executor.h"

#include <algorithm>
#include <chrono>

#include "absl/strings/str_cat.h"
#include "executor/common/residual_add_fusion.h"
#include "executor/cpu/residual_added_conv.h"
#include "executor/io_buffers.h"
#include "model/op_validation.h"

namespace psched::executor::cpu {

absl::StatusOr<std::unique_ptr<CpuGraphExecutor>> CpuGraphExecutor::Create(
    const model::Graph& graph, CpuExecutorOptions options) {
  if (options.threads < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("CPU executor threads must be >= 1, got ", options.threads));
  }
  if (!graph.has_weights) {
    return absl::FailedPreconditionError(absl::StrCat(
        "graph '", graph.name, "' has no weights; import it with weights or synthesize them"));
  }
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    if (auto s = model::ValidateOp(graph, id); !s.ok()) return s;
  }
  std::unique_ptr<CpuGraphExecutor> exec(new CpuGraphExecutor());
  CpuGraphExecutor* e = exec.get();
  auto worker = StartPoolWorker(options.cores, &e->threadpool_);
  if (!worker.ok()) return worker.status();
  exec->worker_ = std::move(*worker);
  if (auto s = exec->worker_->Call([e, &graph, &options] {
        return e->Compile(graph, options.threads, options.fuse_residual_adds);
      });
      !s.ok()) {
    return s;
  }
  return exec;
}

CpuGraphExecutor::~CpuGraphExecutor() {
  if (worker_ == nullptr) return;
  // Kernels and the threadpool are torn down on the worker that created them.
  worker_
      ->Call([this] {
        kernels_.clear();
        threadpool_.reset();
        return absl::OkStatus();
      })
      .IgnoreError();
  worker_.reset();  // before the members its idle hook reads
}

TensorView CpuGraphExecutor::ViewOf(const model::Graph& graph, model::TensorId t) const {
  const TensorPlacement& p = plan_.tensors[static_cast<size_t>(t)];
  return {arena_.get() + p.offset, graph.tensor(t).shape, p.pixel_stride};
}

absl::Status CpuGraphExecutor::Compile(const model::Graph& graph, int threads,
                                       bool fuse_residual_adds) {
  auto pool = CpuThreadpool::Create(threads, worker_->cores());
  if (!pool.ok()) return pool.status();
  threadpool_ = std::move(*pool);
  // The residual adds that will run inside their conv's kernel write their output while the
  // conv runs, so that output must not share memory with what the conv reads.
  // Ops run in id order: an add right after its conv finds its other operand ready.
  std::vector<model::TensorId> residual_of(graph.ops.size(), model::kInvalidId);  // by conv
  std::vector<ExtraWriter> early_writes;
  for (model::OpId id = 0;
       fuse_residual_adds && id + 1 < static_cast<model::OpId>(graph.ops.size()); ++id) {
    if (const std::optional<model::TensorId> residual = FusableResidual(graph, id, id + 1)) {
      residual_of[static_cast<size_t>(id)] = *residual;
      early_writes.push_back({graph.op(id + 1).output, id});
      ++id;
    }
  }
  plan_ =
      PlanArena(graph, OpOrder::Sequential(static_cast<int>(graph.ops.size())), {}, early_writes);
  arena_ = AllocateAlignedFloats(static_cast<size_t>(plan_.size));
  if (arena_ == nullptr) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate a ", plan_.size * 4, "-byte activation arena"));
  }
  // Zero it on the pinned worker so its pages are first touched near the cores that use it.
  std::fill_n(arena_.get(), plan_.size, 0.0f);
  for (const model::GraphIO& io : graph.inputs) {
    inputs_.push_back({graph.tensor(io.tensor).shape, ViewOf(graph, io.tensor)});
  }
  for (const model::GraphIO& io : graph.outputs) {
    if (plan_.tensors[static_cast<size_t>(io.tensor)].offset < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("graph output '", io.name, "' is a constant, not an activation"));
    }
    outputs_.push_back({graph.tensor(io.tensor).shape, ViewOf(graph, io.tensor)});
  }
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    const model::Op& op = graph.op(id);
    KernelLayout layout;
    std::vector<TensorView> in_views;
    for (model::TensorId t : graph.ActivationInputs(id)) {
      in_views.push_back(ViewOf(graph, t));
      layout.input_pixel_strides.push_back(in_views.back().pixel_stride);
    }
    const TensorView out_view = ViewOf(graph, op.output);
    layout.output_pixel_stride = out_view.pixel_stride;
    if (const model::TensorId residual = residual_of[static_cast<size_t>(id)];
        residual != model::kInvalidId) {
      const model::OpId add = id + 1;
      in_views.push_back(out_view);
      in_views.push_back(ViewOf(graph, residual));
      const TensorView add_out = ViewOf(graph, graph.op(add).output);
      auto fused = CreateResidualAddedConv(graph, id, add,
                                           {.conv = layout,
                                            .residual_pixel_stride = in_views.back().pixel_stride,
                                            .output_pixel_stride = add_out.pixel_stride},
                                           threadpool_->get());
      if (!fused.ok()) return fused.status();
      if (auto s = (*fused)->Setup(in_views, add_out); !s.ok()) {
        return s;
      }
      kernels_.push_back(std::move(*fused));
      kernels_.push_back(CreateFusedAwayKernel());
      ++fused_residual_adds_;
      ++id;
      continue;
    }
    auto kernel = CreateCpuKernel(graph, id, WorkSlice::Whole(), layout, threadpool_->get());
    if (!kernel.ok()) return kernel.status();
    if (auto s = (*kernel)->Setup(in_views, out_view); !s.ok()) return s;
    kernels_.push_back(std::move(*kernel));
  }
  timings_.resize(kernels_.size());
  return absl::OkStatus();
}

absl::Status CpuGraphExecutor::RunOnWorker(std::span<const float* const> inputs,
                                           std::span<float* const> outputs) {
  // Across the pool's threads: that also wakes them for the first kernel.
  std::vector<FloatCopy> copies;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorView& v = inputs_[i].view;
    copies.push_back({inputs[i], v.data, v.shape.Elements()});
  }
  CopyInParts(copies, [this](size_t parts, absl::FunctionRef<void(size_t)> part) {
    ParallelFor(threadpool_->get(), parts, part);
  });
  const auto start = std::chrono::steady_clock::now();
  auto since_start = [start] {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() -
                                                                start)
        .count();
  };
  for (size_t i = 0; i < kernels_.size(); ++i) {
    timings_[i].start_ns = since_start();
    if (auto s = kernels_[i]->Run(); !s.ok()) return s;
    timings_[i].end_ns = since_start();
  }
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorView& v = outputs_[i].view;
    float* dst = outputs[i];
    for (int64_t h = 0; h < v.shape.h; ++h) {
      for (int64_t w = 0; w < v.shape.w; ++w) {
        dst = std::copy_n(v.pixel(h, w), v.shape.c, dst);
      }
    }
  }
  return absl::OkStatus();
}

absl::Status CpuGraphExecutor::Run(std::span<const float* const> inputs_nhwc,
                                   std::span<float* const> outputs_nhwc) {
  if (absl::Status s = CheckIoPointers(inputs_.size(), outputs_.size(), inputs_nhwc, outputs_nhwc);
      !s.ok()) {
    return s;
  }
  // On the caller when it is on one of the cores and the worker is idle: no hand-off and no
  // wake-up of the caller at the end.
  absl::Status status;
  if (worker_->TryRunHere([&] { status = RunOnWorker(inputs_nhwc, outputs_nhwc); })) {
    return status;
  }
  return worker_->Call([&] { return RunOnWorker(inputs_nhwc, outputs_nhwc); });
}

absl::Status CpuGraphExecutor::CallOnWorker(
    const std::function<absl::Status(std::span<const std::unique_ptr<CpuKernel>>, pthreadpool_t)>&
        job) {
  return worker_->Call([&] { return job(kernels_, threadpool_->get()); });
}

absl::StatusOr<std::vector<std::vector<float>>> CpuGraphExecutor::Run(
    const std::vector<std::vector<float>>& inputs_nhwc) {
  std::vector<model::Shape> input_shapes, output_shapes;
  for (const Endpoint& i : inputs_) input_shapes.push_back(i.shape);
  for (const Endpoint& o : outputs_) output_shapes.push_back(o.shape);
  return executor::RunWithOwnedBuffers(
      input_shapes, output_shapes, inputs_nhwc,
      [this](std::span<const float* const> in, std::span<float* const> out) {
        return Run(in, out);
      });
}

}  // namespace psched::executor::cpu
