#include "executor/common/residual_add_fusion.h"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace psched::executor {
namespace {

// The floats a view spans, [first, last).
std::pair<const float*, const float*> Extent(const TensorView& v) {
  const int64_t pixels = v.shape.h * v.shape.w;
  return {v.data, v.data + (pixels - 1) * v.pixel_stride + v.shape.c};
}

bool Overlap(const TensorView& a, const TensorView& b) {
  const auto [a0, a1] = Extent(a);
  const auto [b0, b1] = Extent(b);
  return a0 < b1 && b0 < a1;
}

bool Same(const TensorView& a, const TensorView& b) {
  return a.data == b.data && a.shape == b.shape && a.pixel_stride == b.pixel_stride;
}

}  // namespace

std::optional<model::TensorId> FusableResidual(const model::Graph& graph, model::OpId conv,
                                               model::OpId add) {
  const model::Op& c = graph.op(conv);
  const model::Op& a = graph.op(add);
  if (c.kind != model::OpKind::kConv2d || a.kind != model::OpKind::kAdd) return std::nullopt;
  const std::vector<model::TensorId> operands = graph.ActivationInputs(add);
  if (operands.size() != 2 || operands[0] == operands[1]) return std::nullopt;
  const model::TensorId residual = operands[0] == c.output   ? operands[1]
                                   : operands[1] == c.output ? operands[0]
                                                             : model::kInvalidId;
  if (residual == model::kInvalidId) return std::nullopt;
  const model::Shape& shape = graph.tensor(c.output).shape;
  if (graph.tensor(residual).shape != shape || graph.output_shape(add) != shape) {
    return std::nullopt;
  }
  for (const model::GraphIO& io : graph.outputs) {
    if (io.tensor == c.output) return std::nullopt;
  }
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    if (id == add) continue;
    const std::vector<model::TensorId>& in = graph.op(id).inputs;
    if (std::find(in.begin(), in.end(), c.output) != in.end()) return std::nullopt;
  }
  return residual;
}

bool ViewsAllowFusedAdd(std::span<const TensorView> conv_inputs, const TensorView& conv_output,
                        const TensorView& residual, const TensorView& output) {
  for (const TensorView& in : conv_inputs) {
    if (Overlap(output, in)) return false;
  }
  for (const TensorView* operand : {&conv_output, &residual}) {
    if (Overlap(output, *operand) && !Same(output, *operand)) return false;
  }
  return true;
}

}  // namespace psched::executor
