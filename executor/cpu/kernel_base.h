// Pieces shared by the CPU kernel implementations (xnnpack_kernels.cc, hand_kernels.cc):
// the KernelBase class that records an op's shapes and checks Setup's views, XNNPACK
// status handling, and the per-kind factories CreateCpuKernel dispatches to.
//
// Internal to executor/cpu; not part of the public API. Thread-safety as CpuKernel.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/common/activation.h"
#include "executor/cpu/cpu_kernel.h"
#include "model/graph.h"

namespace psched::executor::cpu::internal {

class KernelBase : public CpuKernel {
 protected:
  KernelBase(const model::Graph& graph, model::OpId id, WorkSlice slice,
             const KernelLayout& layout);

  // Checks count, shapes, strides and pointers of Setup's views against the op and layout,
  // and stores them in inputs_ / output_.
  absl::Status BindViews(std::span<const TensorView> inputs, const TensorView& output);
  absl::Status Error(const std::string& what) const;

  std::string name_;  // "op 12 'conv3' (conv2d)" for messages
  model::Activation activation_;
  WorkSlice slice_;
  std::vector<model::Shape> input_shapes_;
  std::vector<int64_t> input_strides_;
  model::Shape output_shape_;
  int64_t output_stride_ = 0;
  std::vector<TensorView> inputs_;
  TensorView output_;
};

// Clamp bounds XNNPACK can fuse for `a` (Relu, Clip); infinite otherwise.
float FusedMin(const model::Activation& a);
float FusedMax(const model::Activation& a);
// Whether `a` needs a pass after the kernel (sigmoid-like activations XNNPACK cannot fuse).
bool NeedsActivationPass(const model::Activation& a);

absl::Status XnnStatusToError(const std::string& where, const char* call, int status);
absl::Status EnsureXnnpackInitialized();

// Per-kind factories. REQUIRES: model::ValidateOp(graph, id) passed and the slice axis
// is one the kind supports.
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateConvKernel(const model::Graph& graph,
                                                            model::OpId id, WorkSlice slice,
                                                            const KernelLayout& layout,
                                                            pthreadpool_t threadpool);
// oneDNN conv (onednn_kernels.cc; built where libdnnl is). Unimplemented for cin slices and
// configurations oneDNN has no JIT implementation for.
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateOneDnnConvKernel(const model::Graph& graph,
                                                                  model::OpId id, WorkSlice slice,
                                                                  const KernelLayout& layout);
// Streaming-GEMM conv (streaming_gemm_conv.cc; x86 builds). REQUIRES: StreamingGemmAvailable().
// Unimplemented for grouped convs and cin slices.
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateStreamingGemmConvKernel(
    const model::Graph& graph, model::OpId id, WorkSlice slice, const KernelLayout& layout);
// The same conv adding residual Add `add`'s other operand as a binary post-op: `layout`'s
// output is the add's, `residual_pixel_stride` the residual's; Setup's inputs are the conv's
// activation inputs, then the residual. Unimplemented where the post-op cannot apply (see
// onednn_kernels.cc) and in builds without libdnnl.
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateOneDnnResidualConvKernel(
    const model::Graph& graph, model::OpId conv, model::OpId add, WorkSlice slice,
    const KernelLayout& layout, int64_t residual_pixel_stride);
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateFullyConnectedKernel(const model::Graph& graph,
                                                                      model::OpId id,
                                                                      WorkSlice slice,
                                                                      const KernelLayout& layout,
                                                                      pthreadpool_t threadpool);
absl::StatusOr<std::unique_ptr<CpuKernel>> CreatePoolKernel(const model::Graph& graph,
                                                            model::OpId id,
                                                            const KernelLayout& layout,
                                                            pthreadpool_t threadpool);
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateGlobalAvgPoolKernel(const model::Graph& graph,
                                                                     model::OpId id,
                                                                     const KernelLayout& layout,
                                                                     pthreadpool_t threadpool);
// `slice`: whole, or a row slice (model/split.h) of a row-major output.
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateBinaryKernel(const model::Graph& graph,
                                                              model::OpId id, WorkSlice slice,
                                                              const KernelLayout& layout,
                                                              pthreadpool_t threadpool);
// kConvTranspose2d (conv_transpose_kernels.cc): XNNPACK's deconvolution, or the hand-written
// kernel where XNNPACK refuses the configuration. CreateHandConvTransposeKernel forces the
// latter (tests compare both with the reference).
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateConvTransposeKernel(const model::Graph& graph,
                                                                     model::OpId id,
                                                                     const KernelLayout& layout,
                                                                     pthreadpool_t threadpool);
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateHandConvTransposeKernel(
    const model::Graph& graph, model::OpId id, const KernelLayout& layout,
    pthreadpool_t threadpool);
// The general tensor kinds (tensor_kernels.cc): transpose, reshape, matmul, layer norm,
// reductions, slices, concat along an axis other than the last. MatMul takes row, column and
// K slices (a K slice adds its partial sum into the output), layer norm row slices; the
// others are whole.
bool IsTensorKernelKind(const model::Op& op);
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateTensorKernel(const model::Graph& graph,
                                                              model::OpId id, WorkSlice slice,
                                                              const KernelLayout& layout);
// Hand-written kernels for what XNNPACK (2022-02) lacks or cannot express exactly:
// concat, pad, resize, flatten, standalone activations, softmax, and pools it rejects. On a
// multi-thread `threadpool` they split large outputs by rows. Standalone activations and
// softmax also take a row slice (`slice`); the others are whole.
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateHandKernel(const model::Graph& graph,
                                                            model::OpId id,
                                                            const KernelLayout& layout,
                                                            pthreadpool_t threadpool,
                                                            WorkSlice slice = WorkSlice::Whole());

}  // namespace psched::executor::cpu::internal
