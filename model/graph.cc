#include "model/graph.h"

#include <algorithm>

namespace psched::model {
namespace {

struct OpKindInfo {
  std::string_view name;
  bool partitionable;
};

constexpr OpKindInfo kOpKindInfo[] = {
#define PSCHED_OP(kind, name, partitionable) {name, partitionable},
#include "model/op_kinds.inc"
#undef PSCHED_OP
};

}  // namespace

std::string_view OpKindName(OpKind kind) { return kOpKindInfo[static_cast<size_t>(kind)].name; }

std::optional<OpKind> OpKindFromName(std::string_view name) {
  for (int i = 0; i < kNumOpKinds; ++i) {
    if (kOpKindInfo[i].name == name) return static_cast<OpKind>(i);
  }
  return std::nullopt;
}

bool IsPartitionable(OpKind kind) { return kOpKindInfo[static_cast<size_t>(kind)].partitionable; }

int64_t ElementsOf(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> PhysicalDims(const Tensor& t) {
  if (!t.dims.empty()) return t.dims;
  return {t.shape.h, t.shape.w, t.shape.c};
}

Shape ViewOf(const std::vector<int64_t>& dims, bool channels_last) {
  if (dims.empty()) return Shape{1, 1, 1};
  const int64_t last = dims.back();
  if (channels_last && dims.size() == 4) return Shape{dims[1], dims[2], last};
  if (channels_last && dims.size() == 3) return Shape{1, dims[1], last};
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < dims.size(); ++i) rows *= dims[i];
  return Shape{rows, 1, last};
}

int64_t Constant::Elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<TensorId> Graph::ActivationInputs(OpId id) const {
  std::vector<TensorId> result;
  for (TensorId t : op(id).inputs) {
    if (tensor(t).constant == kInvalidId) result.push_back(t);
  }
  return result;
}

std::vector<OpId> Graph::Predecessors(OpId id) const {
  std::vector<OpId> preds;
  for (TensorId t : op(id).inputs) {
    OpId p = tensor(t).producer;
    if (p != kInvalidId) preds.push_back(p);
  }
  std::sort(preds.begin(), preds.end());
  preds.erase(std::unique(preds.begin(), preds.end()), preds.end());
  return preds;
}

std::vector<std::vector<OpId>> Graph::AllSuccessors() const {
  std::vector<std::vector<OpId>> succs(ops.size());
  for (OpId i = 0; i < static_cast<OpId>(ops.size()); ++i) {
    for (OpId p : Predecessors(i)) succs[static_cast<size_t>(p)].push_back(i);
  }
  return succs;
}

}  // namespace psched::model
