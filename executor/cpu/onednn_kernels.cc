// CPU conv kernels backed by oneDNN (x86 builds with libdnnl only): whole ops, output-channel
// slices and row slices, NHWC views with any pixel stride (strided ones staged through dense
// buffers), Relu / Clip fused as a post-op, other activations as a pass after.
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

// A dense NHWC tensor of `rows` x `w` pixels of `c` channels.
memory::desc NhwcDesc(int64_t c, int64_t rows, int64_t w) {
  return memory::desc({1, c, rows, w}, memory::data_type::f32, memory::format_tag::nhwc);
}

class OneDnnConvKernel final : public KernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<CpuKernel>> Create(const model::Graph& graph,
                                                           model::OpId id, WorkSlice slice,
                                                           const KernelLayout& layout) {
    std::unique_ptr<OneDnnConvKernel> k(new OneDnnConvKernel(graph, id, slice, layout));
    try {
      if (auto s = k->Init(graph, id); !s.ok()) return s;
    } catch (const dnnl::error& e) {
      return absl::UnimplementedError(absl::StrCat(k->name_, ": oneDNN: ", e.what()));
    }
    return std::unique_ptr<CpuKernel>(std::move(k));
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (auto s = BindViews(inputs, output); !s.ok()) return s;
    src_.set_data_handle(staged_in_.empty() ? InView().data : staged_in_.data());
    dst_.set_data_handle(staged_out_.empty() ? OutView().data : staged_out_.data());
    return absl::OkStatus();
  }

  absl::Status Run() override {
    omp_set_num_threads(1);
    if (!staged_in_.empty()) Copy(InView(), staged_in_.data(), false);
    try {
      conv_.execute(stream_, {{DNNL_ARG_SRC, src_},
                              {DNNL_ARG_WEIGHTS, weights_},
                              {DNNL_ARG_BIAS, bias_},
                              {DNNL_ARG_DST, dst_},
                              {DNNL_ARG_SCRATCHPAD, scratchpad_}});
    } catch (const dnnl::error& e) {
      return absl::InternalError(absl::StrCat(name_, ": oneDNN conv: ", e.what()));
    }
    if (!staged_out_.empty()) Copy(OutView(), staged_out_.data(), true);
    if (NeedsActivationPass(activation_)) ApplyActivationInPlace(activation_, OutView());
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
    if (slice_.axis == model::SplitAxis::kInputChannels) {
      return absl::UnimplementedError(absl::StrCat(name_, ": no oneDNN kernel for cin slices"));
    }
    // oneDNN fixes a primitive's thread count when it creates it: one, on this thread.
    omp_set_num_threads(1);
    BuildConvSlice(graph, id, slice_, g_);
    const model::Window2d& w = g_.window;
    const int64_t in_c = g_.groups * g_.group_in;
    // oneDNN 2.6 has JIT convs for dense NHWC only; strided views (a concat's channel slice,
    // a cout slice of the output) are staged through dense buffers, a copy far cheaper than
    // the conv.
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
    const memory::desc bias_md({g_.out_channels}, memory::data_type::f32, memory::format_tag::x);
    const dnnl::convolution_forward::desc desc(
        dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct, src_md,
        any_weights_md, bias_md, dst_md, {w.stride_h, w.stride_w},
        {w.dilation_h - 1, w.dilation_w - 1}, {w.pad_top, w.pad_left}, {w.pad_bottom, w.pad_right});
    dnnl::primitive_attr attr;
    // Each kernel owns its scratchpad: oneDNN's primitive cache may hand two kernels of the
    // same configuration one primitive, which device threads then run concurrently.
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
    dnnl::post_ops ops;
    if (activation_.kind == model::ActivationKind::kRelu) {
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    } else if (activation_.kind == model::ActivationKind::kClip) {
      ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_clip, activation_.min, activation_.max);
    }
    attr.set_post_ops(ops);
    const dnnl::convolution_forward::primitive_desc pd(desc, attr, Engine());
    impl_ = absl::StrCat("onednn:", pd.impl_info_str());
    if (!absl::StrContains(impl_, "jit") && !absl::StrContains(impl_, "brg")) {
      return absl::UnimplementedError(
          absl::StrCat(name_, ": oneDNN has only ", impl_, " for this configuration"));
    }
    conv_ = dnnl::convolution_forward(pd);
    stream_ = dnnl::stream(Engine());
    // Pack the filter once into oneDNN's layout, and copy the bias (zeros when there is none).
    weights_ = memory(pd.weights_desc(), Engine());
    memory user_weights(user_weights_md, Engine(), const_cast<float*>(g_.filter));
    dnnl::reorder(user_weights, weights_).execute(stream_, user_weights, weights_);
    bias_ = memory(bias_md, Engine());
    float* bias = static_cast<float*>(bias_.get_data_handle());
    for (int64_t c = 0; c < g_.out_channels; ++c) bias[c] = g_.bias ? g_.bias[c] : 0.0f;
    g_.filter = g_.bias = nullptr;
    scratchpad_ = memory(pd.scratchpad_desc(), Engine());
    src_ = memory(src_md, Engine(), DNNL_MEMORY_NONE);
    dst_ = memory(dst_md, Engine(), DNNL_MEMORY_NONE);
    return absl::OkStatus();
  }

  ConvSlice g_;
  std::string impl_;
  std::vector<float> staged_in_, staged_out_;  // empty: the view is dense, used in place
  dnnl::convolution_forward conv_;
  dnnl::stream stream_;  // in-order; carries only the engine on the CPU
  memory weights_, bias_, scratchpad_, src_, dst_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateOneDnnConvKernel(const model::Graph& graph,
                                                                  model::OpId id, WorkSlice slice,
                                                                  const KernelLayout& layout) {
  return OneDnnConvKernel::Create(graph, id, slice, layout);
}

}  // namespace psched::executor::cpu::internal
