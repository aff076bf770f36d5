// Where with a constant condition and computed operands: masked_fill in attention (scores
// where the mask is false, a large negative constant where it is true). It is lowered to
// arithmetic the runtime already has: x * keep_x + y * keep_y, with 0/1 constants of the
// output's shape, and a constant operand folded into the additive term.
#include <utility>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {

absl::Status Importer::ConvertWhere(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  std::vector<const Value*> in;
  for (int i = 0; i < 3; ++i) {
    auto v = InputValue(node, i);
    if (!v.ok()) return v.status();
    in.push_back(*v);
  }
  if (!in[0]->is_constant() || !in[0]->constant->has_data) {
    return Unsupported(node, "Where is supported with a constant condition (a mask)");
  }
  auto dims = [](const Value* v) { return v->is_constant() ? v->constant->dims : v->onnx_dims; };
  std::vector<int64_t> out = dims(in[0]);
  for (int i = 1; i < 3; ++i) {
    std::vector<int64_t> next;
    if (!Broadcast(out, dims(in[static_cast<size_t>(i)]), &next)) {
      return NodeError(node, absl::StrCat("inconsistent shapes: ", DimsString(dims(in[0])), ", ",
                                          DimsString(dims(in[1])), " and ", DimsString(dims(in[2])),
                                          " do not broadcast"));
    }
    out = std::move(next);
  }
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", out); !s.ok()) return s;
  for (int i = 1; i < 3; ++i) {
    const Value* v = in[static_cast<size_t>(i)];
    if (v->is_constant() && (!v->constant->IsFloat() || !v->constant->has_data)) {
      return NodeError(node, "constant operands of Where must be float32 with data");
    }
  }
  // keep[i] selects operand i (1 = x where the condition holds, 2 = y elsewhere); the
  // additive term collects the constant operands at the positions they are selected.
  const int64_t n = ElementsOf(out);
  ConstValue keep[3], add;
  for (ConstValue* c : {&keep[1], &keep[2], &add}) {
    c->dtype = TensorProto::FLOAT;
    c->has_data = true;
    c->dims = out;
    c->floats.assign(static_cast<size_t>(n), 0.0f);
  }
  keep[1].name = node.output(0) + "/keep_x";
  keep[2].name = node.output(0) + "/keep_y";
  add.name = node.output(0) + "/fill";
  std::vector<int64_t> index(out.size(), 0);
  auto at = [&](const std::vector<int64_t>& d) {  // broadcast flat index into d
    int64_t flat = 0;
    for (size_t a = 0; a < d.size(); ++a) {
      const int64_t i = index[out.size() - d.size() + a];
      flat = flat * d[a] + (d[a] == 1 ? 0 : i);
    }
    return flat;
  };
  for (int64_t f = 0; f < n; ++f) {
    const bool cond = in[0]->constant->At(at(in[0]->constant->dims)) != 0;
    const int pick = cond ? 1 : 2;
    const Value* v = in[static_cast<size_t>(pick)];
    if (v->is_constant()) {
      add.floats[static_cast<size_t>(f)] =
          static_cast<float>(v->constant->At(at(v->constant->dims)));
    } else {
      keep[pick].floats[static_cast<size_t>(f)] = 1.0f;
    }
    for (size_t a = out.size(); a-- > 0;) {
      if (++index[a] < out[a]) break;
      index[a] = 0;
    }
  }
  TensorId sum = kInvalidId;
  for (int i = 1; i < 3; ++i) {
    const Value* v = in[static_cast<size_t>(i)];
    if (v->is_constant()) continue;
    auto rm = AsRowMajor(node, *v);
    if (!rm.ok()) return rm.status();
    auto masked = AddStep(node, i == 1 ? "masked_x" : "masked_y", OpKind::kMul,
                          {rm->tensor, RowMajorConstant(keep[i], out.size())}, out);
    if (!masked.ok()) return masked.status();
    if (sum == kInvalidId) {
      sum = masked->tensor;
    } else {
      auto both = AddStep(node, "selected", OpKind::kAdd, {sum, masked->tensor}, out);
      if (!both.ok()) return both.status();
      sum = both->tensor;
    }
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kAdd, {sum, RowMajorConstant(add, out.size())},
               out, {}, false)
      .status();
}

}  // namespace psched::model::onnx_importer
