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

// An operand of an element-wise binary op broadcasts along an axis when its extent is 1.
bool Broadcasts(const Shape& operand, const Shape& out) {
  return (operand.h == out.h || operand.h == 1) && (operand.w == out.w || operand.w == 1) &&
         (operand.c == out.c || operand.c == 1);
}

template <typename T>
const T* AttrsOf(const Op& op) {
  return std::get_if<T>(&op.attrs);
}

// Whether op.attrs holds the alternative its kind reads, so later std::get calls cannot throw.
bool HasExpectedAttrs(const Op& op) {
  switch (op.kind) {
    case OpKind::kConv2d:
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
    case OpKind::kConv2d: {
      const auto& conv = *AttrsOf<ConvAttrs>(op);
      if (conv.groups < 1 || in.c % conv.groups != 0 || out.c % conv.groups != 0) {
        return InvalidOpError(
            graph, id,
            absl::StrCat("groups ", conv.groups, " must divide cin ", in.c, " and cout ", out.c));
      }
      if (auto s = ValidateWindow(graph, id, conv.window, in, out); !s.ok()) return s;
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
      if (in.h != 1 || in.w != 1 || out.h != 1 || out.w != 1) {
        return InvalidOpError(
            graph, id,
            absl::StrCat("input ", ShapeString(in), " and output ", ShapeString(out),
                         " must be 1x1xK (a flatten precedes it)"));
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
    case OpKind::kSub: {
      if (op.inputs.size() != 2) {
        return InvalidOpError(graph, id,
                              absl::StrCat("has ", op.inputs.size(), " inputs, expected 2"));
      }
      for (TensorId t : op.inputs) {
        const Tensor& operand = graph.tensor(t);
        if (!Broadcasts(operand.shape, out)) {
          return InvalidOpError(
              graph, id,
              absl::StrCat("operand '", operand.name, "' ", ShapeString(operand.shape),
                           " does not broadcast to ", ShapeString(out)));
        }
        if (operand.constant != kInvalidId) {
          const ConstantId cid = operand.constant;
          if (cid < 0 || static_cast<size_t>(cid) >= graph.constants.size()) {
            return InvalidOpError(graph, id,
                                  absl::StrCat("operand '", operand.name, "' names constant ", cid,
                                               ", out of range"));
          }
          const Constant& c = graph.constants[static_cast<size_t>(cid)];
          if (static_cast<int64_t>(c.data.size()) != operand.shape.Elements()) {
            return InvalidOpError(
                graph, id,
                absl::StrCat("constant operand '", c.name, "' holds ", c.data.size(),
                             " values for shape ", ShapeString(operand.shape),
                             c.data.empty() ? " (graph has no weights)" : ""));
          }
        }
      }
      const Shape& a = graph.tensor(op.inputs[0]).shape;
      const Shape& b = graph.tensor(op.inputs[1]).shape;
      const Shape expected{std::max(a.h, b.h), std::max(a.w, b.w), std::max(a.c, b.c)};
      if (expected != out) {
        return InvalidOpError(graph, id,
                              absl::StrCat("output ", ShapeString(out), " is not the broadcast ",
                                           ShapeString(expected), " of its operands"));
      }
      return absl::OkStatus();
    }
    case OpKind::kConcat: {
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
  const bool binary = op.kind == OpKind::kAdd || op.kind == OpKind::kMul || op.kind == OpKind::kSub;
  if (acts == 0 || (!binary && op.kind != OpKind::kConcat && acts != 1)) {
    return InvalidOpError(
        graph, id,
        absl::StrCat("has ", acts, " activation inputs, expected ",
                     binary || op.kind == OpKind::kConcat ? "at least 1" : "exactly 1"));
  }
  return ValidateShapes(graph, id);
}

}  // namespace psched::model
