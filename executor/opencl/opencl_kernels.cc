#include "executor/opencl/opencl_kernels.h"

#include <algorithm>
#include <limits>
#include <string>
#include <variant>

#include "absl/strings/str_cat.h"
#include "executor/common/nd_index.h"
#include "executor/opencl/embedded_kernels.h"
#include "executor/opencl/launch_geometry.h"
#include "model/op_validation.h"

namespace psched::executor::opencl {
namespace {

using model::ActivationKind;
using model::Graph;
using model::OpId;
using model::OpKind;
using model::SplitAxis;

// Output modes, as PSCHED_STORE / PSCHED_ADD / PSCHED_ATOMIC_ADD in kernels/common.cl.
constexpr int32_t kStore = 0;
constexpr int32_t kAdd = 1;
constexpr int32_t kAtomicAdd = 2;
// PSCHED_ROW_WG in kernels/tensor.cl: the work-group of the per-row kernels.
constexpr size_t kRowGroup = 64;

std::string ComputeProgramSource() {
  using namespace embedded;  // NOLINT(build/namespaces): the generated constants
  return absl::StrCat(kCommonClSource, kConv2dClSource, kFullyConnectedClSource, kPoolClSource,
                      kElementwiseClSource, kLayoutClSource, kTensorClSource, kStridedCopyClSource,
                      kReduceClSource, kConvTranspose2dClSource);
}

void SetGlobal(OpKernel::Launch& launch, const NdRange& range) {
  launch.dims = range.dims;
  for (size_t i = 0; i < 3; ++i) launch.global[i] = range.global[i];
}

// Sets kernel arguments in declaration order; the first failure sticks.
class ArgBinder {
 public:
  explicit ArgBinder(cl_kernel kernel) : kernel_(kernel) {}
  ArgBinder& Memory(const SvmArena& memory) {
    if (status_.ok()) status_ = memory.BindAsKernelArg(kernel_, index_);
    ++index_;
    return *this;
  }
  // An activation tensor: base, offset, pixel stride.
  ArgBinder& Tensor(const SvmArena& memory, int32_t offset, int32_t stride) {
    return Memory(memory).Int(offset).Int(stride);
  }
  ArgBinder& Int(int64_t value) {
    const cl_int v = static_cast<cl_int>(value);
    return Raw(&v, sizeof(v));
  }
  ArgBinder& Float(float value) { return Raw(&value, sizeof(value)); }
  // Up to four ints as an OpenCL int4; missing trailing lanes are `fill`.
  ArgBinder& Int4(const std::vector<int64_t>& values, int32_t fill) {
    cl_int4 v;
    for (size_t i = 0; i < 4; ++i) {
      v.s[i] = i < values.size() ? static_cast<cl_int>(values[i]) : fill;
    }
    return Raw(&v, sizeof(v));
  }
  // kMaxRank ints as an OpenCL int8 (lanes s0-s5; s6, s7 unused).
  ArgBinder& Int8(const std::vector<int64_t>& values) {
    cl_int8 v;
    for (size_t i = 0; i < 8; ++i) v.s[i] = i < values.size() ? static_cast<cl_int>(values[i]) : 0;
    return Raw(&v, sizeof(v));
  }
  ArgBinder& Activation(const model::Activation& act) {
    Int(static_cast<int32_t>(act.kind));
    cl_float4 params;
    params.s[0] = act.min;
    params.s[1] = act.max;
    params.s[2] = act.alpha;
    params.s[3] = act.beta;
    return Raw(&params, sizeof(params));
  }
  absl::Status status() const { return status_; }

 private:
  ArgBinder& Raw(const void* value, size_t size) {
    if (status_.ok()) {
      status_ = ClStatus(clSetKernelArg(kernel_, index_, size, value),
                         absl::StrCat("clSetKernelArg #", index_));
    }
    ++index_;
    return *this;
  }
  cl_kernel kernel_;
  cl_uint index_ = 0;
  absl::Status status_;
};

absl::Status OpError(const Graph& graph, OpId id, const std::string& problem) {
  const model::Op& op = graph.op(id);
  return absl::InvalidArgumentError(absl::StrCat("opencl: op #", id, " '", op.name, "' (",
                                                 std::string(model::OpKindName(op.kind)), "): ", problem));
}

bool FitsInt32(int64_t v) { return v >= 0 && v <= std::numeric_limits<int32_t>::max(); }

// The general tensor kernels index up to six axes (int8 arguments, lanes s0-s5).
constexpr size_t kMaxRank = 6;

// Element strides in the arena of a tensor of physical `dims` whose last-axis rows lie
// `row_stride` floats apart (the pixel stride).
std::vector<int64_t> ArenaStrides(const std::vector<int64_t>& dims, int64_t row_stride) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) {
    strides[i - 1] = i == dims.size() - 1 ? row_stride : strides[i] * dims[i];
  }
  return strides;
}

// `values` right-aligned in kMaxRank lanes, leading lanes `fill`.
std::vector<int64_t> PadLeading(const std::vector<int64_t>& values, int64_t fill) {
  std::vector<int64_t> padded(kMaxRank - std::min(values.size(), kMaxRank), fill);
  padded.insert(padded.end(), values.end() - static_cast<std::ptrdiff_t>(
                                                 std::min(values.size(), kMaxRank)),
                values.end());
  return padded;
}

// Extent of axis `from_end` counted from the end (1: the last), 1 when the rank is lower.
int64_t AxisOrOne(const std::vector<int64_t>& dims, size_t from_end) {
  return dims.size() >= from_end ? dims[dims.size() - from_end] : 1;
}

// PSCHED_RUN in kernels/elementwise.cl: consecutive last-axis elements per work-item of
// psched_binary, psched_strided_copy and psched_activation.
constexpr int64_t kRun = 16;
int64_t Runs(int64_t n) { return (n + kRun - 1) / kRun; }

// Product of all but the last two axes: NDRange dimension 2 of the general tensor kernels.
int64_t LeadingElements(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (size_t i = 0; i + 2 < dims.size(); ++i) n *= dims[i];
  return n;
}

}  // namespace

OpKernel::~OpKernel() {
  for (Launch& launch : launches_) clReleaseKernel(launch.kernel);
}

absl::Status OpKernel::Enqueue(cl_event* event, cl_event* first) const {
  for (size_t i = 0; i < launches_.size(); ++i) {
    const Launch& launch = launches_[i];
    const bool last = i + 1 == launches_.size();
    cl_event* out = last ? event : (i == 0 ? first : nullptr);
    cl_int err = clEnqueueNDRangeKernel(device_->queue(), launch.kernel,
                                        static_cast<cl_uint>(launch.dims), nullptr, launch.global,
                                        launch.local[0] == 0 ? nullptr : launch.local, 0, nullptr,
                                        out);
    if (err != CL_SUCCESS) return ClStatus(err, absl::StrCat("enqueueing ", name_));
  }
  if (launches_.empty() && event != nullptr) {
    if (cl_int err = clEnqueueMarkerWithWaitList(device_->queue(), 0, nullptr, event);
        err != CL_SUCCESS) {
      return ClStatus(err, absl::StrCat("enqueueing marker for ", name_));
    }
  }
  // One launch (or none): the first event is the last one.
  if (first != nullptr && launches_.size() <= 1) {
    *first = event != nullptr ? *event : nullptr;
    if (*first != nullptr) clRetainEvent(*first);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<KernelFactory>> KernelFactory::Create(
    OpenClDevice* device, const Graph* graph, SvmArena* arena,
    const std::vector<int64_t>& tensor_offsets) {
  std::vector<TensorPlacement> placements;
  placements.reserve(tensor_offsets.size());
  for (int64_t offset : tensor_offsets) placements.push_back({offset, 0});
  return Create(device, graph, arena, std::move(placements));
}

absl::StatusOr<std::unique_ptr<KernelFactory>> KernelFactory::Create(
    OpenClDevice* device, const Graph* graph, SvmArena* arena,
    std::vector<TensorPlacement> placements) {
  if (!FitsInt32(static_cast<int64_t>(arena->size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "opencl: arena of ", arena->size(), " floats exceeds the 2^31 elements kernels index"));
  }
  if (placements.size() != graph->tensors.size()) {
    return absl::InvalidArgumentError(absl::StrCat("opencl: ", placements.size(),
                                                   " tensor placements for a graph with ",
                                                   graph->tensors.size(), " tensors"));
  }
  absl::StatusOr<cl_program> program =
      device->BuildProgram("psched_compute", ComputeProgramSource(), "-cl-mad-enable");
  if (!program.ok()) return program.status();
  return std::unique_ptr<KernelFactory>(
      new KernelFactory(device, graph, arena, std::move(placements), *program));
}

absl::StatusOr<KernelFactory::Bound> KernelFactory::Place(OpId id,
                                                          model::TensorId tensor) const {
  if (tensor < 0 || static_cast<size_t>(tensor) >= graph_->tensors.size()) {
    return OpError(*graph_, id, absl::StrCat("refers to tensor #", tensor, " which does not exist"));
  }
  return Place(id, tensor, placements_[static_cast<size_t>(tensor)]);
}

absl::StatusOr<KernelFactory::Bound> KernelFactory::PlaceOutput(
    OpId id, const WorkSlice& slice, const KernelOptions& options) const {
  const model::TensorId output = graph_->op(id).output;
  if (!options.partial_output.has_value()) return Place(id, output);
  if (slice.axis != model::SplitAxis::kInputChannels) {
    return OpError(*graph_, id, "a partial output is only for input-channel slices");
  }
  if (output < 0 || static_cast<size_t>(output) >= graph_->tensors.size()) {
    return OpError(*graph_, id, absl::StrCat("refers to tensor #", output, " which does not exist"));
  }
  return Place(id, output, *options.partial_output);
}

absl::StatusOr<KernelFactory::Source> KernelFactory::InputSource(
    OpId id, model::TensorId t, const SvmArena* weights, int64_t packed_stride,
    int64_t* constant_offset) const {
  const model::Tensor& tensor = graph_->tensor(t);
  if (tensor.constant != model::kInvalidId) {
    Source source{weights, *constant_offset, packed_stride};
    *constant_offset += tensor.shape.Elements();
    return source;
  }
  absl::StatusOr<Bound> bound = Place(id, t);
  if (!bound.ok()) return bound.status();
  return Source{arena_, bound->offset, bound->stride};
}

absl::StatusOr<KernelFactory::Bound> KernelFactory::Place(OpId id, model::TensorId tensor,
                                                          const TensorPlacement& p) const {
  const model::Tensor& t = graph_->tensor(tensor);
  if (p.offset < 0) {
    return OpError(*graph_, id, absl::StrCat("tensor '", t.name, "' has no arena offset"));
  }
  const int64_t stride = p.pixel_stride == 0 ? t.shape.c : p.pixel_stride;
  if (stride < t.shape.c) {
    return OpError(*graph_, id, absl::StrCat("tensor '", t.name, "' has pixel stride ", stride,
                                             " < its ", t.shape.c, " channels"));
  }
  const int64_t pixels = t.shape.h * t.shape.w;
  const int64_t end = pixels <= 0 ? p.offset : p.offset + (pixels - 1) * stride + t.shape.c;
  if (t.shape.c <= 0 || pixels <= 0 || end > static_cast<int64_t>(arena_->size())) {
    return OpError(*graph_, id,
                   absl::StrCat("tensor '", t.name, "' (", t.shape.h, "x", t.shape.w, "x",
                                t.shape.c, ", pixel stride ", stride, ") at offset ", p.offset,
                                " does not fit in the arena (", arena_->size(), " floats)"));
  }
  return Bound{static_cast<int32_t>(p.offset), static_cast<int32_t>(stride)};
}

absl::StatusOr<cl_kernel> KernelFactory::NewKernel(const char* name) const {
  cl_int err = CL_SUCCESS;
  cl_kernel kernel = clCreateKernel(program_, name, &err);
  if (err != CL_SUCCESS) return ClStatus(err, absl::StrCat("clCreateKernel(", name, ")"));
  return kernel;
}

absl::StatusOr<std::shared_ptr<SvmArena>> KernelFactory::Weights(OpId id) {
  if (auto it = weights_.find(id); it != weights_.end()) return it->second;
  const model::Op& op = graph_->op(id);
  auto constant = [&](model::ConstantId c, int64_t expected,
                      const std::string& what) -> absl::StatusOr<const std::vector<float>*> {
    if (c < 0 || static_cast<size_t>(c) >= graph_->constants.size()) {
      return OpError(*graph_, id, absl::StrCat(what, " constant #", c, " does not exist"));
    }
    const std::vector<float>& data = graph_->constants[static_cast<size_t>(c)].data;
    if (static_cast<int64_t>(data.size()) != expected) {
      return OpError(*graph_, id,
                     absl::StrCat(what, " has ", data.size(), " floats, expected ", expected,
                                  data.empty() ? " (the graph has no weights)" : ""));
    }
    return &data;
  };
  std::vector<float> packed;
  if (op.kind == OpKind::kConv2d) {
    const auto& conv = std::get<model::ConvAttrs>(op.attrs);
    const model::Window2d& w = conv.window;
    const model::Shape& in = graph_->tensor(op.inputs[0]).shape;
    const model::Shape& out = graph_->output_shape(id);
    const int64_t cig = in.c / conv.groups;
    const int64_t cog = out.c / conv.groups;
    const int64_t taps = static_cast<int64_t>(w.kernel_h) * w.kernel_w;
    auto filter = constant(conv.filter, out.c * taps * cig, "filter");
    if (!filter.ok()) return filter.status();
    const std::vector<float>& f = **filter;
    if (conv.groups > 1 && cig == 1) {
      // Depthwise: [kh][kw][out_c + 3].
      const int64_t stride = out.c + 3;
      packed.assign(static_cast<size_t>(taps * stride), 0.0f);
      for (int64_t co = 0; co < out.c; ++co) {
        for (int64_t t = 0; t < taps; ++t) packed[t * stride + co] = f[co * taps + t];
      }
    } else {
      // [g][kh][kw][cig][cog + 7] from OHWI [g * cog + j][kh][kw][cig].
      const int64_t stride = cog + kConvTileC - 1;
      packed.assign(static_cast<size_t>(conv.groups * taps * cig * stride), 0.0f);
      for (int64_t g = 0; g < conv.groups; ++g) {
        for (int64_t j = 0; j < cog; ++j) {
          const float* src = &f[static_cast<size_t>(((g * cog + j) * taps) * cig)];
          for (int64_t t = 0; t < taps; ++t) {
            for (int64_t ci = 0; ci < cig; ++ci) {
              packed[static_cast<size_t>(((g * taps + t) * cig + ci) * stride + j)] =
                  src[t * cig + ci];
            }
          }
        }
      }
    }
    if (conv.bias != model::kInvalidId) {
      auto bias = constant(conv.bias, out.c, "bias");
      if (!bias.ok()) return bias.status();
      packed.insert(packed.end(), (*bias)->begin(), (*bias)->end());
    }
  } else if (op.kind == OpKind::kConvTranspose2d) {
    // The OHWI filter as the model holds it, then the bias (kernels/conv_transpose2d.cl).
    const auto& conv = std::get<model::ConvAttrs>(op.attrs);
    const model::Shape& in = graph_->tensor(op.inputs[0]).shape;
    const int64_t cout = graph_->output_shape(id).c;
    auto filter = constant(conv.filter,
                           cout * conv.window.kernel_h * conv.window.kernel_w * (in.c / conv.groups),
                           "filter");
    if (!filter.ok()) return filter.status();
    packed = **filter;
    if (conv.bias != model::kInvalidId) {
      auto bias = constant(conv.bias, cout, "bias");
      if (!bias.ok()) return bias.status();
      packed.insert(packed.end(), (*bias)->begin(), (*bias)->end());
    }
  } else if (op.kind == OpKind::kFullyConnected) {
    const auto& fc = std::get<model::FullyConnectedAttrs>(op.attrs);
    const int64_t in_features = graph_->tensor(op.inputs[0]).shape.Elements();
    const int64_t out_features = graph_->output_shape(id).Elements();
    auto weight = constant(fc.weight, in_features * out_features, "weight");
    if (!weight.ok()) return weight.status();
    packed = **weight;
    if (fc.bias != model::kInvalidId) {
      auto bias = constant(fc.bias, out_features, "bias");
      if (!bias.ok()) return bias.status();
      packed.insert(packed.end(), (*bias)->begin(), (*bias)->end());
    }
  } else if (op.kind == OpKind::kLayerNorm) {
    const auto& ln = std::get<model::LayerNormAttrs>(op.attrs);
    const int64_t n = graph_->output_shape(id).c;
    auto scale = constant(ln.scale, n, "scale");
    if (!scale.ok()) return scale.status();
    packed = **scale;
    if (ln.bias != model::kInvalidId) {
      auto bias = constant(ln.bias, n, "bias");
      if (!bias.ok()) return bias.status();
      packed.insert(packed.end(), (*bias)->begin(), (*bias)->end());
    } else {
      packed.resize(static_cast<size_t>(2 * n), 0.0f);
    }
  } else {
    // Binary ops and matmul: constant operands, concatenated in input order.
    for (model::TensorId t : op.inputs) {
      const model::Tensor& tensor = graph_->tensor(t);
      if (tensor.constant == model::kInvalidId) continue;
      auto data = constant(tensor.constant, tensor.shape.Elements(),
                           absl::StrCat("operand '", tensor.name, "'"));
      if (!data.ok()) return data.status();
      packed.insert(packed.end(), (*data)->begin(), (*data)->end());
    }
  }
  // Weights are read-only for kernels; they follow the arena's memory mode so one kernel
  // binary binds both the same way.
  absl::StatusOr<std::unique_ptr<SvmArena>> store =
      SvmArena::Create(device_, packed.size(), arena_->mode());
  if (!store.ok()) return store.status();
  if (absl::Status s = (*store)->Write(0, packed); !s.ok()) return s;
  std::shared_ptr<SvmArena> shared = std::move(*store);
  weights_.emplace(id, shared);
  return shared;
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelFactory::Create(OpId id, WorkSlice slice,
                                                                KernelOptions options) {
  if (id < 0 || static_cast<size_t>(id) >= graph_->ops.size()) {
    return absl::InvalidArgumentError(absl::StrCat("opencl: op #", id, " does not exist (graph '",
                                                   graph_->name, "' has ", graph_->ops.size(),
                                                   " ops)"));
  }
  // model::ValidateOp is the one definition of a well-formed op (attrs, shapes, weights);
  // the checks below only cover what is specific to OpenCL (slices, arena).
  if (absl::Status valid = model::ValidateOp(*graph_, id); !valid.ok()) return valid;
  const model::Op& op = graph_->op(id);
  if (slice.axis != SplitAxis::kNone) {
    const int64_t work = model::WorkSize(*graph_, id, slice.axis);
    if (work == 0) {
      return OpError(*graph_, id, absl::StrCat("cannot be split along '",
                                               std::string(model::SplitAxisName(slice.axis)), "'"));
    }
    if (slice.begin < 0 || slice.begin >= slice.end || slice.end > work) {
      return OpError(*graph_, id,
                     absl::StrCat("slice [", slice.begin, ", ", slice.end, ") of '",
                                  std::string(model::SplitAxisName(slice.axis)),
                                  "' is empty or outside [0, ", work, ")"));
    }
    // The row and MatMul splits are CPU-only (scheduler/device_capability.h).
    const bool sliced_here =
        op.kind == OpKind::kConv2d ||
        (op.kind == OpKind::kFullyConnected && slice.axis != SplitAxis::kRows);
    if (!sliced_here) {
      return absl::UnimplementedError(absl::StrCat(
          "opencl: op #", id, " '", op.name, "': no kernel for a '",
          std::string(model::SplitAxisName(slice.axis)), "' slice of ",
          std::string(model::OpKindName(op.kind)), " (CPU-only split)"));
    }
  }
  auto kernel = std::unique_ptr<OpKernel>(new OpKernel(
      device_, absl::StrCat(op.name, slice.axis == SplitAxis::kNone
                                         ? std::string()
                                         : absl::StrCat("[", std::string(model::SplitAxisName(slice.axis)),
                                                        " ", slice.begin, ":", slice.end, ")"))));
  absl::Status status;
  switch (op.kind) {
    case OpKind::kConv2d: status = BuildConv(id, slice, options, *kernel); break;
    case OpKind::kFullyConnected:
      status = BuildFullyConnected(id, slice, options, *kernel);
      break;
    case OpKind::kMatMul: status = BuildMatMul(id, *kernel); break;
    default: status = BuildUnsliced(id, *kernel); break;
  }
  if (!status.ok()) return status;
  return kernel;
}

absl::Status KernelFactory::BuildConv(OpId id, const WorkSlice& slice, const KernelOptions& options,
                                      OpKernel& kernel) {
  const model::Op& op = graph_->op(id);
  const auto* conv = std::get_if<model::ConvAttrs>(&op.attrs);
  if (conv == nullptr || op.inputs.size() != 1) {
    return OpError(*graph_, id, "expects ConvAttrs and exactly one activation input");
  }
  const model::Window2d& w = conv->window;
  const model::Shape& in = graph_->tensor(op.inputs[0]).shape;
  const model::Shape& out = graph_->output_shape(id);
  if (conv->groups < 1 || in.c % conv->groups != 0 || out.c % conv->groups != 0) {
    return OpError(*graph_, id, absl::StrCat("groups ", conv->groups, " does not divide cin ",
                                             in.c, " and cout ", out.c));
  }
  if (w.kernel_h < 1 || w.kernel_w < 1 || w.stride_h < 1 || w.stride_w < 1 ||
      w.dilation_h < 1 || w.dilation_w < 1) {
    return OpError(*graph_, id, "kernel, stride and dilation must all be >= 1");
  }
  absl::StatusOr<Bound> in_off = Place(id, op.inputs[0]);
  if (!in_off.ok()) return in_off.status();
  absl::StatusOr<Bound> out_off = PlaceOutput(id, slice, options);
  if (!out_off.ok()) return out_off.status();
  absl::StatusOr<std::shared_ptr<SvmArena>> weights = Weights(id);
  if (!weights.ok()) return weights.status();
  kernel.weights_ = *weights;

  const int64_t cig = in.c / conv->groups;
  const int64_t cog = out.c / conv->groups;
  const int64_t taps = static_cast<int64_t>(w.kernel_h) * w.kernel_w;
  const bool depthwise = conv->groups > 1 && cig == 1;
  const int64_t filter_floats = depthwise ? taps * (out.c + 3)
                                          : conv->groups * taps * cig * (cog + kConvTileC - 1);
  const int64_t b_off = conv->bias == model::kInvalidId ? -1 : filter_floats;

  int64_t g_begin = 0, g_count = conv->groups;
  int64_t co_lo = 0, co_hi = cog;
  int64_t oh_begin = 0, rows = out.h;
  int64_t ci_begin = 0, ci_end = cig;
  int32_t mode = kStore;
  bool with_bias = b_off >= 0;
  model::Activation act = op.activation;
  switch (slice.axis) {
    case SplitAxis::kOutputChannels:
      if (conv->groups == 1) {
        co_lo = slice.begin;
        co_hi = slice.end;
      } else {
        g_begin = slice.begin;
        g_count = slice.end - slice.begin;
      }
      break;
    case SplitAxis::kRows:
      oh_begin = slice.begin;
      rows = slice.end - slice.begin;
      break;
    case SplitAxis::kInputChannels:
      ci_begin = slice.begin;
      ci_end = slice.end;
      mode = options.atomic_partial_sums ? kAtomicAdd : kAdd;
      with_bias = with_bias && slice.begin == 0;
      act = model::Activation{};
      break;
    case SplitAxis::kNone: break;
  }

  OpKernel::Launch launch;
  launch.dims = 3;
  absl::StatusOr<cl_kernel> k = NewKernel(depthwise ? "psched_depthwise_conv2d" : "psched_conv2d");
  if (!k.ok()) return k.status();
  launch.kernel = *k;
  kernel.launches_.push_back(launch);
  ArgBinder args(*k);
  args.Tensor(*arena_, in_off->offset, in_off->stride).Int(in.h).Int(in.w);
  args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.h).Int(out.w);
  if (depthwise) args.Int(out.c);
  args.Memory(**weights).Int(0).Int(with_bias ? b_off : -1);
  args.Int(w.kernel_h).Int(w.kernel_w).Int(w.stride_h).Int(w.stride_w);
  args.Int(w.dilation_h).Int(w.dilation_w).Int(w.pad_top).Int(w.pad_left);
  if (depthwise) {
    const int64_t c_lo = g_begin * cog;
    const int64_t c_hi = (g_begin + g_count) * cog;
    SetGlobal(kernel.launches_.back(), DepthwiseConvNdRange(out.w, rows, c_hi - c_lo));
    args.Int(cog).Int(c_lo).Int(c_hi).Int(oh_begin);
  } else {
    SetGlobal(kernel.launches_.back(), ConvNdRange(out.w, rows, g_count, co_hi - co_lo));
    args.Int(cig).Int(cog).Int(cog + kConvTileC - 1).Int(g_begin).Int(co_lo).Int(co_hi).Int(oh_begin);
    args.Int(ci_begin).Int(ci_end).Int(mode);
  }
  args.Activation(act);
  return args.status();
}

absl::Status KernelFactory::BuildFullyConnected(OpId id, const WorkSlice& slice,
                                                const KernelOptions& options, OpKernel& kernel) {
  const model::Op& op = graph_->op(id);
  const auto* fc = std::get_if<model::FullyConnectedAttrs>(&op.attrs);
  if (fc == nullptr || op.inputs.size() != 1) {
    return OpError(*graph_, id, "expects FullyConnectedAttrs and exactly one activation input");
  }
  const int64_t in_features = graph_->tensor(op.inputs[0]).shape.Elements();
  const int64_t out_features = graph_->output_shape(id).Elements();
  absl::StatusOr<Bound> in_off = Place(id, op.inputs[0]);
  if (!in_off.ok()) return in_off.status();
  absl::StatusOr<Bound> out_off = PlaceOutput(id, slice, options);
  if (!out_off.ok()) return out_off.status();
  absl::StatusOr<std::shared_ptr<SvmArena>> weights = Weights(id);
  if (!weights.ok()) return weights.status();
  kernel.weights_ = *weights;
  const int64_t b_off = fc->bias == model::kInvalidId ? -1 : in_features * out_features;

  int64_t o_begin = 0, o_end = out_features, i_begin = 0, i_end = in_features;
  int32_t mode = kStore;
  bool with_bias = b_off >= 0;
  model::Activation act = op.activation;
  if (slice.axis == SplitAxis::kOutputChannels) {
    o_begin = slice.begin;
    o_end = slice.end;
  } else if (slice.axis == SplitAxis::kInputChannels) {
    i_begin = slice.begin;
    i_end = slice.end;
    mode = options.atomic_partial_sums ? kAtomicAdd : kAdd;
    with_bias = with_bias && slice.begin == 0;
    act = model::Activation{};
  }
  absl::StatusOr<cl_kernel> k = NewKernel("psched_fully_connected");
  if (!k.ok()) return k.status();
  OpKernel::Launch launch;
  launch.kernel = *k;
  SetGlobal(launch, FullyConnectedNdRange(o_end - o_begin));
  kernel.launches_.push_back(launch);
  ArgBinder args(*k);
  args.Memory(*arena_).Int(in_off->offset).Memory(*arena_).Int(out_off->offset);
  args.Memory(**weights).Int(0).Int(with_bias ? b_off : -1).Int(in_features);
  args.Int(o_begin).Int(i_begin).Int(i_end).Int(mode).Activation(act);
  return args.status();
}

absl::Status KernelFactory::BuildUnsliced(OpId id, OpKernel& kernel) {
  const model::Op& op = graph_->op(id);
  const model::Shape& out = graph_->output_shape(id);
  absl::StatusOr<Bound> out_off = Place(id, op.output);
  if (!out_off.ok()) return out_off.status();
  auto add_launch = [&](const char* name, size_t dims, size_t g0, size_t g1,
                        size_t g2) -> absl::StatusOr<cl_kernel> {
    absl::StatusOr<cl_kernel> k = NewKernel(name);
    if (!k.ok()) return k.status();
    OpKernel::Launch launch;
    launch.kernel = *k;
    launch.dims = dims;
    launch.global[0] = std::max<size_t>(g0, 1);
    launch.global[1] = std::max<size_t>(g1, 1);
    launch.global[2] = std::max<size_t>(g2, 1);
    kernel.launches_.push_back(launch);
    return *k;
  };
  const size_t oc = static_cast<size_t>(out.c), ow = static_cast<size_t>(out.w),
               oh = static_cast<size_t>(out.h);

  const auto* concat = std::get_if<model::ConcatAttrs>(&op.attrs);
  bool constant_input = false;
  for (model::TensorId t : op.inputs) {
    constant_input = constant_input || graph_->tensor(t).constant != model::kInvalidId;
  }
  if (op.kind == OpKind::kConcat && ((concat != nullptr && concat->axis >= 0) || constant_input)) {
    // Along any axis, or with constant inputs (never in place): each input's [outer][part]
    // rows copied into the output's [outer][whole] rows (kernels/strided_copy.cl).
    absl::StatusOr<std::shared_ptr<SvmArena>> weights = Weights(id);
    if (!weights.ok()) return weights.status();
    kernel.weights_ = *weights;
    const std::vector<int64_t> out_dims = model::PhysicalDims(graph_->tensor(op.output));
    const size_t axis = concat == nullptr || concat->axis < 0 ? out_dims.size() - 1
                                                              : static_cast<size_t>(concat->axis);
    int64_t outer = 1, inner = 1;
    for (size_t i = 0; i < axis; ++i) outer *= out_dims[i];
    for (size_t i = axis + 1; i < out_dims.size(); ++i) inner *= out_dims[i];
    const int64_t whole = out_dims[axis] * inner;
    int64_t offset = 0, constant_offset = 0;
    for (model::TensorId t : op.inputs) {
      const model::Tensor& tensor = graph_->tensor(t);
      const std::vector<int64_t> in_dims = model::PhysicalDims(tensor);
      if (in_dims.size() != out_dims.size()) {
        return OpError(*graph_, id, absl::StrCat("input '", tensor.name, "' has rank ",
                                                 in_dims.size(), ", output ", out_dims.size()));
      }
      const int64_t part = in_dims[axis] * inner;
      absl::StatusOr<Source> source =
          InputSource(id, t, kernel.weights_.get(), tensor.shape.c, &constant_offset);
      if (!source.ok()) return source.status();
      auto k = add_launch("psched_strided_copy", 3, static_cast<size_t>(Runs(part)),
                          static_cast<size_t>(outer), 1);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Memory(*source->memory).Int(source->offset).Int(tensor.shape.c).Int(source->stride);
      args.Memory(*arena_).Int(out_off->offset).Int(out.c).Int(out_off->stride);
      args.Int(0).Int8(PadLeading({part, 1}, 0)).Int8(PadLeading({outer, part}, 1));
      args.Int(offset).Int(whole).Activation(op.activation);
      if (!args.status().ok()) return args.status();
      offset += part;
    }
    if (offset != whole) {
      return OpError(*graph_, id, absl::StrCat("inputs hold ", offset, " elements per outer index, "
                                               "output ", whole));
    }
    return absl::OkStatus();
  }

  if (op.kind == OpKind::kConcat) {
    if (op.inputs.empty()) return OpError(*graph_, id, "concat has no inputs");
    int64_t channel = 0;
    for (model::TensorId t : op.inputs) {
      const model::Shape& in = graph_->tensor(t).shape;
      if (in.h != out.h || in.w != out.w) {
        return OpError(*graph_, id, absl::StrCat("input '", graph_->tensor(t).name, "' is ", in.h,
                                                 "x", in.w, ", output is ", out.h, "x", out.w));
      }
      absl::StatusOr<Bound> in_off = Place(id, t);
      if (!in_off.ok()) return in_off.status();
      // An input already placed in its channel slice (in-place concat) needs no copy.
      const bool in_place = in_off->offset == out_off->offset + channel &&
                            in_off->stride == out_off->stride;
      if (in_place && op.activation.kind == ActivationKind::kNone) {
        channel += in.c;
        continue;
      }
      auto k = add_launch("psched_copy_channels", 2, static_cast<size_t>(in.c), ow * oh, 1);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride).Int(in.c);
      args.Tensor(*arena_, out_off->offset, out_off->stride);
      args.Int(channel).Int(out.h * out.w).Activation(op.activation);
      if (!args.status().ok()) return args.status();
      channel += in.c;
    }
    if (channel != out.c) {
      return OpError(*graph_, id, absl::StrCat("inputs have ", channel,
                                               " channels in total, output has ", out.c));
    }
    return absl::OkStatus();
  }

  if (op.kind == OpKind::kAdd || op.kind == OpKind::kMul || op.kind == OpKind::kSub ||
      op.kind == OpKind::kDiv) {
    if (op.inputs.size() != 2) return OpError(*graph_, id, "expects exactly two inputs");
    absl::StatusOr<std::shared_ptr<SvmArena>> weights = Weights(id);
    if (!weights.ok()) return weights.status();
    kernel.weights_ = *weights;
    const std::vector<int64_t> out_dims = model::PhysicalDims(graph_->tensor(op.output));
    if (out_dims.size() > kMaxRank) return OpError(*graph_, id, "output rank above six");
    const std::vector<int64_t> out_st = ArenaStrides(out_dims, out_off->stride);
    auto k = add_launch("psched_binary", 3, static_cast<size_t>(Runs(out_dims.back())),
                        static_cast<size_t>(AxisOrOne(out_dims, 2)),
                        static_cast<size_t>(LeadingElements(out_dims)));
    if (!k.ok()) return k.status();
    ArgBinder args(*k);
    int64_t constant_offset = 0;
    for (model::TensorId t : op.inputs) {
      const model::Tensor& tensor = graph_->tensor(t);
      const std::vector<int64_t> dims = model::PhysicalDims(tensor);
      // An operand of higher rank has only 1s in the extra leading axes (ValidateOp).
      const size_t skip = dims.size() > out_dims.size() ? dims.size() - out_dims.size() : 0;
      const std::vector<int64_t> own(dims.begin() + static_cast<std::ptrdiff_t>(skip), dims.end());
      absl::StatusOr<Source> source = InputSource(id, t, kernel.weights_.get(),
                                                  own.empty() ? 1 : own.back(), &constant_offset);
      if (!source.ok()) return source.status();
      // Arena strides right-aligned to the output, 0 along broadcast axes.
      std::vector<int64_t> st(out_dims.size(), 0);
      const std::vector<int64_t> own_st = ArenaStrides(own, source->stride);
      const size_t lead = out_dims.size() - own.size();
      for (size_t i = 0; i < own.size(); ++i) st[lead + i] = own[i] == 1 ? 0 : own_st[i];
      args.Memory(*source->memory).Int(source->offset).Int8(PadLeading(st, 0));
    }
    int32_t binary = 3;
    if (op.kind == OpKind::kAdd) binary = 0;
    if (op.kind == OpKind::kMul) binary = 1;
    if (op.kind == OpKind::kSub) binary = 2;
    args.Memory(*arena_).Int(out_off->offset).Int8(PadLeading(out_st, 0));
    args.Int8(PadLeading(out_dims, 1)).Int(binary).Activation(op.activation);
    return args.status();
  }

  if (op.inputs.size() != 1) return OpError(*graph_, id, "expects exactly one input");
  const model::Shape& in = graph_->tensor(op.inputs[0]).shape;
  absl::StatusOr<Bound> in_off = Place(id, op.inputs[0]);
  if (!in_off.ok()) return in_off.status();

  switch (op.kind) {
    case OpKind::kMaxPool:
    case OpKind::kAvgPool: {
      const auto* pool = std::get_if<model::PoolAttrs>(&op.attrs);
      if (pool == nullptr) return OpError(*graph_, id, "expects PoolAttrs");
      const model::Window2d& w = pool->window;
      if (w.kernel_h < 1 || w.kernel_w < 1 || w.stride_h < 1 || w.stride_w < 1 ||
          w.dilation_h < 1 || w.dilation_w < 1) {
        return OpError(*graph_, id, "kernel, stride and dilation must all be >= 1");
      }
      if (in.c != out.c) return OpError(*graph_, id, "input and output channels differ");
      const bool include = op.kind == OpKind::kAvgPool && pool->count_include_pad;
      auto k = add_launch("psched_pool", 3, oc, ow, oh);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride).Int(in.h).Int(in.w).Int(in.c);
      args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.h).Int(out.w);
      args.Int(w.kernel_h).Int(w.kernel_w).Int(w.stride_h).Int(w.stride_w);
      args.Int(w.dilation_h).Int(w.dilation_w).Int(w.pad_top).Int(w.pad_left);
      args.Int(op.kind == OpKind::kMaxPool ? 1 : 0);
      args.Int(include ? w.pad_top : 0).Int(include ? w.pad_left : 0);
      args.Int(include ? in.h + pool->declared_pad_bottom : in.h);
      args.Int(include ? in.w + pool->declared_pad_right : in.w);
      args.Activation(op.activation);
      return args.status();
    }
    case OpKind::kGlobalAvgPool: {
      if (in.c != out.c) return OpError(*graph_, id, "input and output channels differ");
      auto k = add_launch("psched_global_avg_pool", 1, oc, 1, 1);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride).Int(in.h * in.w).Int(in.c);
      args.Memory(*arena_).Int(out_off->offset).Activation(op.activation);
      return args.status();
    }
    case OpKind::kPad: {
      const auto* pad = std::get_if<model::PadAttrs>(&op.attrs);
      if (pad == nullptr) return OpError(*graph_, id, "expects PadAttrs");
      if (in.h + pad->top + pad->bottom != out.h || in.w + pad->left + pad->right != out.w ||
          in.c + pad->channels_before + pad->channels_after != out.c) {
        return OpError(*graph_, id, "input extent plus pads does not equal the output extent");
      }
      auto k = add_launch("psched_pad", 3, oc, ow, oh);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride).Int(in.h).Int(in.w).Int(in.c);
      args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.h).Int(out.w).Int(out.c);
      args.Int(pad->top).Int(pad->left).Int(pad->channels_before).Float(pad->value);
      args.Activation(op.activation);
      return args.status();
    }
    case OpKind::kResize: {
      const auto* resize = std::get_if<model::ResizeAttrs>(&op.attrs);
      if (resize == nullptr) return OpError(*graph_, id, "expects ResizeAttrs");
      if (in.c != out.c) return OpError(*graph_, id, "input and output channels differ");
      if (in.h < 1 || in.w < 1) return OpError(*graph_, id, "resize input is empty");
      // A missing (non-positive) scale means "from the sizes", as in ONNX.
      const float scale_h = resize->scale_h > 0.0f ? resize->scale_h
                                                   : static_cast<float>(out.h) / in.h;
      const float scale_w = resize->scale_w > 0.0f ? resize->scale_w
                                                   : static_cast<float>(out.w) / in.w;
      auto k = add_launch("psched_resize", 3, oc, ow, oh);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride).Int(in.h).Int(in.w).Int(in.c);
      args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.h).Int(out.w);
      args.Int(resize->mode == model::ResizeMode::kLinear ? 1 : 0);
      args.Int(static_cast<int32_t>(resize->transform));
      args.Int(static_cast<int32_t>(resize->rounding));
      args.Float(scale_h).Float(scale_w).Activation(op.activation);
      return args.status();
    }
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kSlice: {
      // One strided read per output element (kernels/strided_copy.cl); strides count input
      // elements row-major over `in_dims`.
      const std::vector<int64_t> out_dims = model::PhysicalDims(graph_->tensor(op.output));
      std::vector<int64_t> dims = out_dims, st = RowMajorStrides(out_dims);
      int64_t base = 0;
      if (const auto* t = std::get_if<model::TransposeAttrs>(&op.attrs)) {
        const std::vector<int64_t> in_st = RowMajorStrides(t->in_dims);
        dims.clear();
        st.clear();
        for (int32_t p : t->perm) {
          dims.push_back(t->in_dims[static_cast<size_t>(p)]);
          st.push_back(in_st[static_cast<size_t>(p)]);
        }
      } else if (const auto* sl = std::get_if<model::SliceAttrs>(&op.attrs)) {
        const std::vector<int64_t> in_st =
            RowMajorStrides(model::PhysicalDims(graph_->tensor(op.inputs[0])));
        dims = sl->sizes;
        st.clear();
        for (size_t a = 0; a < in_st.size(); ++a) {
          base += sl->starts[a] * in_st[a];
          st.push_back(sl->steps[a] * in_st[a]);
        }
      }
      if (dims.size() > kMaxRank) return OpError(*graph_, id, "rank above six");
      auto k = add_launch("psched_strided_copy", 3, static_cast<size_t>(Runs(dims.back())),
                          static_cast<size_t>(AxisOrOne(dims, 2)),
                          static_cast<size_t>(LeadingElements(dims)));
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Memory(*arena_).Int(in_off->offset).Int(in.c).Int(in_off->stride);
      args.Memory(*arena_).Int(out_off->offset).Int(out.c).Int(out_off->stride);
      args.Int(base).Int8(PadLeading(st, 0)).Int8(PadLeading(dims, 1));
      args.Int(0).Int(dims.back()).Activation(op.activation);
      return args.status();
    }
    case OpKind::kReduce: {
      const auto* r = std::get_if<model::ReduceAttrs>(&op.attrs);
      if (r == nullptr) return OpError(*graph_, id, "expects ReduceAttrs");
      const std::vector<int64_t> in_dims = model::PhysicalDims(graph_->tensor(op.inputs[0]));
      if (in_dims.size() > kMaxRank) return OpError(*graph_, id, "rank above six");
      const std::vector<int64_t> in_st = RowMajorStrides(in_dims);
      std::vector<int64_t> kept = in_dims, kst = in_st, reduced(in_dims.size(), 1),
                           rst(in_dims.size(), 0);
      for (int32_t a : r->axes) {
        const auto i = static_cast<size_t>(a);
        reduced[i] = in_dims[i];
        rst[i] = in_st[i];
        kept[i] = 1;
        kst[i] = 0;
      }
      int32_t reduce = 0;
      if (r->reduce == model::ReduceKind::kSum) reduce = 1;
      if (r->reduce == model::ReduceKind::kMax) reduce = 2;
      auto k = add_launch("psched_reduce", 1, static_cast<size_t>(model::ElementsOf(kept)), 1, 1);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Memory(*arena_).Int(in_off->offset).Int(in.c).Int(in_off->stride);
      args.Memory(*arena_).Int(out_off->offset).Int(out.c).Int(out_off->stride);
      args.Int8(PadLeading(kept, 1)).Int8(PadLeading(kst, 0));
      args.Int8(PadLeading(reduced, 1)).Int8(PadLeading(rst, 0));
      args.Int(reduce).Activation(op.activation);
      return args.status();
    }
    case OpKind::kConvTranspose2d: {
      const auto* conv = std::get_if<model::ConvAttrs>(&op.attrs);
      if (conv == nullptr) return OpError(*graph_, id, "expects ConvAttrs");
      const model::Window2d& w = conv->window;
      absl::StatusOr<std::shared_ptr<SvmArena>> weights = Weights(id);
      if (!weights.ok()) return weights.status();
      kernel.weights_ = *weights;
      const int64_t cig = in.c / conv->groups;
      const int64_t filter_floats = out.c * w.kernel_h * w.kernel_w * cig;
      auto k = add_launch("psched_conv_transpose2d", 3, oc, ow, oh);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride).Int(in.h).Int(in.w);
      args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.h).Int(out.w).Int(out.c);
      args.Memory(**weights).Int(conv->bias == model::kInvalidId ? -1 : filter_floats);
      args.Int(w.kernel_h).Int(w.kernel_w).Int(w.stride_h).Int(w.stride_w);
      args.Int(w.dilation_h).Int(w.dilation_w).Int(w.pad_top).Int(w.pad_left);
      args.Int(cig).Int(out.c / conv->groups).Activation(op.activation);
      return args.status();
    }
    case OpKind::kFlatten: {
      if (in.Elements() != out.Elements()) {
        return OpError(*graph_, id, "input and output element counts differ");
      }
      auto k = add_launch("psched_flatten", 3, static_cast<size_t>(in.c),
                          static_cast<size_t>(in.w), static_cast<size_t>(in.h));
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride).Int(in.h).Int(in.w).Int(in.c);
      args.Memory(*arena_).Int(out_off->offset).Activation(op.activation);
      return args.status();
    }
    case OpKind::kActivation: {
      if (in.Elements() != out.Elements()) {
        return OpError(*graph_, id, "input and output element counts differ");
      }
      if (in != out) return OpError(*graph_, id, "input and output shapes differ");
      auto k = add_launch("psched_activation", 2, static_cast<size_t>(Runs(out.c)), ow * oh, 1);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride);
      args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.c).Int(out.h * out.w);
      args.Activation(op.activation);
      return args.status();
    }
    case OpKind::kSoftmax: {
      if (in != out) return OpError(*graph_, id, "input and output shapes differ");
      if (!graph_->tensor(op.output).channels_last) {
        // Row-major (transformer) rows are long: a work-group per row.
        auto k = add_launch("psched_softmax_rows", 1,
                            static_cast<size_t>(out.h * out.w) * kRowGroup, 1, 1);
        if (!k.ok()) return k.status();
        kernel.launches_.back().local[0] = kRowGroup;
        ArgBinder args(*k);
        args.Tensor(*arena_, in_off->offset, in_off->stride);
        args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.c);
        args.Activation(op.activation);
        return args.status();
      }
      auto k = add_launch("psched_softmax", 1, static_cast<size_t>(out.h * out.w), 1, 1);
      if (!k.ok()) return k.status();
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride);
      args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.h * out.w);
      args.Int(out.c).Activation(op.activation);
      return args.status();
    }
    case OpKind::kLayerNorm: {
      const auto* ln = std::get_if<model::LayerNormAttrs>(&op.attrs);
      if (ln == nullptr) return OpError(*graph_, id, "expects LayerNormAttrs");
      if (in != out) return OpError(*graph_, id, "input and output shapes differ");
      absl::StatusOr<std::shared_ptr<SvmArena>> weights = Weights(id);
      if (!weights.ok()) return weights.status();
      kernel.weights_ = *weights;
      auto k = add_launch("psched_layer_norm", 1,
                          static_cast<size_t>(out.h * out.w) * kRowGroup, 1, 1);
      if (!k.ok()) return k.status();
      kernel.launches_.back().local[0] = kRowGroup;
      ArgBinder args(*k);
      args.Tensor(*arena_, in_off->offset, in_off->stride);
      args.Tensor(*arena_, out_off->offset, out_off->stride);
      args.Memory(**weights).Int(out.c).Float(ln->epsilon).Activation(op.activation);
      return args.status();
    }
    default:
      return OpError(*graph_, id, "no OpenCL kernel for this op kind");
  }
}

absl::Status KernelFactory::BuildMatMul(OpId id, OpKernel& kernel) {
  const model::Op& op = graph_->op(id);
  const std::vector<int64_t> out = model::PhysicalDims(graph_->tensor(op.output));
  // psched_matmul's tile and work-group shape (kernels/tensor.cl).
  constexpr int64_t kTileM = 32;
  constexpr int64_t kTileN = 64;
  constexpr int64_t kGroup = 8;
  constexpr size_t kMaxBatchDims = 4;
  if (out.size() - 2 > kMaxBatchDims) {
    return OpError(*graph_, id, "more than four batch dims");
  }
  const std::vector<int64_t> batch(out.begin(), out.end() - 2);
  // Each operand: its buffer (the arena, or the op's packed constants), offset and row stride
  // there, and its matrix index stride per output batch dim (0 where it broadcasts).
  absl::StatusOr<std::shared_ptr<SvmArena>> weights = Weights(id);
  if (!weights.ok()) return weights.status();
  kernel.weights_ = *weights;
  struct Operand {
    const SvmArena* memory;
    int64_t offset;
    int64_t row_stride;
    std::vector<int64_t> matrix_strides;
  };
  std::vector<Operand> operands;
  int64_t constant_offset = 0;
  for (model::TensorId t : op.inputs) {
    const model::Tensor& tensor = graph_->tensor(t);
    const std::vector<int64_t> dims = model::PhysicalDims(tensor);
    std::vector<int64_t> strides =
        BroadcastStrides(std::vector<int64_t>(dims.begin(), dims.end() - 2), batch);
    if (tensor.constant != model::kInvalidId) {
      operands.push_back({kernel.weights_.get(), constant_offset, dims.back(), std::move(strides)});
      constant_offset += tensor.shape.Elements();
      continue;
    }
    absl::StatusOr<Bound> in_off = Place(id, t);
    if (!in_off.ok()) return in_off.status();
    // In either layout a tensor's pixels are its last-axis rows, so the pixel stride is the
    // row stride.
    operands.push_back({arena_, in_off->offset, in_off->stride, std::move(strides)});
  }
  absl::StatusOr<Bound> out_off = Place(id, op.output);
  if (!out_off.ok()) return out_off.status();
  const std::vector<int64_t> a = model::PhysicalDims(graph_->tensor(op.inputs[0]));
  const int64_t m = a[a.size() - 2], k = a.back(), n = out.back();
  // Batch dims right-aligned in the int4 (leading lanes extent 1, stride 0).
  const size_t pad = kMaxBatchDims - batch.size();
  std::vector<int64_t> batch4(pad, 1), a4(pad, 0), b4(pad, 0);
  batch4.insert(batch4.end(), batch.begin(), batch.end());
  a4.insert(a4.end(), operands[0].matrix_strides.begin(), operands[0].matrix_strides.end());
  b4.insert(b4.end(), operands[1].matrix_strides.begin(), operands[1].matrix_strides.end());

  absl::StatusOr<cl_kernel> k_or = NewKernel("psched_matmul");
  if (!k_or.ok()) return k_or.status();
  OpKernel::Launch launch;
  launch.kernel = *k_or;
  launch.dims = 3;
  launch.global[0] = static_cast<size_t>((n + kTileN - 1) / kTileN * kGroup);
  launch.global[1] = static_cast<size_t>((m + kTileM - 1) / kTileM * kGroup);
  launch.global[2] = static_cast<size_t>(std::max<int64_t>(model::ElementsOf(batch), 1));
  launch.local[0] = kGroup;
  launch.local[1] = kGroup;
  launch.local[2] = 1;
  kernel.launches_.push_back(launch);
  ArgBinder args(*k_or);
  args.Memory(*operands[0].memory).Int(operands[0].offset).Int(operands[0].row_stride);
  args.Memory(*operands[1].memory).Int(operands[1].offset).Int(operands[1].row_stride);
  args.Memory(*arena_).Int(out_off->offset).Int(out_off->stride).Int(m).Int(n).Int(k);
  args.Int4(batch4, 1).Int4(a4, 0).Int4(b4, 0).Activation(op.activation);
  return args.status();
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelFactory::CreateZeroFill(OpId id) {
  if (id < 0 || static_cast<size_t>(id) >= graph_->ops.size()) {
    return absl::InvalidArgumentError(absl::StrCat("opencl: op #", id, " does not exist"));
  }
  absl::StatusOr<Bound> out_off = Place(id, graph_->op(id).output);
  if (!out_off.ok()) return out_off.status();
  const model::Shape& out = graph_->output_shape(id);
  auto kernel =
      std::unique_ptr<OpKernel>(new OpKernel(device_, graph_->op(id).name + "[zero fill]"));
  absl::StatusOr<cl_kernel> k = NewKernel("psched_fill");
  if (!k.ok()) return k.status();
  OpKernel::Launch launch;
  launch.kernel = *k;
  launch.dims = 2;
  launch.global[0] = static_cast<size_t>(out.c);
  launch.global[1] = static_cast<size_t>(out.h * out.w);
  kernel->launches_.push_back(launch);
  ArgBinder args(*k);
  args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.c).Int(out.h * out.w);
  args.Float(0.0f);
  if (!args.status().ok()) return args.status();
  return kernel;
}

absl::StatusOr<std::unique_ptr<OpKernel>> KernelFactory::CreateActivationEpilogue(OpId id) {
  if (id < 0 || static_cast<size_t>(id) >= graph_->ops.size()) {
    return absl::InvalidArgumentError(absl::StrCat("opencl: op #", id, " does not exist"));
  }
  const model::Op& op = graph_->op(id);
  absl::StatusOr<Bound> out_off = Place(id, op.output);
  if (!out_off.ok()) return out_off.status();
  auto kernel = std::unique_ptr<OpKernel>(new OpKernel(device_, op.name + "[activation]"));
  if (op.activation.kind == ActivationKind::kNone) return kernel;
  const model::Shape& out = graph_->output_shape(id);
  absl::StatusOr<cl_kernel> k = NewKernel("psched_activation");
  if (!k.ok()) return k.status();
  OpKernel::Launch launch;
  launch.kernel = *k;
  launch.dims = 2;
  launch.global[0] = static_cast<size_t>(Runs(out.c));
  launch.global[1] = static_cast<size_t>(out.h * out.w);
  kernel->launches_.push_back(launch);
  ArgBinder args(*k);
  args.Tensor(*arena_, out_off->offset, out_off->stride);
  args.Tensor(*arena_, out_off->offset, out_off->stride).Int(out.c).Int(out.h * out.w);
  args.Activation(op.activation);
  if (!args.status().ok()) return args.status();
  return kernel;
}

}  // namespace psched::executor::opencl
