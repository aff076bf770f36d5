// CPU kernels backed by XNNPACK operators: conv (with cout / spatial / cin slices), fully
// connected (cout / cin slices), max / average pooling, global average pooling and
// broadcasting add / mul / sub.
#include <xnnpack.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "executor/cpu/conv_slice.h"
#include "executor/cpu/kernel_base.h"

namespace psched::executor::cpu::internal {
namespace {

struct XnnDeleter {
  void operator()(xnn_operator_t op) const { xnn_delete_operator(op); }
};
using XnnOperator = std::unique_ptr<xnn_operator, XnnDeleter>;

constexpr float kInf = std::numeric_limits<float>::infinity();

class ConvKernel final : public KernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<CpuKernel>> Create(const model::Graph& graph,
                                                           model::OpId id, WorkSlice slice,
                                                           const KernelLayout& layout,
                                                           pthreadpool_t threadpool) {
    std::unique_ptr<ConvKernel> k(new ConvKernel(graph, id, slice, layout, threadpool));
    if (auto s = k->Init(graph, id); !s.ok()) return s;
    return std::unique_ptr<CpuKernel>(std::move(k));
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (auto s = BindViews(inputs, output); !s.ok()) return s;
    const float* in = inputs_[0].pixel(g_.in_row_begin, 0) + g_.in_channel_offset;
    float* out = partial_.empty() ? SliceView().data : partial_.data();
    return XnnStatusToError(name_, "xnn_setup_convolution2d_nhwc_f32",
                            xnn_setup_convolution2d_nhwc_f32(
                                op_.get(), 1, static_cast<size_t>(g_.in_rows),
                                static_cast<size_t>(input_shapes_[0].w), in, out, threadpool_));
  }

  absl::Status Run() override {
    if (auto s =
            XnnStatusToError(name_, "xnn_run_operator", xnn_run_operator(op_.get(), threadpool_));
        !s.ok()) {
      return s;
    }
    if (!partial_.empty()) {
      AddContiguousInto(partial_.data(), SliceView());
    } else if (NeedsActivationPass(activation_)) {
      ApplyActivationInPlace(activation_, SliceView());
    }
    return absl::OkStatus();
  }

  xnn_operator_t xnnpack_operator() const override {
    return partial_.empty() && !NeedsActivationPass(activation_) ? op_.get() : nullptr;
  }

 private:
  ConvKernel(const model::Graph& graph, model::OpId id, WorkSlice slice, const KernelLayout& layout,
             pthreadpool_t threadpool)
      : KernelBase(graph, id, slice, layout), threadpool_(threadpool) {}

  TensorView SliceView() const {
    return {output_.pixel(g_.out_row_begin, 0) + g_.out_channel_offset,
            {g_.out_rows, output_shape_.w, g_.out_channels},
            output_.pixel_stride};
  }

  absl::Status Init(const model::Graph& graph, model::OpId id) {
    BuildConvSlice(graph, id, slice_, g_);
    const model::Window2d& w = g_.window;
    float out_min = FusedMin(activation_), out_max = FusedMax(activation_);
    if (slice_.axis == model::SplitAxis::kInputChannels) {
      out_min = -kInf;
      out_max = kInf;
      partial_.resize(static_cast<size_t>(output_shape_.Elements()));
    }
    // The partial sum is a contiguous scratch tensor; everything else writes the view.
    const size_t out_stride = partial_.empty() ? static_cast<size_t>(output_stride_)
                                               : static_cast<size_t>(output_shape_.c);
    xnn_operator_t op = nullptr;
    const xnn_status status = xnn_create_convolution2d_nhwc_f32(
        static_cast<uint32_t>(w.pad_top), static_cast<uint32_t>(w.pad_right),
        static_cast<uint32_t>(w.pad_bottom), static_cast<uint32_t>(w.pad_left),
        static_cast<uint32_t>(w.kernel_h), static_cast<uint32_t>(w.kernel_w),
        static_cast<uint32_t>(w.stride_h), static_cast<uint32_t>(w.stride_w),
        static_cast<uint32_t>(w.dilation_h), static_cast<uint32_t>(w.dilation_w),
        static_cast<uint32_t>(g_.groups), static_cast<size_t>(g_.group_in),
        static_cast<size_t>(g_.group_out), static_cast<size_t>(input_strides_[0]), out_stride,
        g_.filter, g_.bias, out_min, out_max, 0, &op);
    op_.reset(op);
    // XNNPACK packed the filter and bias; the graph need not outlive the kernel.
    g_.filter = g_.bias = nullptr;
    g_.filter_storage = {};
    return XnnStatusToError(name_, "xnn_create_convolution2d_nhwc_f32", status);
  }

  pthreadpool_t threadpool_;
  XnnOperator op_;
  ConvSlice g_;
  std::vector<float> partial_;  // cin slices only
};

class FullyConnectedKernel final : public KernelBase {
 public:
  static absl::StatusOr<std::unique_ptr<CpuKernel>> Create(const model::Graph& graph,
                                                           model::OpId id, WorkSlice slice,
                                                           const KernelLayout& layout,
                                                           pthreadpool_t threadpool) {
    std::unique_ptr<FullyConnectedKernel> k(
        new FullyConnectedKernel(graph, id, slice, layout, threadpool));
    if (auto s = k->Init(graph, id); !s.ok()) return s;
    return std::unique_ptr<CpuKernel>(std::move(k));
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (auto s = BindViews(inputs, output); !s.ok()) return s;
    float* out = partial_.empty() ? output_.data + out_offset_ : partial_.data();
    return XnnStatusToError(name_, "xnn_setup_fully_connected_nc_f32",
                            xnn_setup_fully_connected_nc_f32(op_.get(), static_cast<size_t>(rows_),
                                                             inputs_[0].data + in_offset_, out,
                                                             threadpool_));
  }

  absl::Status Run() override {
    if (auto s =
            XnnStatusToError(name_, "xnn_run_operator", xnn_run_operator(op_.get(), threadpool_));
        !s.ok()) {
      return s;
    }
    // Rows of the view are its pixels (a row-major [rows, K] input is rows x 1 pixels).
    const model::Shape written = slice_.axis == model::SplitAxis::kRows
                                     ? model::Shape{rows_, 1, out_channels_}
                                     : model::Shape{output_shape_.h, output_shape_.w, out_channels_};
    const TensorView slice{output_.data + out_offset_, written, output_stride_};
    if (!partial_.empty()) {
      AddContiguousInto(partial_.data(), slice);
    } else if (NeedsActivationPass(activation_)) {
      ApplyActivationInPlace(activation_, slice);
    }
    return absl::OkStatus();
  }

  xnn_operator_t xnnpack_operator() const override {
    return partial_.empty() && !NeedsActivationPass(activation_) ? op_.get() : nullptr;
  }

 private:
  FullyConnectedKernel(const model::Graph& graph, model::OpId id, WorkSlice slice,
                       const KernelLayout& layout, pthreadpool_t threadpool)
      : KernelBase(graph, id, slice, layout), threadpool_(threadpool) {}

  absl::Status Init(const model::Graph& graph, model::OpId id) {
    const auto& fc = std::get<model::FullyConnectedAttrs>(graph.op(id).attrs);
    const int64_t in_c = input_shapes_[0].c;
    const float* weight = graph.constants[static_cast<size_t>(fc.weight)].data.data();
    const float* bias = fc.bias == model::kInvalidId
                            ? nullptr
                            : graph.constants[static_cast<size_t>(fc.bias)].data.data();
    int64_t in_channels = in_c;
    out_channels_ = output_shape_.c;
    float out_min = FusedMin(activation_), out_max = FusedMax(activation_);
    std::vector<float> cin_weight;
    if (slice_.axis == model::SplitAxis::kOutputChannels) {
      out_channels_ = slice_.end - slice_.begin;
      weight += slice_.begin * in_c;
      if (bias != nullptr) bias += slice_.begin;
      out_offset_ = slice_.begin;
    } else if (slice_.axis == model::SplitAxis::kInputChannels) {
      in_channels = slice_.end - slice_.begin;
      cin_weight.resize(static_cast<size_t>(out_channels_ * in_channels));
      for (int64_t o = 0; o < out_channels_; ++o) {
        std::copy_n(weight + o * in_c + slice_.begin, in_channels,
                    cin_weight.data() + o * in_channels);
      }
      weight = cin_weight.data();
      if (slice_.begin != 0) bias = nullptr;
      out_min = -kInf;
      out_max = kInf;
      in_offset_ = slice_.begin;
      partial_.resize(static_cast<size_t>(out_channels_ * output_shape_.h * output_shape_.w));
    }
    rows_ = output_shape_.h * output_shape_.w;
    if (slice_.axis == model::SplitAxis::kRows) {
      // Token rows [begin, end) of a row-major [rows, K] input (w == 1).
      rows_ = slice_.end - slice_.begin;
      in_offset_ = slice_.begin * input_strides_[0];
      out_offset_ = slice_.begin * output_stride_;
    }
    xnn_operator_t op = nullptr;
    const xnn_status status = xnn_create_fully_connected_nc_f32(
        static_cast<size_t>(in_channels), static_cast<size_t>(out_channels_),
        static_cast<size_t>(input_strides_[0]),
        static_cast<size_t>(partial_.empty() ? output_stride_ : out_channels_), weight, bias,
        out_min, out_max, 0, &op);
    op_.reset(op);
    return XnnStatusToError(name_, "xnn_create_fully_connected_nc_f32", status);
  }

  pthreadpool_t threadpool_;
  XnnOperator op_;
  int64_t in_offset_ = 0, out_offset_ = 0, out_channels_ = 0, rows_ = 1;
  std::vector<float> partial_;  // cin slices only
};

// A whole (unsliced) op computed by one XNNPACK operator, followed by an activation pass
// when XNNPACK cannot fuse the activation. Subclasses create the operator and set it up.
class SingleXnnOpKernel : public KernelBase {
 public:
  absl::Status Run() final {
    if (auto s =
            XnnStatusToError(name_, "xnn_run_operator", xnn_run_operator(op_.get(), threadpool_));
        !s.ok()) {
      return s;
    }
    if (NeedsActivationPass(activation_)) {
      TensorView written = output_;
      if (slice_.axis == model::SplitAxis::kRows) {
        written = TensorView{output_.pixel(slice_.begin, 0),
                             {slice_.end - slice_.begin, output_shape_.w, output_shape_.c},
                             output_stride_};
      }
      ApplyActivationInPlace(activation_, written);
    }
    return absl::OkStatus();
  }

  xnn_operator_t xnnpack_operator() const final {
    return NeedsActivationPass(activation_) ? nullptr : op_.get();
  }

 protected:
  SingleXnnOpKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
                    pthreadpool_t threadpool, XnnOperator op, WorkSlice slice = WorkSlice::Whole())
      : KernelBase(graph, id, slice, layout),
        threadpool_(threadpool),
        op_(std::move(op)) {}

  pthreadpool_t threadpool_;
  XnnOperator op_;
};

// Max and average pooling, global average pooling: one XNNPACK operator over the whole op.
class PoolingKernel final : public SingleXnnOpKernel {
 public:
  enum class Kind { kMax, kAvg, kGlobalAvg };

  PoolingKernel(const model::Graph& graph, model::OpId id, const KernelLayout& layout,
                pthreadpool_t threadpool, Kind kind, XnnOperator op)
      : SingleXnnOpKernel(graph, id, layout, threadpool, std::move(op)), kind_(kind) {}

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (auto s = BindViews(inputs, output); !s.ok()) return s;
    const model::Shape& in = input_shapes_[0];
    const auto h = static_cast<size_t>(in.h), w = static_cast<size_t>(in.w);
    xnn_status status = xnn_status_success;
    switch (kind_) {
      case Kind::kMax:
        status = xnn_setup_max_pooling2d_nhwc_f32(op_.get(), 1, h, w, inputs_[0].data, output_.data,
                                                  threadpool_);
        break;
      case Kind::kAvg:
        status = xnn_setup_average_pooling2d_nhwc_f32(op_.get(), 1, h, w, inputs_[0].data,
                                                      output_.data, threadpool_);
        break;
      case Kind::kGlobalAvg:
        status = xnn_setup_global_average_pooling_nwc_f32(op_.get(), 1, h * w, inputs_[0].data,
                                                          output_.data, threadpool_);
        break;
    }
    return XnnStatusToError(name_, "xnn_setup_*_pooling", status);
  }

 private:
  Kind kind_;
};

// A row slice (row-major output) runs the same operator on its rows: operands with the
// output's rows are read from the slice's first row, broadcast ones whole.
class BinaryKernel final : public SingleXnnOpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<CpuKernel>> Create(const model::Graph& graph,
                                                           model::OpId id, WorkSlice slice,
                                                           const KernelLayout& layout,
                                                           pthreadpool_t threadpool) {
    std::unique_ptr<BinaryKernel> k(new BinaryKernel(graph, id, slice, layout, threadpool));
    if (auto s = k->Init(graph, id); !s.ok()) return s;
    return std::unique_ptr<CpuKernel>(std::move(k));
  }

  absl::Status Setup(std::span<const TensorView> inputs, const TensorView& output) override {
    if (auto s = BindViews(inputs, output); !s.ok()) return s;
    const float* operand[2];
    size_t next = 0;
    for (int i = 0; i < 2; ++i) {
      operand[i] = constant_index_ == i ? constant_.data() : inputs_[next++].data;
    }
    float* out = output_.data;
    if (slice_.axis == model::SplitAxis::kRows) {
      const int64_t offset = slice_.begin * output_shape_.c;
      out += offset;
      for (int i = 0; i < 2; ++i) {
        if (sliced_[static_cast<size_t>(i)]) operand[i] += offset;
      }
    }
    xnn_status status = xnn_status_success;
    const size_t* s0 = dims_[0].data();
    const size_t* s1 = dims_[1].data();
    const size_t r0 = dims_[0].size(), r1 = dims_[1].size();
    switch (kind_) {
      case model::OpKind::kAdd:
        status = xnn_setup_add_nd_f32(op_.get(), r0, s0, r1, s1, operand[0], operand[1], out,
                                      threadpool_);
        break;
      case model::OpKind::kMul:
        status = xnn_setup_multiply_nd_f32(op_.get(), r0, s0, r1, s1, operand[0], operand[1], out,
                                           threadpool_);
        break;
      case model::OpKind::kDiv:
        status = xnn_setup_divide_nd_f32(op_.get(), r0, s0, r1, s1, operand[0], operand[1], out,
                                         threadpool_);
        break;
      default:
        status = xnn_setup_subtract_nd_f32(op_.get(), r0, s0, r1, s1, operand[0], operand[1], out,
                                           threadpool_);
        break;
    }
    return XnnStatusToError(name_, "xnn_setup_*_nd_f32", status);
  }

 private:
  BinaryKernel(const model::Graph& graph, model::OpId id, WorkSlice slice,
               const KernelLayout& layout, pthreadpool_t threadpool)
      : SingleXnnOpKernel(graph, id, layout, threadpool, XnnOperator(), slice),
        kind_(graph.op(id).kind) {}

  absl::Status Init(const model::Graph& graph, model::OpId id) {
    const model::Op& op = graph.op(id);
    const bool sliced = slice_.axis == model::SplitAxis::kRows;
    if (sliced && output_stride_ != output_shape_.c) {
      return Error("a row slice needs a dense row-major output");
    }
    for (int i = 0; i < 2; ++i) {
      const model::TensorId input = op.inputs[static_cast<size_t>(i)];
      const model::Tensor& t = graph.tensor(input);
      if (sliced) {
        // The slice's rows of a [rows, last] operand, or the whole broadcast operand.
        switch (model::ClassifyRowOperand(graph, id, input)) {
          case model::RowOperand::kRows:
            sliced_[static_cast<size_t>(i)] = true;
            dims_[i] = {static_cast<size_t>(slice_.end - slice_.begin),
                        static_cast<size_t>(output_shape_.c)};
            break;
          case model::RowOperand::kBroadcast:
            dims_[i] = {static_cast<size_t>(model::ElementsOf(model::PhysicalDims(t)))};
            break;
          case model::RowOperand::kOther:
            return Error("operand cannot be split by rows");
        }
      } else {
        // Physical dims, numpy-broadcast by XNNPACK (right-aligned).
        for (int64_t d : model::PhysicalDims(t)) dims_[i].push_back(static_cast<size_t>(d));
      }
      if (t.constant != model::kInvalidId) {
        constant_index_ = i;
        const std::vector<float>& data = graph.constants[static_cast<size_t>(t.constant)].data;
        // XNNPACK may read XNN_EXTRA_BYTES past an input.
        constant_.assign(data.size() + XNN_EXTRA_BYTES / sizeof(float), 0.0f);
        std::copy(data.begin(), data.end(), constant_.begin());
      }
    }
    const float lo = FusedMin(activation_), hi = FusedMax(activation_);
    xnn_operator_t xop = nullptr;
    xnn_status status = xnn_status_success;
    switch (kind_) {
      case model::OpKind::kAdd:
        status = xnn_create_add_nd_f32(lo, hi, 0, &xop);
        break;
      case model::OpKind::kMul:
        status = xnn_create_multiply_nd_f32(lo, hi, 0, &xop);
        break;
      case model::OpKind::kDiv:
        status = xnn_create_divide_nd_f32(lo, hi, 0, &xop);
        break;
      default:
        status = xnn_create_subtract_nd_f32(lo, hi, 0, &xop);
        break;
    }
    op_.reset(xop);
    return XnnStatusToError(name_, "xnn_create_*_nd_f32", status);
  }

  model::OpKind kind_;
  std::array<std::vector<size_t>, 2> dims_{};
  std::array<bool, 2> sliced_{};  // row slice: the operand is read from the slice's first row
  int constant_index_ = -1;
  std::vector<float> constant_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateConvKernel(const model::Graph& graph,
                                                            model::OpId id, WorkSlice slice,
                                                            const KernelLayout& layout,
                                                            pthreadpool_t threadpool) {
  return ConvKernel::Create(graph, id, slice, layout, threadpool);
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateFullyConnectedKernel(const model::Graph& graph,
                                                                      model::OpId id,
                                                                      WorkSlice slice,
                                                                      const KernelLayout& layout,
                                                                      pthreadpool_t threadpool) {
  return FullyConnectedKernel::Create(graph, id, slice, layout, threadpool);
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreatePoolKernel(const model::Graph& graph,
                                                            model::OpId id,
                                                            const KernelLayout& layout,
                                                            pthreadpool_t threadpool) {
  const model::Op& op = graph.op(id);
  const auto& pool = std::get<model::PoolAttrs>(op.attrs);
  const model::Window2d& w = pool.window;
  const model::Shape& in = graph.tensor(graph.ActivationInputs(id)[0]).shape;
  const size_t in_stride = layout.input_pixel_strides.empty()
                               ? static_cast<size_t>(in.c)
                               : static_cast<size_t>(layout.input_pixel_strides[0]);
  const size_t out_stride = layout.output_pixel_stride == 0
                                ? static_cast<size_t>(in.c)
                                : static_cast<size_t>(layout.output_pixel_stride);
  const bool padded = w.pad_top || w.pad_left || w.pad_bottom || w.pad_right;
  const bool dilated = w.dilation_h > 1 || w.dilation_w > 1;
  const float lo = FusedMin(op.activation), hi = FusedMax(op.activation);
  xnn_operator_t xop = nullptr;
  xnn_status status = xnn_status_unsupported_parameter;
  // XNNPACK clamps padded taps onto the edge pixel (right for max pooling only while every
  // tap is a real window tap, so not with dilation) and averages over real pixels only
  // (count_include_pad == false). Everything else goes to the hand-written pooling kernel.
  if (op.kind == model::OpKind::kMaxPool && !(dilated && padded)) {
    status = xnn_create_max_pooling2d_nhwc_f32(
        static_cast<uint32_t>(w.pad_top), static_cast<uint32_t>(w.pad_right),
        static_cast<uint32_t>(w.pad_bottom), static_cast<uint32_t>(w.pad_left),
        static_cast<uint32_t>(w.kernel_h), static_cast<uint32_t>(w.kernel_w),
        static_cast<uint32_t>(w.stride_h), static_cast<uint32_t>(w.stride_w),
        static_cast<uint32_t>(w.dilation_h), static_cast<uint32_t>(w.dilation_w),
        static_cast<size_t>(in.c), in_stride, out_stride, lo, hi, 0, &xop);
  } else if (op.kind == model::OpKind::kAvgPool && !dilated &&
             (!padded || !pool.count_include_pad)) {
    status = xnn_create_average_pooling2d_nhwc_f32(
        static_cast<uint32_t>(w.pad_top), static_cast<uint32_t>(w.pad_right),
        static_cast<uint32_t>(w.pad_bottom), static_cast<uint32_t>(w.pad_left),
        static_cast<uint32_t>(w.kernel_h), static_cast<uint32_t>(w.kernel_w),
        static_cast<uint32_t>(w.stride_h), static_cast<uint32_t>(w.stride_w),
        static_cast<size_t>(in.c), in_stride, out_stride, lo, hi, 0, &xop);
  }
  if (status != xnn_status_success) return CreateHandKernel(graph, id, layout, threadpool);
  return std::unique_ptr<CpuKernel>(std::make_unique<PoolingKernel>(
      graph, id, layout, threadpool,
      op.kind == model::OpKind::kMaxPool ? PoolingKernel::Kind::kMax : PoolingKernel::Kind::kAvg,
      XnnOperator(xop)));
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateGlobalAvgPoolKernel(const model::Graph& graph,
                                                                     model::OpId id,
                                                                     const KernelLayout& layout,
                                                                     pthreadpool_t threadpool) {
  const model::Op& op = graph.op(id);
  const int64_t c = graph.output_shape(id).c;
  const size_t in_stride = layout.input_pixel_strides.empty()
                               ? static_cast<size_t>(c)
                               : static_cast<size_t>(layout.input_pixel_strides[0]);
  const size_t out_stride = layout.output_pixel_stride == 0
                                ? static_cast<size_t>(c)
                                : static_cast<size_t>(layout.output_pixel_stride);
  xnn_operator_t xop = nullptr;
  const xnn_status status = xnn_create_global_average_pooling_nwc_f32(
      static_cast<size_t>(c), in_stride, out_stride, FusedMin(op.activation),
      FusedMax(op.activation), 0, &xop);
  XnnOperator owned(xop);
  if (auto s = XnnStatusToError(absl::StrCat("op ", id, " '", op.name, "'"),
                                "xnn_create_global_average_pooling_nwc_f32", status);
      !s.ok()) {
    return s;
  }
  return std::unique_ptr<CpuKernel>(std::make_unique<PoolingKernel>(
      graph, id, layout, threadpool, PoolingKernel::Kind::kGlobalAvg, std::move(owned)));
}

absl::StatusOr<std::unique_ptr<CpuKernel>> CreateBinaryKernel(const model::Graph& graph,
                                                              model::OpId id, WorkSlice slice,
                                                              const KernelLayout& layout,
                                                              pthreadpool_t threadpool) {
  return BinaryKernel::Create(graph, id, slice, layout, threadpool);
}

}  // namespace psched::executor::cpu::internal
