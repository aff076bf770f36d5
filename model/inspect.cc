#include "model/inspect.h"

#include "model/op_cost.h"

namespace psched::model {
namespace {

nlohmann::json IoJson(const std::vector<GraphIO>& ios) {
  nlohmann::json list = nlohmann::json::array();
  for (const GraphIO& io : ios) list.push_back({{"name", io.name}, {"dims", io.onnx_dims}});
  return list;
}

}  // namespace

nlohmann::json InspectJson(const Graph& graph) {
  nlohmann::json op_counts = nlohmann::json::object();
  for (int k = 0; k < kNumOpKinds; ++k) {
    op_counts[std::string(OpKindName(static_cast<OpKind>(k)))] = 0;
  }
  int64_t fused = 0;
  for (const Op& op : graph.ops) {
    auto& count = op_counts[std::string(OpKindName(op.kind))];
    count = count.get<int64_t>() + 1;
    if (op.kind != OpKind::kActivation && op.activation.kind != ActivationKind::kNone) ++fused;
  }
  return {
      {"name", graph.name},
      {"ops", graph.ops.size()},
      {"op_counts", std::move(op_counts)},
      {"fused_activations", fused},
      {"flops", GraphFlops(graph)},
      {"params", GraphParams(graph)},
      {"tensors", graph.tensors.size()},
      {"constants", graph.constants.size()},
      {"inputs", IoJson(graph.inputs)},
      {"outputs", IoJson(graph.outputs)},
      {"has_weights", graph.has_weights},
  };
}

}  // namespace psched::model
