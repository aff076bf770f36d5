#include "model/op_cost.h"

namespace psched::model {
namespace {

// Constant ids an op reads, in a fixed order.
std::vector<ConstantId> OpConstants(const Graph& graph, OpId id) {
  const Op& op = graph.op(id);
  std::vector<ConstantId> ids;
  if (const auto* conv = std::get_if<ConvAttrs>(&op.attrs)) {
    ids = {conv->filter, conv->bias};
  } else if (const auto* fc = std::get_if<FullyConnectedAttrs>(&op.attrs)) {
    ids = {fc->weight, fc->bias};
  } else if (const auto* ln = std::get_if<LayerNormAttrs>(&op.attrs)) {
    ids = {ln->scale, ln->bias};
  }
  for (TensorId t : op.inputs) ids.push_back(graph.tensor(t).constant);
  std::erase(ids, kInvalidId);
  return ids;
}

}  // namespace

int64_t OpFlops(const Graph& graph, OpId id) {
  const Op& op = graph.op(id);
  const Shape& out = graph.output_shape(id);
  const int64_t elements = out.Elements();
  int64_t flops = 0;
  switch (op.kind) {
    case OpKind::kConv2d: {
      const auto& conv = std::get<ConvAttrs>(op.attrs);
      const int64_t cin = graph.tensor(op.inputs[0]).shape.c;
      flops = 2 * elements * conv.window.kernel_h * conv.window.kernel_w * (cin / conv.groups);
      break;
    }
    case OpKind::kConvTranspose2d: {
      // Every input pixel scatters a kernel_h x kernel_w window into cout / groups channels.
      const auto& conv = std::get<ConvAttrs>(op.attrs);
      const Shape& in = graph.tensor(op.inputs[0]).shape;
      flops = 2 * in.Elements() * conv.window.kernel_h * conv.window.kernel_w *
              (out.c / conv.groups);
      break;
    }
    case OpKind::kFullyConnected:
      flops = 2 * elements * graph.tensor(op.inputs[0]).shape.c;
      break;
    case OpKind::kMatMul:
      flops = 2 * elements * graph.tensor(op.inputs[0]).shape.c;
      break;
    case OpKind::kLayerNorm:
      flops = 8 * elements;
      break;
    case OpKind::kReduce:
      flops = graph.tensor(op.inputs[0]).shape.Elements();
      break;
    case OpKind::kDiv:
      flops = elements;
      break;
    case OpKind::kTranspose:
    case OpKind::kReshape:
    case OpKind::kSlice:
      break;
    case OpKind::kMaxPool:
    case OpKind::kAvgPool: {
      const auto& pool = std::get<PoolAttrs>(op.attrs);
      flops = elements * pool.window.kernel_h * pool.window.kernel_w;
      break;
    }
    case OpKind::kGlobalAvgPool:
      flops = graph.tensor(op.inputs[0]).shape.Elements();
      break;
    case OpKind::kAdd:
    case OpKind::kMul:
    case OpKind::kSub:
    case OpKind::kActivation:
      flops = elements;
      break;
    case OpKind::kSoftmax:
      flops = 3 * elements;
      break;
    case OpKind::kResize:
      flops = std::get<ResizeAttrs>(op.attrs).mode == ResizeMode::kLinear ? 8 * elements : 0;
      break;
    case OpKind::kConcat:
    case OpKind::kPad:
    case OpKind::kFlatten:
      break;
  }
  if (op.kind != OpKind::kActivation && op.activation.kind != ActivationKind::kNone) {
    flops += elements;
  }
  return flops;
}

int64_t OpParams(const Graph& graph, OpId id) {
  int64_t params = 0;
  for (ConstantId c : OpConstants(graph, id)) {
    params += graph.constants[static_cast<size_t>(c)].Elements();
  }
  return params;
}

int64_t GraphFlops(const Graph& graph) {
  int64_t flops = 0;
  for (OpId id = 0; id < static_cast<OpId>(graph.ops.size()); ++id) flops += OpFlops(graph, id);
  return flops;
}

int64_t GraphParams(const Graph& graph) {
  int64_t params = 0;
  for (OpId id = 0; id < static_cast<OpId>(graph.ops.size()); ++id) params += OpParams(graph, id);
  return params;
}

}  // namespace psched::model
