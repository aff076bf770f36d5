#include "model/concat_in_place.h"

#include <algorithm>
#include <numeric>

namespace psched::model {

bool SupportsStridedInput(OpKind kind) {
  switch (kind) {
    case OpKind::kConv2d:
    case OpKind::kConvTranspose2d:
    case OpKind::kFullyConnected:
    case OpKind::kMaxPool:
    case OpKind::kAvgPool:
    case OpKind::kGlobalAvgPool:
    case OpKind::kConcat:
    case OpKind::kPad:
    case OpKind::kResize:
    case OpKind::kFlatten:
    case OpKind::kActivation:
    case OpKind::kSoftmax:
      return true;
    default:
      return false;
  }
}

bool SupportsStridedOutput(OpKind kind) {
  return kind != OpKind::kFlatten && SupportsStridedInput(kind);
}

// A concat the aliasing rule may lay out in place: along the last axis, of computed tensors.
bool IsChannelConcat(const Op& op) {
  const auto* attrs = std::get_if<ConcatAttrs>(&op.attrs);
  return attrs == nullptr || attrs->axis == -1;
}

ConcatAliasing AliasConcatInputs(const Graph& graph) {
  const size_t n = graph.tensors.size();
  const auto num_ops = static_cast<OpId>(graph.ops.size());
  std::vector<std::vector<OpId>> consumers(n);
  for (OpId id = 0; id < num_ops; ++id) {
    for (TensorId t : graph.op(id).inputs) consumers[static_cast<size_t>(t)].push_back(id);
  }
  std::vector<bool> is_graph_input(n, false);
  for (const GraphIO& io : graph.inputs) is_graph_input[static_cast<size_t>(io.tensor)] = true;

  ConcatAliasing a;
  a.root.resize(n);
  std::iota(a.root.begin(), a.root.end(), 0);
  a.channel_offset.assign(n, 0);
  // Outermost concat first, so the root a concat output passes on to its inputs is final.
  for (OpId id = num_ops - 1; id >= 0; --id) {
    const Op& op = graph.op(id);
    if (op.kind != OpKind::kConcat || !IsChannelConcat(op)) continue;
    const auto out = static_cast<size_t>(op.output);
    int64_t offset = 0;
    for (TensorId t : op.inputs) {
      const auto ti = static_cast<size_t>(t);
      const Tensor& tensor = graph.tensor(t);
      const int64_t this_offset = offset;
      offset += tensor.shape.c;
      if (is_graph_input[ti] || tensor.producer == kInvalidId || a.root[ti] != t) continue;
      if (!SupportsStridedOutput(graph.op(tensor.producer).kind)) continue;
      const std::vector<OpId>& users = consumers[ti];
      if (std::count(users.begin(), users.end(), id) != 1) continue;
      const bool others_strided = std::all_of(users.begin(), users.end(), [&](OpId u) {
        return u == id || SupportsStridedInput(graph.op(u).kind);
      });
      if (!others_strided) continue;
      a.root[ti] = a.root[out];
      a.channel_offset[ti] = a.channel_offset[out] + this_offset;
      ++a.in_place_inputs;
    }
  }
  return a;
}

int64_t OutputPixelStride(const Graph& graph, const ConcatAliasing& aliasing, OpId id) {
  const TensorId out = graph.op(id).output;
  const int64_t root_channels = graph.tensor(aliasing.root[static_cast<size_t>(out)]).shape.c;
  return root_channels == graph.tensor(out).shape.c ? 0 : root_channels;
}

}  // namespace psched::model
