// CpuKernel: one canonical op (or one slice of its work) compiled for the CPU.
//
// The lifecycle follows XNNPACK's operators: CreateCpuKernel validates the op and packs its
// weights (expensive, once); Setup binds the input and output buffers (once per arena
// layout); Run computes (cheap, many times). Buffers are TensorViews: NHWC tensors whose
// pixels may be `pixel_stride` floats apart, so a producer can write straight into a channel
// slice of a concat output and consumers can read from one.
//
// A kernel bound to a WorkSlice computes only that slice of the op (model/split.h):
//  - cout:    output channels [begin, end) (groups [begin, end) for grouped conv);
//  - spatial: output rows [begin, end);
//  - cin:     the partial sum over input channels [begin, end), ADDED to the output. The
//             slice with begin == 0 adds the bias; no slice applies the fused activation
//             (call ApplyActivationInPlace, executor/common/activation.h, once every slice has
//             run). REQUIRES: the output was zeroed before the first slice; slices of one op that
//             may run concurrently add into different outputs (the co-execution runtime gives
//             each its own partial-sum buffer and adds them up after the last).
// Views always describe the whole op's tensors; the kernel offsets into them itself.
//
// Thread-safety: a kernel is used by one thread at a time. Run may use the XNNPACK
// threadpool the kernel was created with.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "executor/common/tensor_view.h"
#include "executor/common/work_slice.h"
#include "model/graph.h"

typedef struct pthreadpool* pthreadpool_t;
typedef struct xnn_operator* xnn_operator_t;

namespace psched::executor::cpu {

class CpuKernel {
 public:
  virtual ~CpuKernel() = default;

  // Binds buffers. `inputs` holds one view per activation input in op.inputs order.
  // REQUIRES: shapes equal the graph's; the buffers stay valid until the next Setup; 16
  // bytes (XNN_EXTRA_BYTES) past each input's last element are readable (XNNPACK's vector
  // loads may touch them; ArenaPlan leaves that slack after every block).
  virtual absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) = 0;
  // Computes the slice. REQUIRES: Setup succeeded.
  virtual absl::Status Run() = 0;
  // Run, then `written(part)` for each part of the output, on the thread that wrote it and
  // right after it did: a kernel cut into parts across a threadpool (parallel_slices_kernel.h)
  // calls it once per part, as soon as that part is done; any other kernel once, after Run,
  // with the whole op. Not called when Run fails. What follows the data while it is in that
  // core's cache (residual_added_conv.h). REQUIRES: Setup succeeded; the kernel computes a whole
  // op.
  virtual absl::Status RunThen(absl::FunctionRef<void(const WorkSlice& written)> written);
  // The XNNPACK operator doing all of Run's work, or null when Run does more (hand-written
  // kernels, cin accumulation, activation passes). Lets benchmarks time XNNPACK alone.
  virtual xnn_operator_t xnnpack_operator() const { return nullptr; }
  // The kernel library doing the work: "xnnpack", "psched" (hand-written),
  // "psched:streaming-gemm" or "onednn:<implementation>" (e.g. "onednn:jit:avx2").
  virtual std::string_view library() const { return "xnnpack"; }
};

// Which library CreateCpuKernel builds a conv from. kAuto applies the per-configuration rule
// of kernel_choice.h; the others force one (benchmarks, tests). kOneDnn fails with Unimplemented
// where oneDNN is not built in or has no JIT implementation for the configuration;
// kStreamingGemm (psched's own, for convs with few output pixels: streaming_gemm_conv.cc) where
// the core has no AVX-512F, and for grouped convs and cin slices.
enum class KernelLibrary { kAuto, kXnnpack, kOneDnn, kStreamingGemm };

// The pixel strides of the views a kernel will be set up with. XNNPACK fixes strides when it
// creates an operator, so they are part of compilation; Setup checks them.
struct KernelLayout {
  std::vector<int64_t> input_pixel_strides;  // per activation input; empty: all contiguous
  int64_t output_pixel_stride = 0;           // 0: contiguous
};

// Compiles op `id` of `graph` for `slice` and `layout`. Weights and constant operands are
// copied or packed, so the graph need not outlive the kernel. `threadpool` may be null (run
// on the calling thread). Fails with InvalidArgument for malformed ops, slices outside
// model::WorkSize or strided views the kind cannot take, and Unimplemented for slice axes
// the kind cannot do. `library` only matters for convs.
absl::StatusOr<std::unique_ptr<CpuKernel>> CreateCpuKernel(
    const model::Graph& graph, model::OpId id, WorkSlice slice, const KernelLayout& layout,
    pthreadpool_t threadpool, KernelLibrary library = KernelLibrary::kAuto);

}  // namespace psched::executor::cpu
