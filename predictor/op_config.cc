#include "predictor/op_config.h"

#include <algorithm>
#include <variant>

namespace psched::predictor {

using model::OpKind;
using model::Shape;

bool OpConfig::IsDepthwise() const {
  return kind == OpKind::kConv2d && groups > 1 && !inputs.empty() && inputs[0].c == groups;
}

void ComputeCost(OpConfig& config) {
  const double out = static_cast<double>(config.output.Elements());
  double in = 0;
  for (const Shape& s : config.inputs) in += static_cast<double>(s.Elements());
  double weights = 0;
  switch (config.kind) {
    case OpKind::kConv2d: {
      const double cin_per_group =
          config.inputs.empty() ? 1.0 : static_cast<double>(config.inputs[0].c) / config.groups;
      const double window = static_cast<double>(config.window.kernel_h) * config.window.kernel_w;
      weights = static_cast<double>(config.output.c) * window * cin_per_group;
      config.flops = 2.0 * out * window * cin_per_group;
      break;
    }
    case OpKind::kConvTranspose2d: {
      // Each input pixel scatters a window into cout / groups channels.
      const double in_pixels =
          config.inputs.empty() ? 0.0
                                : static_cast<double>(config.inputs[0].h * config.inputs[0].w);
      const double cin = config.inputs.empty() ? 1.0 : static_cast<double>(config.inputs[0].c);
      const double window = static_cast<double>(config.window.kernel_h) * config.window.kernel_w;
      weights = cin * window * static_cast<double>(config.output.c) / config.groups;
      config.flops = 2.0 * in_pixels * weights;
      break;
    }
    case OpKind::kFullyConnected:
      weights = in * static_cast<double>(config.output.c);
      config.flops = 2.0 * weights;
      break;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
      config.flops = out * config.window.kernel_h * config.window.kernel_w;
      break;
    case OpKind::kGlobalAvgPool:
      config.flops = in;
      break;
    case OpKind::kConcat:
    case OpKind::kPad:
    case OpKind::kFlatten:
      config.flops = 0;
      break;
    default:
      config.flops = out;
      break;
  }
  // A partial sum reads the output back before adding to it.
  const double written = config.accumulate ? 2.0 * out : out;
  config.bytes = 4.0 * (in + written + weights);
}

OpConfig WholeOpConfig(const model::Graph& graph, model::OpId id) {
  return WholeOpConfig(graph, id, model::AliasConcatInputs(graph));
}

OpConfig WholeOpConfig(const model::Graph& graph, model::OpId id,
                       const model::ConcatAliasing& aliasing) {
  const model::Op& op = graph.op(id);
  OpConfig config;
  config.kind = op.kind;
  for (model::TensorId t : graph.ActivationInputs(id))
    config.inputs.push_back(graph.tensor(t).shape);
  config.output = graph.output_shape(id);
  config.activation = op.activation.kind;
  if (const auto* conv = std::get_if<model::ConvAttrs>(&op.attrs)) {
    config.window = conv->window;
    config.groups = conv->groups;
  } else if (const auto* pool = std::get_if<model::PoolAttrs>(&op.attrs)) {
    config.window = pool->window;
  }
  config.output_pixel_stride = model::OutputPixelStride(graph, aliasing, id);
  ComputeCost(config);
  return config;
}

namespace {

// Output rows [begin, end) of a conv read input rows [first, last] (halo included); rows
// outside the input are padding.
void SliceRows(OpConfig& c, int64_t begin, int64_t end) {
  const model::Window2d& w = c.window;
  Shape& in = c.inputs[0];
  const int64_t first = begin * w.stride_h - w.pad_top;
  const int64_t last =
      (end - 1) * w.stride_h - w.pad_top + static_cast<int64_t>(w.kernel_h - 1) * w.dilation_h;
  const int64_t clipped_first = std::max<int64_t>(first, 0);
  const int64_t clipped_last = std::min<int64_t>(last, in.h - 1);
  c.window.pad_top = static_cast<int32_t>(clipped_first - first);
  c.window.pad_bottom = static_cast<int32_t>(last - clipped_last);
  in.h = std::max<int64_t>(clipped_last - clipped_first + 1, 1);
  c.output.h = end - begin;
}

}  // namespace

OpConfig SubtaskConfig(const OpConfig& whole, model::SplitAxis axis, int64_t begin, int64_t end) {
  OpConfig c = whole;
  const int64_t n = end - begin;
  const bool conv = whole.kind == OpKind::kConv2d;
  const bool fc = whole.kind == OpKind::kFullyConnected;
  if ((!conv && !fc) || c.inputs.empty()) return c;
  switch (axis) {
    case model::SplitAxis::kNone:
      return c;
    case model::SplitAxis::kOutputChannels:
      if (conv && whole.groups > 1) {
        // A slice of whole groups keeps each group's channel counts.
        const int64_t out_per_group = whole.output.c / whole.groups;
        const int64_t in_per_group = whole.inputs[0].c / whole.groups;
        c.output.c = n * out_per_group;
        c.inputs[0].c = n * in_per_group;
        c.groups = static_cast<int32_t>(n);
      } else {
        c.output.c = n;
      }
      break;
    case model::SplitAxis::kInputChannels:
      c.accumulate = true;
      if (conv) {
        c.inputs[0].c = n;
      } else {
        c.inputs[0] = Shape{1, 1, n};
      }
      break;
    case model::SplitAxis::kRows:
      if (conv) SliceRows(c, begin, end);
      break;
  }
  ComputeCost(c);
  return c;
}

OpConfig SubtaskConfig(const model::Graph& graph, model::OpId id, model::SplitAxis axis,
                       int64_t begin, int64_t end) {
  return SubtaskConfig(WholeOpConfig(graph, id), axis, begin, end);
}

}  // namespace psched::predictor
