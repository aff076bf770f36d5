#include "scheduler/device_capability.h"

namespace psched::scheduler {

bool DeviceRunsOp(platform::DeviceKind kind, const model::Graph& graph, model::OpId id) {
  if (kind != platform::DeviceKind::kGpu) return true;
  const model::Op& op = graph.op(id);
  // Every kernel applies any model::ActivationKind (kernels/common.cl), fused or standalone.
  const model::Tensor& out = graph.tensor(op.output);
  switch (op.kind) {
    case model::OpKind::kConv2d:
    case model::OpKind::kConvTranspose2d:
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
      // psched_fully_connected computes one row; token rows ([rows, K] x W) run on CPUs.
      return out.shape.h * out.shape.w == 1;
    case model::OpKind::kSoftmax:
      // Over the last axis: psched_softmax per pixel of an image, psched_softmax_rows per
      // row of a row-major tensor.
    case model::OpKind::kLayerNorm:
      return true;
    case model::OpKind::kAdd:
    case model::OpKind::kMul:
    case model::OpKind::kSub:
    case model::OpKind::kDiv:
      // psched_binary: numpy broadcasting over any rank up to six.
    case model::OpKind::kTranspose:
    case model::OpKind::kReshape:
    case model::OpKind::kSlice:
      // psched_strided_copy, rank up to six.
    case model::OpKind::kReduce:
      return true;
    case model::OpKind::kConcat:
      // psched_copy_channels per channel slice; along another axis psched_strided_copy.
      return true;
  }
  return false;
}

bool DeviceRunsSplit(platform::DeviceKind kind, const model::Graph& graph, model::OpId id,
                     model::SplitAxis axis) {
  if (kind != platform::DeviceKind::kGpu || axis == model::SplitAxis::kNone) {
    return DeviceRunsOp(kind, graph, id);
  }
  switch (graph.op(id).kind) {
    case model::OpKind::kConv2d:
      return true;
    case model::OpKind::kFullyConnected:
      return axis != model::SplitAxis::kRows && DeviceRunsOp(kind, graph, id);
    default:
      return false;
  }
}

}  // namespace psched::scheduler
