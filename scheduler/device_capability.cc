#include "scheduler/device_capability.h"

namespace psched::scheduler {

bool DeviceRunsOp(platform::DeviceKind kind, const model::Graph& graph, model::OpId id) {
  if (kind != platform::DeviceKind::kGpu) return true;
  const model::Op& op = graph.op(id);
  if (!model::IsClassicActivation(op.activation.kind)) return false;
  const model::Tensor& out = graph.tensor(op.output);
  switch (op.kind) {
    case model::OpKind::kConv2d:
    case model::OpKind::kMaxPool:
    case model::OpKind::kAvgPool:
    case model::OpKind::kGlobalAvgPool:
    case model::OpKind::kPad:
    case model::OpKind::kResize:
    case model::OpKind::kFlatten:
    case model::OpKind::kActivation:
      return true;
    case model::OpKind::kMatMul:
      // psched_matmul: batched, broadcast over up to four batch dims (any canonical rank).
      return true;
    case model::OpKind::kFullyConnected:
      return out.shape.h * out.shape.w == 1;
    case model::OpKind::kSoftmax:
      // Over the last axis: psched_softmax per pixel of an image, psched_softmax_rows per
      // row of a row-major tensor.
    case model::OpKind::kLayerNorm:
      return true;
    case model::OpKind::kAdd:
    case model::OpKind::kMul:
    case model::OpKind::kSub:
      // The OpenCL kernels broadcast over the three-axis view only.
      for (model::TensorId t : op.inputs) {
        const model::Tensor& in = graph.tensor(t);
        if (!in.dims.empty() && in.dims.size() != out.dims.size()) return false;
      }
      return out.dims.empty() || out.channels_last || out.dims.size() <= 2;
    case model::OpKind::kConcat:
      return std::get_if<model::ConcatAttrs>(&op.attrs) == nullptr ||
             std::get<model::ConcatAttrs>(op.attrs).axis < 0;
    default:
      return false;
  }
}

}  // namespace psched::scheduler
