// A JSON summary of a canonical graph, as printed by `pschedctl model inspect`.
//
// Keys: "name", "ops" (count), "op_counts" (every canonical kind, zeros included, keyed by
// its op_kinds.inc name), "fused_activations", "flops" and "params" (op_cost.h), "tensors",
// "constants", "inputs" and "outputs" (each {"name", "dims"} with the declared ONNX dims),
// "has_weights". Pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "model/graph.h"

namespace psched::model {

nlohmann::json InspectJson(const Graph& graph);

}  // namespace psched::model
