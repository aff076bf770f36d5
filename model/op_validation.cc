#include "model/op_validation.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace psched::model {
namespace {

std::string ShapeString(const Shape& s) { return absl::StrCat("[", s.h, "x", s.w, "x", s.c, "]"); }

// Output extent of a sliding window along one axis (pads already include any ceil_mode
// extension).
int64_t WindowOutputSize(int64_t in, int32_t kernel, int32_t stride, int32_t dilation,
                         int32_t pad_before, int32_t pad_after) {
  const int64_t effective = static_cast<int64_t>(dilation) * (kernel - 1) + 1;
  const int64_t span = in + pad_before + pad_after - effective;
  return span < 0 ? 0 : span / stride + 1;
}

absl::Status ValidateWindow(const Graph& graph, OpId id, const Window2d& w, const Shape& in,
                            const Shape& out) {
  if (w.kernel_h < 1 || w.kernel_w < 1 || w.stride_h < 1 || w.stride_w < 1 || w.dilation_h < 1 ||
      w.dilation_w < 1 || w.pad_top < 0 || w.pad_left < 0 || w.pad_bottom < 0 || w.pad_right < 0) {
    return InvalidOpError(
        graph, id,
        absl::StrCat("bad window: kernel ", w.kernel_h, "x", w.kernel_w, " stride ", w.stride_h,
                     "x", w.stride_w, " dilation ", w.dilation_h, "x", w.dilation_w, " pads ",
                     w.pad_top, ",", w.pad_left, ",", w.pad_bottom, ",", w.pad_right,
                     " (kernel/stride/dilation must be >= 1, pads >= 0)"));
  }
  const int64_t oh =
      WindowOutputSize(in.h, w.kernel_h, w.stride_h, w.dilation_h, w.pad_top, w.pad_bottom);
  const int64_t ow =
      WindowOutputSize(in.w, w.kernel_w, w.stride_w, w.dilation_w, w.pad_left, w.pad_right);
  if (oh != out.h || ow != out.w || oh < 1 || ow < 1) {
    return InvalidOpError(
        graph, id,
        absl::StrCat("output ", ShapeString(out), " does not match input ", ShapeString(in),
                     " under the window (expected ", oh, "x", ow, " pixels)"));
  }
  return absl::OkStatus();
}

absl::Status ValidateConstant(const Graph& graph, OpId id, ConstantId cid, const char* role,
                              const std::vector<int64_t>& expected_dims) {
  if (cid < 0 || static_cast<size_t>(cid) >= graph.constants.size()) {
    return InvalidOpError(graph, id,
                          absl::StrCat(role, " constant id ", cid, " is out of range (",
                                       graph.constants.size(), " constants)"));
  }
  const Constant& c = graph.constants[static_cast<size_t>(cid)];
  if (c.dims != expected_dims) {
    return InvalidOpError(
        graph, id,
        absl::StrCat(role, " '", c.name, "' has dims [", absl::StrJoin(c.dims, ","),
                     "], expected [", absl::StrJoin(expected_dims, ","), "]"));
  }
  if (static_cast<int64_t>(c.data.size()) != c.Elements()) {
    return InvalidOpError(
        graph, id,
        absl::StrCat(role, " '", c.name, "' holds ", c.data.size(), " values, expected ",
                     c.Elements(), c.data.empty() ? " (graph has no weights)" : ""));
  }
  return absl::OkStatus();
}

// kConvTranspose2d: the window crops the transposed output, output_padding extends it.
absl::Status ValidateConvTranspose(const Graph& graph, OpId id, const ConvAttrs& conv,
                                   const Shape& in, const Shape& out) {
  const Window2d& w = conv.window;
  if (w.kernel_h < 1 || w.kernel_w < 1 || w.stride_h < 1 || w.stride_w < 1 || w.dilation_h < 1 ||
      w.dilation_w < 1 || w.pad_top < 0 || w.pad_left < 0 || w.pad_bottom < 0 ||
      w.pad_right < 0 || conv.output_padding_h < 0 || conv.output_padding_w < 0) {
    return InvalidOpError(
        graph, id,
        absl::StrCat("bad window: kernel ", w.kernel_h, "x", w.kernel_w, " stride ", w.stride_h,
                     "x", w.stride_w, " dilation ", w.dilation_h, "x", w.dilation_w, " pads ",
                     w.pad_top, ",", w.pad_left, ",", w.pad_bottom, ",", w.pad_right,
                     " output_padding ", conv.output_padding_h, ",", conv.output_padding_w,
                     " (kernel/stride/dilation must be >= 1, pads and output_padding >= 0)"));
  }
  auto extent = [](int64_t n, int64_t k, int64_t s, int64_t d, int64_t extra, int64_t crop) {
    return (n - 1) * s + (k - 1) * d + 1 + extra - crop;
  };
  const int64_t oh = extent(in.h, w.kernel_h, w.stride_h, w.dilation_h, conv.output_padding_h,
                            int64_t{w.pad_top} + w.pad_bottom);
  const int64_t ow = extent(in.w, w.kernel_w, w.stride_w, w.dilation_w, conv.output_padding_w,
                            int64_t{w.pad_left} + w.pad_right);
  if (oh != out.h || ow != out.w || oh < 1 || ow < 1) {
    return InvalidOpError(
        graph, id,
        absl::StrCat("output ", ShapeString(out), " does not match input ", ShapeString(in),
                     " under the transposed window (expected ", oh, "x", ow, " pixels)"));
  }
  return absl::OkStatus();
}

std::string DimsText(const std::vector<int64_t>& d) { return absl::StrCat("[", absl::StrJoin(d, ","), "]"); }

// Numpy broadcasting, right-aligned: each operand axis is 1 or the output's, and no operand
// has more axes than the output.
// Numpy broadcasting of `operand` to `out`; an operand of higher rank may carry extra leading
// 1s (a tensor an identity reshape aliased, such as [1,1,1,K] read as [1,K]).
bool Broadcasts(const std::vector<int64_t>& operand, const std::vector<int64_t>& out) {
  size_t skip = 0;
  while (operand.size() - skip > out.size()) {
    if (operand[skip++] != 1) return false;
  }
  const size_t lead = out.size() - (operand.size() - skip);
  for (size_t i = skip; i < operand.size(); ++i) {
    if (operand[i] != 1 && operand[i] != out[lead + i - skip]) return false;
  }
  return true;
}

absl::Status ValidateConstantOperand(const Graph& graph, OpId id, const Tensor& operand) {
  const ConstantId cid = operand.constant;
  if (cid < 0 || static_cast<size_t>(cid) >= graph.constants.size()) {
    return InvalidOpError(
        graph, id,
        absl::StrCat("operand '", operand.name, "' names constant ", cid, ", out of range"));
  }
  const Constant& c = graph.constants[static_cast<size_t>(cid)];
  if (static_cast<int64_t>(c.data.size()) != operand.shape.Elements()) {
    return InvalidOpError(graph, id,
                          absl::StrCat("constant operand '", c.name, "' holds ", c.data.size(),
                                       " values for shape ", ShapeString(operand.shape),
                                       c.data.empty() ? " (graph has no weights)" : ""));
  }
  return absl::OkStatus();
}

bool IsBinaryKind(OpKind kind) {
  return kind == OpKind::kAdd || kind == OpKind::kMul || kind == OpKind::kSub ||
         kind == OpKind::kDiv;
}

// The general tensor kinds (transformer and modern CNN graphs), checked on physical dims.
absl::Status ValidateTensorOp(const Graph& graph, OpId id) {
  const Op& op = graph.op(id);
  const Tensor& out_t = graph.tensor(op.output);
  const std::vector<int64_t> out = PhysicalDims(out_t);
  const std::vector<int64_t> in = PhysicalDims(graph.tensor(op.inputs[0]));
  auto mismatch = [&](const std::string& what) { return InvalidOpError(graph, id, what); };
  switch (op.kind) {
    case OpKind::kTranspose: {
      const auto& t = std::get<TransposeAttrs>(op.attrs);
      const size_t rank = t.in_dims.size();
      if (rank == 0 || rank > 6 || t.perm.size() != rank || ElementsOf(t.in_dims) != ElementsOf(in)) {
        return mismatch(absl::StrCat("view ", DimsText(t.in_dims), " with ", t.perm.size(),
                                     " axes does not fit input ", DimsText(in)));
      }
      std::vector<bool> seen(rank, false);
      for (int32_t p : t.perm) {
        if (p < 0 || static_cast<size_t>(p) >= rank || seen[static_cast<size_t>(p)]) {
          return mismatch("perm is not a permutation of the view's axes");
        }
        seen[static_cast<size_t>(p)] = true;
      }
      if (ElementsOf(out) != ElementsOf(in)) return mismatch("output size differs from input");
      return absl::OkStatus();
    }
    case OpKind::kReshape:
      if (ElementsOf(out) != ElementsOf(in)) {
        return mismatch(absl::StrCat("cannot reshape ", DimsText(in), " to ", DimsText(out)));
      }
      return absl::OkStatus();
    case OpKind::kMatMul: {
      if (op.inputs.size() != 2) return mismatch("expects 2 operands");
      const std::vector<int64_t> b = PhysicalDims(graph.tensor(op.inputs[1]));
      if (in.size() < 2 || b.size() < 2 || out.size() < 2) {
        return mismatch("operands and output must have rank >= 2");
      }
      const int64_t m = in[in.size() - 2], k = in.back(), n = b.back();
      if (b[b.size() - 2] != k || out[out.size() - 2] != m || out.back() != n) {
        return mismatch(absl::StrCat(DimsText(in), " x ", DimsText(b), " does not give ",
                                     DimsText(out)));
      }
      std::vector<int64_t> batch_out(out.begin(), out.end() - 2);
      for (const std::vector<int64_t>* d : {&in, &b}) {
        if (!Broadcasts(std::vector<int64_t>(d->begin(), d->end() - 2), batch_out)) {
          return mismatch(absl::StrCat("batch dims of ", DimsText(*d), " do not broadcast to ",
                                       DimsText(out)));
        }
      }
      for (TensorId t : op.inputs) {
        if (graph.tensor(t).constant != kInvalidId) {
          if (auto s = ValidateConstantOperand(graph, id, graph.tensor(t)); !s.ok()) return s;
        }
      }
      return absl::OkStatus();
    }
    case OpKind::kLayerNorm: {
      const auto& ln = std::get<LayerNormAttrs>(op.attrs);
      // Rows of the last axis; leading 1s may differ ([1,1,K] from a flatten vs [1,K]).
      if (ElementsOf(out) != ElementsOf(in) || out.back() != in.back()) {
        return mismatch(absl::StrCat("output ", DimsText(out), " differs from input ",
                                     DimsText(in)));
      }
      if (!(ln.epsilon >= 0)) return mismatch("epsilon must be >= 0");
      if (auto s = ValidateConstant(graph, id, ln.scale, "scale", {in.back()}); !s.ok()) return s;
      if (ln.bias != kInvalidId) return ValidateConstant(graph, id, ln.bias, "bias", {in.back()});
      return absl::OkStatus();
    }
    case OpKind::kReduce: {
      const auto& r = std::get<ReduceAttrs>(op.attrs);
      int64_t kept = 1;
      int32_t prev = -1;
      for (int32_t a : r.axes) {
        if (a <= prev || static_cast<size_t>(a) >= in.size()) {
          return mismatch("reduce axes must be ascending input axes");
        }
        prev = a;
      }
      for (size_t i = 0; i < in.size(); ++i) {
        if (std::find(r.axes.begin(), r.axes.end(), static_cast<int32_t>(i)) == r.axes.end()) {
          kept *= in[i];
        }
      }
      if (r.axes.empty() || ElementsOf(out) != kept) {
        return mismatch(absl::StrCat("output ", DimsText(out), " is not ", DimsText(in),
                                     " reduced over its axes"));
      }
      return absl::OkStatus();
    }
    case OpKind::kSlice: {
      const auto& sl = std::get<SliceAttrs>(op.attrs);
      if (sl.starts.size() != in.size() || sl.steps.size() != in.size() ||
          sl.sizes.size() != in.size()) {
        return mismatch("slice has a start, step and size per input axis");
      }
      for (size_t i = 0; i < in.size(); ++i) {
        const int64_t last = sl.starts[i] + (sl.sizes[i] - 1) * sl.steps[i];
        if (sl.sizes[i] < 1 || sl.steps[i] == 0 || sl.starts[i] < 0 || sl.starts[i] >= in[i] ||
            last < 0 || last >= in[i]) {
          return mismatch(absl::StrCat("axis ", i, " slice start ", sl.starts[i], " step ",
                                       sl.steps[i], " size ", sl.sizes[i], " leaves [0, ", in[i],
                                       ")"));
        }
      }
      if (ElementsOf(sl.sizes) != ElementsOf(out)) return mismatch("output size differs from slice");
      return absl::OkStatus();
    }
    default:
      return mismatch("not a general tensor kind");
  }
}

template <typename T>
const T* AttrsOf(const Op& op) {
  return std::get_if<T>(&op.attrs);
}

// Whether op.attrs holds the alternative its kind reads, so later std::get calls cannot throw.
bool HasExpectedAttrs(const Op& op) {
  switch (op.kind) {
    case OpKind::kConv2d:
    case OpKind::kConvTranspose2d:
      return AttrsOf<ConvAttrs>(op) != nullptr;
    case OpKind::kFullyConnected:
      return AttrsOf<FullyConnectedAttrs>(op) != nullptr;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      return AttrsOf<PoolAttrs>(op) != nullptr;
    case OpKind::kPad:
      return AttrsOf<PadAttrs>(op) != nullptr;
    case OpKind::kResize:
      return AttrsOf<ResizeAttrs>(op) != nullptr;
    case OpKind::kConcat:
      return AttrsOf<ConcatAttrs>(op) != nullptr || std::holds_alternative<std::monostate>(op.attrs);
    case OpKind::kTranspose:
      return AttrsOf<TransposeAttrs>(op) != nullptr;
    case OpKind::kSlice:
      return AttrsOf<SliceAttrs>(op) != nullptr;
    case OpKind::kLayerNorm:
      return AttrsOf<LayerNormAttrs>(op) != nullptr;
    case OpKind::kReduce:
      return AttrsOf<ReduceAttrs>(op) != nullptr;
    default:
      return true;
  }
}

absl::Status ValidateShapes(const Graph& graph, OpId id) {
  const Op& op = graph.op(id);
  const Shape& out = graph.output_shape(id);
  const std::vector<TensorId> acts = graph.ActivationInputs(id);
  const Shape& in = graph.tensor(acts[0]).shape;
  switch (op.kind) {
    case OpKind::kConv2d:
    case OpKind::kConvTranspose2d: {
      const auto& conv = *AttrsOf<ConvAttrs>(op);
      if (conv.groups < 1 || in.c % conv.groups != 0 || out.c % conv.groups != 0) {
        return InvalidOpError(
            graph, id,
            absl::StrCat("groups ", conv.groups, " must divide cin ", in.c, " and cout ", out.c));
      }
      if (op.kind == OpKind::kConv2d && (conv.output_padding_h != 0 || conv.output_padding_w != 0)) {
        return InvalidOpError(graph, id, "a convolution has no output_padding");
      }
      if (auto s = op.kind == OpKind::kConv2d ? ValidateWindow(graph, id, conv.window, in, out)
                                              : ValidateConvTranspose(graph, id, conv, in, out);
          !s.ok()) {
        return s;
      }
      if (auto s = ValidateConstant(
              graph, id, conv.filter, "filter",
              {out.c, conv.window.kernel_h, conv.window.kernel_w, in.c / conv.groups});
          !s.ok()) {
        return s;
      }
      if (conv.bias != kInvalidId) {
        return ValidateConstant(graph, id, conv.bias, "bias", {out.c});
      }
      return absl::OkStatus();
    }
    case OpKind::kFullyConnected: {
      const auto& fc = *AttrsOf<FullyConnectedAttrs>(op);
      if (in.h != out.h || in.w != out.w) {
        return InvalidOpError(
            graph, id,
            absl::StrCat("input ", ShapeString(in), " and output ", ShapeString(out),
                         " must have the same rows"));
      }
      if (auto s = ValidateConstant(graph, id, fc.weight, "weight", {out.c, in.c}); !s.ok()) {
        return s;
      }
      if (fc.bias != kInvalidId) {
        return ValidateConstant(graph, id, fc.bias, "bias", {out.c});
      }
      return absl::OkStatus();
    }
    case OpKind::kMaxPool:
    case OpKind::kAvgPool: {
      const auto& pool = *AttrsOf<PoolAttrs>(op);
      if (in.c != out.c) {
        return InvalidOpError(graph, id,
                              absl::StrCat("channels change from ", in.c, " to ", out.c));
      }
      if (pool.declared_pad_bottom < 0 || pool.declared_pad_right < 0 ||
          pool.declared_pad_bottom > pool.window.pad_bottom ||
          pool.declared_pad_right > pool.window.pad_right) {
        return InvalidOpError(graph, id,
                              absl::StrCat("declared pads ", pool.declared_pad_bottom, ",",
                                           pool.declared_pad_right, " exceed the effective pads ",
                                           pool.window.pad_bottom, ",", pool.window.pad_right));
      }
      return ValidateWindow(graph, id, pool.window, in, out);
    }
    case OpKind::kGlobalAvgPool:
      if (out != Shape{1, 1, in.c}) {
        return InvalidOpError(graph, id,
                              absl::StrCat("output ", ShapeString(out), " for input ",
                                           ShapeString(in), ", expected [1x1x", in.c, "]"));
      }
      return absl::OkStatus();
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv: {
      if (op.inputs.size() != 2) {
        return InvalidOpError(graph, id,
                              absl::StrCat("has ", op.inputs.size(), " inputs, expected 2"));
      }
      const std::vector<int64_t> out_dims = PhysicalDims(graph.tensor(op.output));
      std::vector<int64_t> expected(out_dims.size(), 1);
      for (TensorId t : op.inputs) {
        const Tensor& operand = graph.tensor(t);
        const std::vector<int64_t> dims = PhysicalDims(operand);
        if (!Broadcasts(dims, out_dims)) {
          return InvalidOpError(graph, id,
                                absl::StrCat("operand '", operand.name, "' ", DimsText(dims),
                                             " does not broadcast to ", DimsText(out_dims)));
        }
        // An operand of higher rank has only 1s in its extra leading axes (Broadcasts).
        const size_t skip = dims.size() > out_dims.size() ? dims.size() - out_dims.size() : 0;
        const size_t lead = out_dims.size() - (dims.size() - skip);
        for (size_t i = skip; i < dims.size(); ++i) {
          expected[lead + i - skip] = std::max(expected[lead + i - skip], dims[i]);
        }
        if (operand.constant != kInvalidId) {
          if (auto s = ValidateConstantOperand(graph, id, operand); !s.ok()) return s;
        }
      }
      if (expected != out_dims) {
        return InvalidOpError(graph, id,
                              absl::StrCat("output ", DimsText(out_dims), " is not the broadcast ",
                                           DimsText(expected), " of its operands"));
      }
      return absl::OkStatus();
    }
    case OpKind::kConcat: {
      const auto* attrs = AttrsOf<ConcatAttrs>(op);
      if (attrs != nullptr && attrs->axis != -1) {
        const std::vector<int64_t> out_dims = PhysicalDims(graph.tensor(op.output));
        const auto axis = static_cast<size_t>(attrs->axis);
        if (axis >= out_dims.size()) return InvalidOpError(graph, id, "concat axis out of range");
        int64_t total = 0;
        for (TensorId t : op.inputs) {
          std::vector<int64_t> d = PhysicalDims(graph.tensor(t));
          if (d.size() != out_dims.size()) {
            return InvalidOpError(graph, id, absl::StrCat("input ", DimsText(d), " has rank ",
                                                          d.size(), ", output ", out_dims.size()));
          }
          total += d[axis];
          d[axis] = out_dims[axis];
          if (d != out_dims) {
            return InvalidOpError(graph, id,
                                  absl::StrCat("input ", DimsText(PhysicalDims(graph.tensor(t))),
                                               " differs from output ", DimsText(out_dims),
                                               " outside axis ", axis));
          }
          if (graph.tensor(t).constant != kInvalidId) {
            if (auto s = ValidateConstantOperand(graph, id, graph.tensor(t)); !s.ok()) return s;
          }
        }
        if (total != out_dims[axis]) {
          return InvalidOpError(graph, id, "inputs do not add up to the output along the axis");
        }
        return absl::OkStatus();
      }
      if (acts.size() != op.inputs.size()) {
        return InvalidOpError(graph, id, "constant inputs are not supported");
      }
      int64_t channels = 0;
      for (TensorId t : acts) {
        const Shape& s = graph.tensor(t).shape;
        if (s.h != out.h || s.w != out.w) {
          return InvalidOpError(graph, id,
                                absl::StrCat("input ", ShapeString(s),
                                             " differs spatially from output ", ShapeString(out)));
        }
        channels += s.c;
      }
      if (channels != out.c) {
        return InvalidOpError(
            graph, id,
            absl::StrCat("inputs have ", channels, " channels in all, output has ", out.c));
      }
      return absl::OkStatus();
    }
    case OpKind::kPad: {
      const auto& pad = *AttrsOf<PadAttrs>(op);
      if (pad.top < 0 || pad.left < 0 || pad.bottom < 0 || pad.right < 0 ||
          pad.channels_before < 0 || pad.channels_after < 0) {
        return InvalidOpError(graph, id, "negative pads (cropping) are not supported");
      }
      const Shape expected{in.h + pad.top + pad.bottom, in.w + pad.left + pad.right,
                           in.c + pad.channels_before + pad.channels_after};
      if (expected != out) {
        return InvalidOpError(
            graph, id,
            absl::StrCat("output ", ShapeString(out), ", expected ", ShapeString(expected)));
      }
      return absl::OkStatus();
    }
    case OpKind::kResize:
      if (in.c != out.c) {
        return InvalidOpError(graph, id,
                              absl::StrCat("channels change from ", in.c, " to ", out.c));
      }
      return absl::OkStatus();
    case OpKind::kFlatten:
      if (out != Shape{1, 1, in.Elements()}) {
        return InvalidOpError(
            graph, id,
            absl::StrCat("output ", ShapeString(out), ", expected [1x1x", in.Elements(), "]"));
      }
      return absl::OkStatus();
    case OpKind::kActivation:
    case OpKind::kSoftmax:
      if (in != out) {
        return InvalidOpError(
            graph, id,
            absl::StrCat("output ", ShapeString(out), " differs from input ", ShapeString(in)));
      }
      return absl::OkStatus();
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kMatMul:
    case OpKind::kLayerNorm:
    case OpKind::kReduce:
    case OpKind::kSlice:
      return ValidateTensorOp(graph, id);
  }
  return InvalidOpError(graph, id, "unknown op kind");
}

}  // namespace

absl::Status InvalidOpError(const Graph& graph, OpId id, std::string_view what) {
  const Op& op = graph.op(id);
  return absl::InvalidArgumentError(absl::StrCat(
      "op ", id, " '", op.name, "' (", std::string(OpKindName(op.kind)), "): ", std::string(what)));
}

absl::Status ValidateOp(const Graph& graph, OpId id) {
  if (id < 0 || static_cast<size_t>(id) >= graph.ops.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("op id ", id, " is out of range (graph has ", graph.ops.size(), " ops)"));
  }
  const Op& op = graph.op(id);
  for (TensorId t : op.inputs) {
    if (t < 0 || static_cast<size_t>(t) >= graph.tensors.size()) {
      return InvalidOpError(graph, id, absl::StrCat("input tensor id ", t, " is out of range"));
    }
  }
  if (op.output < 0 || static_cast<size_t>(op.output) >= graph.tensors.size()) {
    return InvalidOpError(graph, id,
                          absl::StrCat("output tensor id ", op.output, " is out of range"));
  }
  if (!HasExpectedAttrs(op)) return InvalidOpError(graph, id, "attrs do not match the op kind");
  const size_t acts = graph.ActivationInputs(id).size();
  const bool many = IsBinaryKind(op.kind) || op.kind == OpKind::kConcat || op.kind == OpKind::kMatMul;
  if (acts == 0 || (!many && acts != 1)) {
    return InvalidOpError(graph, id,
                          absl::StrCat("has ", acts, " activation inputs, expected ",
                                       many ? "at least 1" : "exactly 1"));
  }
  if (!op.inputs.empty() && graph.tensor(op.inputs[0]).constant != kInvalidId &&
      !many) {
    return InvalidOpError(graph, id, "its first input is a constant");
  }
  return ValidateShapes(graph, id);
}

}  // namespace psched::model
