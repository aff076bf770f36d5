// CPU conv kernels backed by oneDNN (x86 builds with libdnnl only): whole ops and slices along
// every axis, NHWC views with any pixel stride, the activation fused as an eltwise post-op
// (Relu, Clip, Sigmoid, SiLU, HardSigmoid, HardSwish, Tanh, GELU: each output element is
// written once, activated, instead of being written, read back and activated in a second
// pass), any other as a pass after. A cin slice adds its partial sum to the output through a
// sum post-op (cpu_kernel.h), without the activation.
//
// Pointwise convs (1x1, stride 1, no padding) are a matrix product [pixels x cin] x [cin x
// cout] and run as a oneDNN matmul, which takes strided rows: a view into a concat's channel
// slice is read and written in place. oneDNN 2.6's JIT convs take dense NHWC only (a strided
// descriptor gets its reference implementation, 500x slower), so other convs stage strided
// views through dense buffers.
//
// A conv followed by a residual Add (executor/cpu/residual_added_conv.h) can add the residual
// inside the conv as a oneDNN binary post-op: each output element is written once, as
// activation(conv + residual), instead of the conv's output being written, read back and added
// in a second pass (hrnet's 32>128 @56x56 bottleneck conv: 529 -> 308 us with cold caches).
// That takes dense views for a direct conv (strided ones for a pointwise conv's matmul) and a
// conv activation oneDNN can fuse; otherwise creation fails with Unimplemented.
//
// oneDNN picks its implementation per configuration; only JIT ones are taken (its reference
// implementation is plain loops, no match for XNNPACK); anything else fails with Unimplemented
// so the caller falls back to XNNPACK.
//
// oneDNN (Debian's build) runs on OpenMP and fixes a primitive's thread count when it creates
// it. A psched CPU device runs its kernels on one thread per core through XNNPACK's
// pthreadpool, so creation and Run limit the calling thread's OpenMP regions to one thread
// (omp_set_num_threads sets only the calling thread's default; psched has no other OpenMP).
#include <omp.h>

#include <algorithm>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "executor/cpu/conv_slice.h"
#include "executor/cpu/kernel_base.h"

namespace psched::executor::cpu::internal {
namespace {

using dnnl::memory;

// One CPU engine for the process (a cheap handle; each kernel has its own in-order stream).
dnnl::engine& Engine() {
  static dnnl::engine* engine = new dnnl::engine(dnnl::engine::kind::cpu, 0);
  return *engine;
}

// Appends `a` to `ops` as eltwise post-ops computing it exactly as model::Activation defines
// it; false (and `ops` unchanged) for kinds oneDNN has no eltwise for.
bool AppendActivation(const model::Activation& a, dnnl::post_ops& ops) {
  using dnnl::algorithm;
  switch (a.kind) {
    case model::ActivationKind::kNone:
      return true;
    case model::ActivationKind::kRelu:
      ops.append_eltwise(1.0f, algorithm::eltwise_relu, 0.0f, 0.0f);
      return true;
    case model::ActivationKind::kClip:
      ops.append_eltwise(1.0f, algorithm::eltwise_clip, a.min, a.max);
      return true;
    case model::ActivationKind::kSigmoid:
      ops.append_eltwise(1.0f, algorithm::eltwise_logistic, 0.0f, 0.0f);
      return true;
    case model::ActivationKind::kSilu:
      ops.append_eltwise(1.0f, algorithm::eltwise_swish, 1.0f, 0.0f);
      return true;
    case model::ActivationKind::kHardSwish:
      ops.append_eltwise(1.0f, algorithm::eltwise_hardswish, 0.0f, 0.0f);
      return true;
    case model::ActivationKind::kHardSigmoid:
      ops.append_eltwise(1.0f, algorithm::eltwise_linear, a.alpha, a.beta);
      ops.append_eltwise(1.0f, algorithm::eltwise_clip, 0.0f, 1.0f);
      return true;
    case model::ActivationKind::kTanh:
      ops.append_eltwise(1.0f, algorithm::eltwise_tanh, 0.0f, 0.0f);
      return true;
    case model::ActivationKind::kGelu:
      ops.append_eltwise(1.0f, algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
      return true;
    default:
      return false;
  }
}

// A dense NHWC tensor of `rows` x `w` pixels of `c` channels.
memory::desc NhwcDesc(int64_t c, int64_t rows, int64_t w) {
  return memory::desc({1, c, rows, w}, memory::data_type::f32, memory::format_tag::nhwc);
}

class OneDnnConvKernel final : public KernelBase {
 public:
  // `add`: the residual Add after conv `id` to compute as a post-op (its residual's pixel
  // stride in `residual_stride`; `layout`'s output is the add's), or -1 for none.
  static absl::StatusOr<std::unique_ptr<CpuKernel>> Create(const model::Graph& graph,
                                                           model::OpId id, WorkSlice slice,
                                                           const KernelLayout& layout,
                                                           model::OpId add = -1,
                                                           int64_t residual_stride = 0) {
    std::unique_ptr<OneDnnConvKernel> k(new OneDnnConvKernel(graph, id, slice, layout));
    if (add >= 0) {
      k->residual_add_ = true;
      k->add_activation_ = graph.op(add).activation;
      k->residual_stride_ = residual_stride > 0 ? residual_stride : graph.output_shape(id).c;
    }
    try {
      if (auto s = k->Init(graph, id); !s.ok()) return s;
    } catch (const dnnl::error& e) {
      return absl::UnimplementedError(absl::StrCat(k->name_, ": oneDNN: ", e.what()));
    }
    return std::unique_ptr<CpuKernel>(std::move(k));
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (residual_add_) {
      // The conv's inputs, then the residual; `output` is the add's.
      if (inputs.empty()) return Error("Setup got no views; expected the conv's and the residual");
      const TensorView& residual = inputs.back();
      inputs = inputs.first(inputs.size() - 1);
      if (residual.shape != output.shape || residual.pixel_stride != residual_stride_ ||
          residual.data == nullptr) {
        return Error("the residual view does not match the output or the layout");
      }
      residual_ = residual;
    }
    if (auto s = BindViews(inputs, output); !s.ok()) return s;
    if (residual_add_) residual_mem_.set_data_handle(ResidualView().data);
    src_.set_data_handle(staged_in_.empty() ? InView().data : staged_in_.data());
    dst_.set_data_handle(staged_out_.empty() ? OutView().data : staged_out_.data());
    return absl::OkStatus();
  }

  absl::Status Run() override {
    omp_set_num_threads(1);
    if (!staged_in_.empty()) Copy(InView(), staged_in_.data(), false);
    // The sum post-op adds to what the staged output holds.
    if (accumulate_ && !staged_out_.empty()) Copy(OutView(), staged_out_.data(), false);
    try {
      std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src_},
                                           {DNNL_ARG_WEIGHTS, weights_},
                                           {DNNL_ARG_BIAS, bias_},
                                           {DNNL_ARG_DST, dst_},
                                           {DNNL_ARG_SCRATCHPAD, scratchpad_}};
      if (residual_add_) {
        args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(binary_post_op_) | DNNL_ARG_SRC_1,
                     residual_mem_);
      }
      primitive_.execute(stream_, args);
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat(name_, ": oneDNN: ", e.what()));
    }
    if (!staged_out_.empty()) Copy(OutView(), staged_out_.data(), true);
    if (!pass_.has_value()) return absl::OkStatus();
    ApplyActivationInPlace(*pass_, OutView());
    return absl::OkStatus();
  }

  std::string_view library() const override { return impl_; }

 private:
  OneDnnConvKernel(const model::Graph& graph, model::OpId id, WorkSlice slice,
                   const KernelLayout& layout)
      : KernelBase(graph, id, slice, layout) {}

  // The part of the input and output views the slice reads and writes.
  TensorView InView() const {
    return {inputs_[0].pixel(g_.in_row_begin, 0) + g_.in_channel_offset,
            {g_.in_rows, input_shapes_[0].w, g_.groups * g_.group_in},
            inputs_[0].pixel_stride};
  }
  TensorView OutView() const {
    return {output_.pixel(g_.out_row_begin, 0) + g_.out_channel_offset,
            {g_.out_rows, output_shape_.w, g_.out_channels},
            output_.pixel_stride};
  }

  // The part of the residual the slice adds: where OutView is in the output.
  TensorView ResidualView() const {
    return {residual_.pixel(g_.out_row_begin, 0) + g_.out_channel_offset,
            {g_.out_rows, output_shape_.w, g_.out_channels},
            residual_.pixel_stride};
  }

  // Copies between a strided view and a dense buffer of its shape (`to_view` sets direction).
  static void Copy(const TensorView& view, float* dense, bool to_view) {
    const int64_t c = view.shape.c;
    for (int64_t p = 0; p < view.shape.h * view.shape.w; ++p) {
      float* strided = view.data + p * view.pixel_stride;
      if (to_view) {
        std::copy_n(dense + p * c, c, strided);
      } else {
        std::copy_n(strided, c, dense + p * c);
      }
    }
  }

  absl::Status Init(const model::Graph& graph, model::OpId id) {
    accumulate_ = slice_.axis == model::SplitAxis::kInputChannels;
    if (accumulate_ && residual_add_) {
      return absl::UnimplementedError(
          absl::StrCat(name_, ": a cin slice's partial sum cannot take a residual post-op"));
    }
    // oneDNN fixes a primitive's thread count when it creates it: one, on this thread.
    omp_set_num_threads(1);
    BuildConvSlice(graph, id, slice_, g_);
    dnnl::primitive_attr attr;
    // Each kernel owns its scratchpad: oneDNN's primitive cache may hand two kernels of the
    // same configuration one primitive, which device threads then run concurrently.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (accumulate_) {
      ops.append_sum(1.0f);
    } else if (!AppendActivation(activation_, ops)) {
      pass_ = activation_;
    }
    // The conv alone, for comparing implementations (ChoosePd). Attributes are handles: a
    // copy would share the residual post-op appended below.
    plain_attr_.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    plain_attr_.set_post_ops(ops);
    if (residual_add_) {
      // The conv's own activation must be applied before the add: only as a post-op.
      if (pass_.has_value()) {
        return absl::UnimplementedError(
            absl::StrCat(name_, ": its activation cannot run before a residual post-op"));
      }
      if (!IsPointwise() &&
          (residual_stride_ != g_.out_channels || output_stride_ != g_.out_channels ||
           slice_.axis == model::SplitAxis::kOutputChannels)) {
        return absl::UnimplementedError(absl::StrCat(
            name_, ": a direct conv adds a residual post-op over dense, whole-width views only"));
      }
      binary_post_op_ = ops.len();
      ops.append_binary(dnnl::algorithm::binary_add, ResidualDesc());
      if (!AppendActivation(add_activation_, ops)) pass_ = add_activation_;
    }
    attr.set_post_ops(ops);
    stream_ = dnnl::stream(Engine());
    const memory::desc bias_md =
        IsPointwise()
            ? memory::desc({1, g_.out_channels}, memory::data_type::f32, memory::format_tag::ab)
            : memory::desc({g_.out_channels}, memory::data_type::f32, memory::format_tag::x);
    absl::Status made = IsPointwise() ? InitMatmul(attr, bias_md) : InitConv(attr, bias_md);
    if (!made.ok()) return made;
    bias_ = memory(bias_md, Engine());
    float* bias = static_cast<float*>(bias_.get_data_handle());
    for (int64_t c = 0; c < g_.out_channels; ++c) bias[c] = g_.bias ? g_.bias[c] : 0.0f;
    g_.filter = g_.bias = nullptr;
    return absl::OkStatus();
  }

  // 1x1, stride 1, no padding, one group: every output pixel is its input pixel times the
  // filter, so the slice's pixels form a matrix whose rows are the views' pixel strides apart.
  bool IsPointwise() const {
    const model::Window2d& w = g_.window;
    return g_.groups == 1 && w.kernel_h == 1 && w.kernel_w == 1 && w.stride_h == 1 &&
           w.stride_w == 1 && w.pad_top == 0 && w.pad_bottom == 0 && w.pad_left == 0 &&
           w.pad_right == 0;
  }

  absl::Status InitMatmul(const dnnl::primitive_attr& attr, const memory::desc& bias_md) {
    const int64_t pixels = g_.out_rows * output_shape_.w;
    const int64_t in_c = g_.group_in;
    const memory::desc src_md({pixels, in_c}, memory::data_type::f32, {input_strides_[0], 1});
    const memory::desc dst_md({pixels, g_.out_channels}, memory::data_type::f32,
                              {output_stride_, 1});
    // The graph's 1x1 filter is [cout][cin]: the [cin x cout] weights, column-major.
    const memory::desc user_weights_md({in_c, g_.out_channels}, memory::data_type::f32, {1, in_c});
    const memory::desc any_weights_md({in_c, g_.out_channels}, memory::data_type::f32,
                                      memory::format_tag::any);
    const dnnl::matmul::desc desc(src_md, any_weights_md, bias_md, dst_md);
    auto pd = ChoosePd<dnnl::matmul::primitive_desc>(desc, attr);
    if (!pd.ok()) return pd.status();
    return Adopt<dnnl::matmul>(*pd, user_weights_md, src_md, dst_md);
  }

  absl::Status InitConv(const dnnl::primitive_attr& attr, const memory::desc& bias_md) {
    const model::Window2d& w = g_.window;
    const int64_t in_c = g_.groups * g_.group_in;
    // Strided views (a concat's channel slice, a cout slice of the output) are staged
    // through dense buffers: oneDNN 2.6 has JIT convs for dense NHWC only.
    const int64_t in_w = input_shapes_[0].w, out_w = output_shape_.w;
    const memory::desc src_md = NhwcDesc(in_c, g_.in_rows, in_w);
    const memory::desc dst_md = NhwcDesc(g_.out_channels, g_.out_rows, out_w);
    if (input_strides_[0] != in_c) staged_in_.resize(static_cast<size_t>(g_.in_rows * in_w * in_c));
    if (output_stride_ != g_.out_channels) {
      staged_out_.resize(static_cast<size_t>(g_.out_rows * out_w * g_.out_channels));
    }
    // The graph's filter is OHWI (GOHWI with groups); oneDNN chooses its own packing.
    const bool grouped = g_.groups > 1;
    const memory::dims filter_dims =
        grouped ? memory::dims{g_.groups, g_.group_out, g_.group_in, w.kernel_h, w.kernel_w}
                : memory::dims{g_.group_out, g_.group_in, w.kernel_h, w.kernel_w};
    const memory::desc user_weights_md(
        filter_dims, memory::data_type::f32,
        grouped ? memory::format_tag::gohwi : memory::format_tag::ohwi);
    const memory::desc any_weights_md(filter_dims, memory::data_type::f32, memory::format_tag::any);
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
        any_weights_md, bias_md, dst_md, {w.stride_h, w.stride_w},
        {w.dilation_h - 1, w.dilation_w - 1}, {w.pad_top, w.pad_left}, {w.pad_bottom, w.pad_right});
    auto pd = ChoosePd<dnnl::convolution_forward::primitive_desc>(desc, attr);
    if (!pd.ok()) return pd.status();
    return Adopt<dnnl::convolution_forward>(*pd, user_weights_md, src_md, dst_md);
  }

  // oneDNN's implementation of `desc` with `attr`: its first choice, or for convs where
  // PrefersDirectJit its direct JIT kernel. With a residual post-op it must be the one the
  // conv alone gets: oneDNN 2.6 does not take brgconv with this post-op and falls back to its
  // direct JIT kernel (26 of hrnet's direct convs), whose loss on those configurations
  // outweighs the pass the post-op saves, so this is Unimplemented and the add stays a pass.
  template <typename PrimitiveDesc, typename Desc>
  absl::StatusOr<PrimitiveDesc> ChoosePd(const Desc& desc, const dnnl::primitive_attr& attr) {
    auto choose = [&](const dnnl::primitive_attr& a) {
      PrimitiveDesc pd(desc, a, Engine());
      if constexpr (std::is_same_v<PrimitiveDesc, dnnl::convolution_forward::primitive_desc>) {
        if (PrefersDirectJit()) {
          // oneDNN lists implementations best first; take its direct JIT kernel over brgconv.
          PrimitiveDesc first = pd;
          while (!absl::StartsWith(pd.impl_info_str(), "jit:") && pd.next_impl()) {
          }
          if (!absl::StartsWith(pd.impl_info_str(), "jit:")) pd = first;
        }
      }
      return pd;
    };
    PrimitiveDesc pd = choose(attr);
    if (residual_add_) {
      const std::string alone = choose(plain_attr_).impl_info_str();
      if (alone != pd.impl_info_str()) {
        return absl::UnimplementedError(absl::StrCat(name_,
                                                     ": with a residual post-op oneDNN runs ",
                                                     pd.impl_info_str(), ", alone ", alone));
      }
    }
    return pd;
  }

  // Measured inside interleaved runs (psched_conv_kernels_bench, AVX-512, docs/runtime-
  // performance.md): oneDNN's direct JIT conv beats its first choice, brgconv, by 6-22% on
  // dense convs with 16-64 input channels at stride 1 up to 56x56 outputs and 16-32 at stride
  // 2 (squeezenet's and peleenet's 3x3s), and loses by 10-76% on larger inputs, three-channel
  // first layers and wide 56x56 stride-2 ones.
  bool PrefersDirectJit() const {
    const model::Window2d& w = g_.window;
    const int64_t cin = g_.group_in;
    if (g_.groups != 1 || cin < 16 || w.stride_h != w.stride_w) return false;
    if (w.stride_h == 1) return cin <= 64 && g_.out_rows * output_shape_.w <= 56 * 56;
    return w.stride_h == 2 && cin <= 32;
  }

  // Takes `pd` if oneDNN chose a JIT implementation (its reference ones are plain loops): the
  // primitive, the filter packed once into its layout, its scratchpad and the memories Setup
  // binds.
  template <typename Primitive, typename PrimitiveDesc>
  absl::Status Adopt(const PrimitiveDesc& pd, const memory::desc& user_weights_md,
                     const memory::desc& src_md, const memory::desc& dst_md) {
    impl_ = absl::StrCat("onednn:", pd.impl_info_str());
    if (!absl::StrContains(impl_, "jit") && !absl::StrContains(impl_, "brg") &&
        !absl::StrContains(impl_, "brdgmm")) {
      return absl::UnimplementedError(
          absl::StrCat(name_, ": oneDNN has only ", impl_, " for this configuration"));
    }
    primitive_ = Primitive(pd);
    weights_ = memory(pd.weights_desc(), Engine());
    memory user_weights(user_weights_md, Engine(), const_cast<float*>(g_.filter));
    dnnl::reorder(user_weights, weights_).execute(stream_, user_weights, weights_);
    scratchpad_ = memory(pd.scratchpad_desc(), Engine());
    src_ = memory(src_md, Engine(), DNNL_MEMORY_NONE);
    dst_ = memory(dst_md, Engine(), DNNL_MEMORY_NONE);
    if (residual_add_) residual_mem_ = memory(ResidualDesc(), Engine(), DNNL_MEMORY_NONE);
    return absl::OkStatus();
  }

  // The residual as the binary post-op's second source: shaped like the primitive's output.
  memory::desc ResidualDesc() const {
    if (IsPointwise()) {
      return memory::desc({g_.out_rows * output_shape_.w, g_.out_channels}, memory::data_type::f32,
                          {residual_stride_, 1});
    }
    return NhwcDesc(g_.out_channels, g_.out_rows, output_shape_.w);
  }

  ConvSlice g_;
  std::string impl_;
  // Set when the kernel adds a residual as a post-op (Create's `add`).
  bool residual_add_ = false;
  bool accumulate_ = false;  // a cin slice: dst += conv, no activation
  // The activation Run applies in a pass after the primitive: one oneDNN has no post-op for.
  std::optional<model::Activation> pass_;
  dnnl::primitive_attr plain_attr_;  // without the residual and the add's activation
  model::Activation add_activation_;
  int64_t residual_stride_ = 0;
  int binary_post_op_ = 0;  // its index among the post-ops
  TensorView residual_;
  memory residual_mem_;
  std::vector<float> staged_in_, staged_out_;  // empty: the view is dense, used in place
  dnnl::primitive primitive_;  // a convolution_forward, or a matmul for pointwise convs
  dnnl::stream stream_;        // in-order; carries only the engine on the CPU
  memory weights_, bias_, scratchpad_, src_, dst_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateOneDnnConvKernel(const model::Graph& graph,
                                                                  model::OpId id, WorkSlice slice,
                                                                  const KernelLayout& layout) {
  return OneDnnConvKernel::Create(graph, id, slice, layout);
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateOneDnnResidualConvKernel(
    const model::Graph& graph, model::OpId conv, model::OpId add, WorkSlice slice,
    const KernelLayout& layout, int64_t residual_pixel_stride) {
  return OneDnnConvKernel::Create(graph, conv, slice, layout, add, residual_pixel_stride);
}

}  // namespace psched::executor::cpu::internal
