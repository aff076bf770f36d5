// Dense convs with few output pixels as a GEMM that streams the packed filter from memory
// once (x86 with AVX-512F; the file is compiled with -mavx512f, and CreateCpuKernel calls in
// only after StreamingGemmAvailable()).
//
// Why: inceptionv3's convs on 5x5 outputs (1x1 2048>448, 1x3 and 3x1 384>384, ...) take a few
// MB of filter each for 25 output pixels, and in a model run that filter comes from DRAM (the
// previous inference evicted it). Measured on this host's AVX-512 core with the caches flushed
// before each run (a [25 x 2048] x [2048 x 448] product): oneDNN's brgemm matmul 572 us, 6.4
// GB/s of filter, because its register blocking splits the 25 rows into several blocks and
// re-reads each filter panel per block; the same product from L3 takes it 359 us. This kernel
// keeps all rows of a block (up to 28) in registers against one 16-wide column of the filter,
// so each filter cache line is loaded once and used for every row, and prefetches the filter
// stream 4 KB ahead: 412-432 us cold, 290 us warm (docs/runtime-performance.md, "Convs with
// few output pixels").
//
// Layout:
// - The filter (OHWI, so row k = (ky, kx, ci) of the [K x N] GEMM operand is contiguous per
//   output channel) is packed once at creation into K blocks of kc rows, each block a run of
//   16-column panels [kc][16], zero-padded to a multiple of 16 columns: Run reads it strictly
//   in order.
// - Per K block, the input rows of the GEMM (im2col for non-pointwise convs, through a table
//   of each output pixel's input offset per filter tap made at creation) are gathered
//   transposed into a small buffer [kc][pixels], so a row's values for one k sit side by side
//   and the microkernel broadcasts them from one pointer. kc keeps that buffer within 24 KB
//   (L1).
// - The output view is the accumulator between K blocks; bias starts the first block, Relu /
//   Clip end the last, other activations are a pass after. A cin slice adds its partial sum to
//   what the output holds: every block accumulates, its bias (first slice only) is a pass
//   before, and the activation is left to whoever combines the slices (cpu_kernel.h).

// GCC 12's _mm512_max_ps and _mm512_min_ps pass _mm512_undefined_ps() as their unused merge
// source, which -Wmaybe-uninitialized reports at every use.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "executor/common/aligned_floats.h"
#include "executor/cpu/conv_slice.h"
#include "executor/cpu/kernel_base.h"

namespace psched::executor::cpu::internal {
namespace {

constexpr int kLanes = 16;         // floats per AVX-512 register: one filter panel's width
constexpr int kMaxBlockRows = 28;  // accumulators in registers, beside the panel and broadcast
constexpr int64_t kPackedAFloats = 6144;  // the transposed input block: 24 KB, half of L1
constexpr int kPrefetchFloats = 1024;     // filter prefetch distance: 4 KB (4-8 KB measured best)

// The first `n` of a register's 16 lanes (all of them for n >= 16).
__mmask16 FirstLanes(int64_t n) {
  return n >= kLanes ? __mmask16{0xFFFF} : static_cast<__mmask16>((1u << n) - 1);
}

// acc[r] (16 output channels of row r) += sum over k of a[k * a_stride + r] * panel[k][0..15],
// for `rows` = R rows and `kc` k. `bias` non-null starts the accumulators from it (first K
// block), else from `c`; `last` clamps to [lo, hi]. Stores the columns `mask` selects.
template <int R>
void MicroKernel(const float* a, int64_t a_stride, const float* panel, int64_t kc, float* c,
                 int64_t ldc, __mmask16 mask, const float* bias, bool last, float lo, float hi) {
  __m512 acc[R];
  if (bias != nullptr) {
    const __m512 b = _mm512_maskz_loadu_ps(mask, bias);
    for (int r = 0; r < R; ++r) acc[r] = b;
  } else {
    for (int r = 0; r < R; ++r) acc[r] = _mm512_maskz_loadu_ps(mask, c + r * ldc);
  }
  for (int64_t k = 0; k < kc; ++k) {
    const __m512 w = _mm512_load_ps(panel + k * kLanes);
    _mm_prefetch(reinterpret_cast<const char*>(panel + k * kLanes + kPrefetchFloats), _MM_HINT_T0);
    const float* ak = a + k * a_stride;
#pragma GCC unroll 28
    for (int r = 0; r < R; ++r) acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(ak[r]), w, acc[r]);
  }
  if (last) {
    // max and min return their second operand when either is NaN: a NaN sum stays NaN.
    const __m512 vlo = _mm512_set1_ps(lo), vhi = _mm512_set1_ps(hi);
    for (int r = 0; r < R; ++r) acc[r] = _mm512_min_ps(vhi, _mm512_max_ps(vlo, acc[r]));
  }
  for (int r = 0; r < R; ++r) _mm512_mask_storeu_ps(c + r * ldc, mask, acc[r]);
}

using MicroKernelFn = void (*)(const float*, int64_t, const float*, int64_t, float*, int64_t,
                               __mmask16, const float*, bool, float, float);

template <size_t... I>
constexpr std::array<MicroKernelFn, sizeof...(I)> MicroKernels(std::index_sequence<I...>) {
  return {&MicroKernel<static_cast<int>(I) + 1>...};
}
// kMicroKernels[r - 1] handles r rows.
constexpr std::array<MicroKernelFn, kMaxBlockRows> kMicroKernels =
    MicroKernels(std::make_index_sequence<kMaxBlockRows>());

class StreamingGemmConvKernel final : public KernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<CpuKernel>> Create(const model::Graph& graph,
                                                           model::OpId id, WorkSlice slice,
                                                           const KernelLayout& layout) {
    std::unique_ptr<StreamingGemmConvKernel> k(
        new StreamingGemmConvKernel(graph, id, slice, layout));
    if (auto s = k->Init(graph, id); !s.ok()) return s;
    return std::unique_ptr<CpuKernel>(std::move(k));
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    return BindViews(inputs, output);
  }

  absl::Status Run() override {
    const float* in = inputs_[0].pixel(g_.in_row_begin, 0) + g_.in_channel_offset;
    float* out = output_.pixel(g_.out_row_begin, 0) + g_.out_channel_offset;
    const float* panel = filter_.get();
    const float lo = FusedMin(activation_), hi = FusedMax(activation_);
    const bool accumulate = slice_.axis == model::SplitAxis::kInputChannels;
    if (accumulate && has_bias_) AddBias(out);
    for (int64_t k0 = 0; k0 < k_; k0 += kc_) {
      const int64_t kc = std::min(kc_, k_ - k0);
      PackInputBlock(in, k0, kc);
      const bool first = k0 == 0 && !accumulate, last = k0 + kc == k_ && !accumulate;
      for (int64_t n0 = 0; n0 < n_; n0 += kLanes) {
        const __mmask16 mask = FirstLanes(n_ - n0);
        // Every row block reuses the panel while it is in L1.
        for (int64_t m0 = 0; m0 < m_; m0 += block_rows_) {
          const int64_t rows = std::min(block_rows_, m_ - m0);
          kMicroKernels[static_cast<size_t>(rows - 1)](
              packed_in_.get() + m0, m_, panel, kc, out + m0 * output_stride_ + n0, output_stride_,
              mask, first ? bias_.get() + n0 : nullptr, last, lo, hi);
        }
        panel += kc * kLanes;
      }
    }
    if (!accumulate && NeedsActivationPass(activation_)) {
      ApplyActivationInPlace(activation_,
                             {out, {g_.out_rows, output_shape_.w, n_}, output_.pixel_stride});
    }
    return absl::OkStatus();
  }

  std::string_view library() const override { return "psched:streaming-gemm"; }

 private:
  StreamingGemmConvKernel(const model::Graph& graph, model::OpId id, WorkSlice slice,
                          const KernelLayout& layout)
      : KernelBase(graph, id, slice, layout) {}

  absl::Status Init(const model::Graph& graph, model::OpId id) {
    BuildConvSlice(graph, id, slice_, g_);
    if (g_.groups != 1) {
      return absl::UnimplementedError(
          absl::StrCat(name_, ": the streaming GEMM takes dense convs only"));
    }
    if (g_.in_rows * input_shapes_[0].w * input_strides_[0] > INT32_MAX) {
      return absl::UnimplementedError(absl::StrCat(
          name_, ": the streaming GEMM gathers with 32-bit offsets; the input is larger"));
    }
    const model::Window2d& w = g_.window;
    const int64_t taps = int64_t{w.kernel_h} * w.kernel_w;
    cin_ = g_.group_in;
    k_ = taps * cin_;
    n_ = g_.out_channels;
    m_ = g_.out_rows * output_shape_.w;
    const int64_t blocks = (m_ + kMaxBlockRows - 1) / kMaxBlockRows;
    block_rows_ = (m_ + blocks - 1) / blocks;
    // At least 16 k per block, at most all of K (which may be fewer: std::clamp's bounds would
    // then be reversed).
    kc_ = std::min(k_, std::max<int64_t>(kPackedAFloats / m_ / kLanes * kLanes, kLanes));
    PackFilter();
    const int64_t panels = (n_ + kLanes - 1) / kLanes;
    bias_ = AllocateAlignedFloats(static_cast<size_t>(panels * kLanes));
    for (int64_t n = 0; n < panels * kLanes; ++n) {
      bias_[n] = g_.bias != nullptr && n < n_ ? g_.bias[n] : 0.0f;
    }
    has_bias_ = g_.bias != nullptr;
    IndexInputPixels();
    packed_in_ = AllocateAlignedFloats(static_cast<size_t>(kc_ * m_));
    g_.filter = g_.bias = nullptr;
    return absl::OkStatus();
  }

  // [K blocks][16-column panels][kc][16] from the OHWI filter: column n of GEMM row k is
  // filter[n * K + k].
  void PackFilter() {
    const int64_t panels = (n_ + kLanes - 1) / kLanes;
    filter_ = AllocateAlignedFloats(static_cast<size_t>(k_ * panels * kLanes));
    float* dst = filter_.get();
    for (int64_t k0 = 0; k0 < k_; k0 += kc_) {
      const int64_t kc = std::min(kc_, k_ - k0);
      for (int64_t p = 0; p < panels; ++p) {
        for (int64_t k = k0; k < k0 + kc; ++k) {
          for (int64_t j = 0; j < kLanes; ++j) {
            const int64_t n = p * kLanes + j;
            *dst++ = n < n_ ? g_.filter[n * k_ + k] : 0.0f;
          }
        }
      }
    }
  }

  // Adds the bias to every output pixel of the slice (a cin slice's, before it accumulates).
  void AddBias(float* out) const {
    for (int64_t m = 0; m < m_; ++m) {
      float* pixel = out + m * output_stride_;
      for (int64_t n = 0; n < n_; ++n) pixel[n] += bias_[n];
    }
  }

  // For each filter tap and output pixel of the slice, the offset of the input pixel it reads
  // from the slice's first input pixel, and whether it reads the input at all (not padding):
  // 16 pixels per gather.
  void IndexInputPixels() {
    const model::Window2d& w = g_.window;
    const int64_t in_w = input_shapes_[0].w, out_w = output_shape_.w;
    const int64_t chunks = (m_ + kLanes - 1) / kLanes;
    tap_offsets_.assign(static_cast<size_t>(int64_t{w.kernel_h} * w.kernel_w * chunks * kLanes), 0);
    tap_masks_.assign(static_cast<size_t>(int64_t{w.kernel_h} * w.kernel_w * chunks), 0);
    for (int64_t ky = 0, tap = 0; ky < w.kernel_h; ++ky) {
      for (int64_t kx = 0; kx < w.kernel_w; ++kx, ++tap) {
        for (int64_t m = 0; m < m_; ++m) {
          const int64_t y = m / out_w * w.stride_h - w.pad_top + ky * w.dilation_h;
          const int64_t x = m % out_w * w.stride_w - w.pad_left + kx * w.dilation_w;
          if (y < 0 || y >= g_.in_rows || x < 0 || x >= in_w) continue;
          tap_offsets_[static_cast<size_t>(tap * chunks * kLanes + m)] =
              static_cast<int32_t>((y * in_w + x) * input_strides_[0]);
          tap_masks_[static_cast<size_t>(tap * chunks + m / kLanes)] |=
              static_cast<__mmask16>(1u << (m % kLanes));
        }
      }
    }
  }

  // GEMM rows [k0, k0 + kc) of every output pixel into packed_in_[k - k0][pixel]: for each k,
  // the pixels' values are gathered 16 at a time (padding reads as 0).
  void PackInputBlock(const float* in, int64_t k0, int64_t kc) {
    const int64_t chunks = (m_ + kLanes - 1) / kLanes;
    float* packed = packed_in_.get();
    for (int64_t k = k0; k < k0 + kc; ++k) {
      const int64_t tap = k / cin_;
      const float* base = in + k % cin_;
      const int32_t* offsets = tap_offsets_.data() + tap * chunks * kLanes;
      const __mmask16* masks = tap_masks_.data() + tap * chunks;
      float* dst = packed + (k - k0) * m_;
      for (int64_t c = 0; c < chunks; ++c) {
        const __m512i index = _mm512_loadu_si512(offsets + c * kLanes);
        const __m512 v =
            _mm512_mask_i32gather_ps(_mm512_setzero_ps(), masks[c], index, base, sizeof(float));
        _mm512_mask_storeu_ps(dst + c * kLanes, FirstLanes(m_ - c * kLanes), v);
      }
    }
  }

  ConvSlice g_;
  int64_t cin_ = 0, k_ = 0, n_ = 0, m_ = 0;  // GEMM: [m_ x k_] x [k_ x n_]
  int64_t kc_ = 0, block_rows_ = 0;
  bool has_bias_ = false;
  AlignedFloats filter_, bias_, packed_in_;  // 64-byte aligned: panels load aligned
  std::vector<int32_t> tap_offsets_;         // [tap][pixel, padded to 16]
  std::vector<__mmask16> tap_masks_;         // [tap][16 pixels]: which read the input
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateStreamingGemmConvKernel(
    const model::Graph& graph, model::OpId id, WorkSlice slice, const KernelLayout& layout) {
  return StreamingGemmConvKernel::Create(graph, id, slice, layout);
}

}  // namespace psched::executor::cpu::internal
