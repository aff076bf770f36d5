// OpenCL kernels for the canonical ops (model/op_kinds.inc), created once per (op, slice) and
// enqueued many times - the create / run lifecycle of a compiled plan.
//
// KernelFactory serves one graph on one device over one activation arena: it builds the
// embedded OpenCL C program once (OpenClDevice caches it), uploads each op's weights once
// (packed for the kernel, shared by every slice of that op) and binds tensors to their arena
// offsets. An OpKernel is then a fixed list of launches with every argument set; Enqueue only
// puts them on the device's in-order queue.
//
// Only conv2d and fully_connected split; every other kind (model::WorkSize is 0 on every axis)
// takes the whole-op slice only.
//
// Slices (model/split.h): conv2d and fully_connected accept kOutputChannels (conv: channel
// range when groups == 1, group range otherwise), kInputChannels (groups == 1 only) and, for
// conv2d, kRows. Input-channel slices write partial sums without activation onto an output
// that must be zero-filled first (CreateZeroFill); the slice whose range starts at 0 adds the
// bias; once all slices are done, CreateActivationEpilogue applies a fused activation in
// place. With `atomic_partial_sums` the partial sums are added with a CAS loop so that other
// devices (CPU threads) may add into the same output at the same time.
//
// Ownership: the factory and its kernels hold raw pointers to the device, graph and arena,
// which must outlive them; kernels share ownership of their op's weights.
// Thread-safety: Create* are not thread-safe; Enqueue follows OpenClDevice's queue rules.
#pragma once

#include <CL/cl.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/common/arena_plan.h"
#include "executor/common/work_slice.h"
#include "executor/opencl/opencl_device.h"
#include "executor/opencl/svm_arena.h"
#include "model/graph.h"
#include "model/split.h"

namespace psched::executor::opencl {

struct KernelOptions {
  // Input-channel slices only. true: CAS-loop atomic adds, required when another device adds
  // into the same output concurrently. false: plain read-add-write, correct only when every
  // slice of the op runs in this (in-order) queue.
  bool atomic_partial_sums = true;
  // Input-channel slices only: add the partial sums here instead of into the op's output
  // tensor (a private partial buffer in the arena, same shape as the output), so slices on
  // different devices never write the same memory and need no atomics or lock.
  std::optional<TensorPlacement> partial_output = std::nullopt;
};

// One op (or op slice) ready to run: fixed launches with every argument bound.
class OpKernel {
 public:
  struct Launch {
    cl_kernel kernel = nullptr;  // owned
    size_t dims = 1;
    size_t global[3] = {1, 1, 1};
    // Work-group size; local[0] == 0 leaves it to the runtime. When set, each global extent
    // is a multiple of it.
    size_t local[3] = {0, 0, 0};
  };

  ~OpKernel();
  OpKernel(const OpKernel&) = delete;
  OpKernel& operator=(const OpKernel&) = delete;

  // Enqueues every launch on the device queue. `event` (optional) receives the last launch's
  // completion event and `first` (optional) the first launch's; the caller releases them.
  absl::Status Enqueue(cl_event* event = nullptr, cl_event* first = nullptr) const;

  const std::string& name() const { return name_; }
  size_t launch_count() const { return launches_.size(); }
  // REQUIRES: i < launch_count().
  const Launch& launch(size_t i) const { return launches_[i]; }

 private:
  friend class KernelFactory;
  OpKernel(OpenClDevice* device, std::string name) : device_(device), name_(std::move(name)) {}

  OpenClDevice* device_;
  std::string name_;
  std::vector<Launch> launches_;
  std::shared_ptr<SvmArena> weights_;
};

class KernelFactory {
 public:
  // `placements[t]` says where tensor t lives in `arena` (constants need none). Builds the
  // program (once per device).
  static absl::StatusOr<std::unique_ptr<KernelFactory>> Create(
      OpenClDevice* device, const model::Graph* graph, SvmArena* arena,
      std::vector<TensorPlacement> placements);
  // Dense tensors: `tensor_offsets[t]` is tensor t's offset (negative: not in the arena).
  static absl::StatusOr<std::unique_ptr<KernelFactory>> Create(
      OpenClDevice* device, const model::Graph* graph, SvmArena* arena,
      const std::vector<int64_t>& tensor_offsets);

  // The kernel for `slice` of op `id`. kInvalidArgument names the op and the problem when the
  // op is malformed, the slice is out of range or unsupported for the op, or a tensor is
  // missing from / does not fit in the arena.
  absl::StatusOr<std::unique_ptr<OpKernel>> Create(model::OpId id, WorkSlice slice = {},
                                                   KernelOptions options = {});
  // Zero-fills op `id`'s output (run before its input-channel slices).
  absl::StatusOr<std::unique_ptr<OpKernel>> CreateZeroFill(model::OpId id);
  // Applies op `id`'s fused activation to its output in place (run after all input-channel
  // slices). An op without a fused activation gets a kernel with no launches.
  absl::StatusOr<std::unique_ptr<OpKernel>> CreateActivationEpilogue(model::OpId id);

 private:
  // A tensor's placement checked against the arena, in the int32 the kernels take.
  struct Bound {
    int32_t offset = 0;
    int32_t stride = 0;
  };

  KernelFactory(OpenClDevice* device, const model::Graph* graph, SvmArena* arena,
                std::vector<TensorPlacement> placements, cl_program program)
      : device_(device),
        graph_(graph),
        arena_(arena),
        placements_(std::move(placements)),
        program_(program) {}

  absl::StatusOr<Bound> Place(model::OpId id, model::TensorId tensor) const;
  // Place for the op's output, or for options.partial_output when set on a cin slice.
  absl::StatusOr<Bound> PlaceOutput(model::OpId id, const WorkSlice& slice,
                                    const KernelOptions& options) const;
  absl::StatusOr<Bound> Place(model::OpId id, model::TensorId tensor,
                              const TensorPlacement& p) const;
  // Where op `id` reads its input `t`: its place in the arena or, for a constant operand, the
  // op's packed `weights` at *constant_offset (then moved past it) with rows `packed_stride`
  // apart.
  struct Source {
    const SvmArena* memory = nullptr;
    int64_t offset = 0;
    int64_t stride = 0;
  };
  absl::StatusOr<Source> InputSource(model::OpId id, model::TensorId t, const SvmArena* weights,
                                     int64_t packed_stride, int64_t* constant_offset) const;
  absl::StatusOr<cl_kernel> NewKernel(const char* name) const;
  // The op's packed weights, uploaded on first use.
  absl::StatusOr<std::shared_ptr<SvmArena>> Weights(model::OpId id);

  absl::Status BuildConv(model::OpId id, const WorkSlice& slice, const KernelOptions& options,
                         OpKernel& kernel);
  absl::Status BuildFullyConnected(model::OpId id, const WorkSlice& slice,
                                   const KernelOptions& options, OpKernel& kernel);
  absl::Status BuildUnsliced(model::OpId id, OpKernel& kernel);
  absl::Status BuildMatMul(model::OpId id, OpKernel& kernel);

  OpenClDevice* device_;
  const model::Graph* graph_;
  SvmArena* arena_;
  std::vector<TensorPlacement> placements_;
  cl_program program_;
  std::map<model::OpId, std::shared_ptr<SvmArena>> weights_;
};

}  // namespace psched::executor::opencl
