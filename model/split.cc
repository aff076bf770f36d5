#include "model/split.h"

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

int64_t WorkSize(const Graph& graph, OpId id, SplitAxis axis) {
  if (axis == SplitAxis::kNone) return 1;
  const Op& op = graph.op(id);
  const Shape& out = graph.output_shape(id);
  if (op.kind == OpKind::kConv2d) {
    const auto& conv = std::get<ConvAttrs>(op.attrs);
    const Shape& in = graph.tensor(op.inputs[0]).shape;
    switch (axis) {
      case SplitAxis::kOutputChannels: return conv.groups == 1 ? out.c : conv.groups;
      case SplitAxis::kInputChannels: return conv.groups == 1 ? in.c : 0;
      case SplitAxis::kRows: return out.h;
      default: return 0;
    }
  }
  if (op.kind == OpKind::kFullyConnected) {
    const Shape& in = graph.tensor(op.inputs[0]).shape;
    switch (axis) {
      case SplitAxis::kOutputChannels: return out.c;
      // The kernels slice the weight's input features; over token rows that is the channels,
      // which a flattened input's elements are.
      case SplitAxis::kInputChannels:
        return in.h == out.h && in.w == out.w ? in.c : in.Elements();
      default: return 0;
    }
  }
  return 0;
}

}  // namespace psched::model
