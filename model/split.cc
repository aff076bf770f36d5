#include "model/split.h"

#include <vector>

namespace psched::model {

std::string_view SplitAxisName(SplitAxis axis) {
  switch (axis) {
    case SplitAxis::kNone: return "none";
    case SplitAxis::kOutputChannels: return "cout";
    case SplitAxis::kInputChannels: return "cin";
    case SplitAxis::kRows: return "spatial";
  }
  return "none";
}

std::optional<SplitAxis> SplitAxisFromName(std::string_view name) {
  for (SplitAxis a : kAllSplitAxes) {
    if (SplitAxisName(a) == name) return a;
  }
  return std::nullopt;
}

namespace {

// Rows of a row-major output worth splitting: at least two.
int64_t RowMajorRows(const Graph& graph, const Op& op) {
  const Tensor& out = graph.tensor(op.output);
  if (out.channels_last || out.shape.w != 1 || out.shape.h < 2) return 0;
  return out.shape.h;
}

}  // namespace

RowOperand ClassifyRowOperand(const Graph& graph, OpId id, TensorId input) {
  const Tensor& out = graph.tensor(graph.op(id).output);
  const Tensor& in = graph.tensor(input);
  const int64_t elements = ElementsOf(PhysicalDims(in));
  if (elements == 1) return RowOperand::kBroadcast;
  const std::vector<int64_t> dims = PhysicalDims(in);
  const std::vector<int64_t> out_dims = PhysicalDims(out);
  // Broadcast-compatible operands with the output's element count have the output's dims.
  if (elements == out.shape.Elements() && !in.channels_last) return RowOperand::kRows;
  if (!dims.empty() && elements == out.shape.c && dims.back() == out_dims.back()) {
    return RowOperand::kBroadcast;
  }
  return RowOperand::kOther;
}

int64_t WorkSize(const Graph& graph, OpId id, SplitAxis axis) {
  if (axis == SplitAxis::kNone) return 1;
  const Op& op = graph.op(id);
  const Shape& out = graph.output_shape(id);
  switch (op.kind) {
    case OpKind::kConv2d: {
      const auto& conv = std::get<ConvAttrs>(op.attrs);
      const Shape& in = graph.tensor(op.inputs[0]).shape;
      switch (axis) {
        case SplitAxis::kOutputChannels: return conv.groups == 1 ? out.c : conv.groups;
        case SplitAxis::kInputChannels: return conv.groups == 1 ? in.c : 0;
        case SplitAxis::kRows: return out.h;
        default: return 0;
      }
    }
    case OpKind::kFullyConnected: {
      const Shape& in = graph.tensor(op.inputs[0]).shape;
      const bool token_rows = in.h == out.h && in.w == out.w;
      switch (axis) {
        case SplitAxis::kOutputChannels: return out.c;
        // The kernels slice the weight's input features; over token rows that is the
        // channels, which a flattened input's elements are.
        case SplitAxis::kInputChannels: return token_rows ? in.c : in.Elements();
        case SplitAxis::kRows: return token_rows ? RowMajorRows(graph, op) : 0;
        default: return 0;
      }
    }
    case OpKind::kMatMul: {
      if (op.inputs.size() != 2) return 0;
      const std::vector<int64_t> a = PhysicalDims(graph.tensor(op.inputs[0]));
      const std::vector<int64_t> b = PhysicalDims(graph.tensor(op.inputs[1]));
      if (a.size() < 2 || b.size() < 2 || graph.tensor(op.output).channels_last) return 0;
      switch (axis) {
        case SplitAxis::kOutputChannels: return b.back();
        case SplitAxis::kInputChannels: return a.back();
        case SplitAxis::kRows: return out.h;  // batch x M: a range of whole matrices is heads
        default: return 0;
      }
    }
    case OpKind::kSoftmax:
    case OpKind::kLayerNorm:
    case OpKind::kActivation:
      return axis == SplitAxis::kRows ? RowMajorRows(graph, op) : 0;
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kDiv: {
      if (axis != SplitAxis::kRows) return 0;
      for (TensorId t : op.inputs) {
        if (ClassifyRowOperand(graph, id, t) == RowOperand::kOther) return 0;
      }
      return RowMajorRows(graph, op);
    }
    default:
      return 0;
  }
}

}  // namespace psched::model
