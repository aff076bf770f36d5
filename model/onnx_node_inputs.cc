#include <cmath>

#include "model/onnx_importer.h"

namespace psched::model::onnx_importer {

std::string NodeLabel(const NodeProto& node) {
  std::string name = node.name();
  if (name.empty() && node.output_size() > 0) name = node.output(0);
  return absl::StrCat("node '", name, "' (", node.op_type(), ")");
}

const AttributeProto* Importer::FindAttr(const NodeProto& node, absl::string_view name) const {
  for (const AttributeProto& attr : node.attribute()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

absl::StatusOr<int64_t> Importer::AttrInt(const NodeProto& node, absl::string_view name,
                                          int64_t fallback) const {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return fallback;
  if (attr->type() != AttributeProto::INT) {
    return NodeError(node, absl::StrCat("attribute '", name, "' must be an int"));
  }
  return attr->i();
}

absl::StatusOr<float> Importer::AttrFloat(const NodeProto& node, absl::string_view name,
                                          float fallback) const {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return fallback;
  if (attr->type() != AttributeProto::FLOAT) {
    return NodeError(node, absl::StrCat("attribute '", name, "' must be a float"));
  }
  if (!std::isfinite(attr->f())) {
    return NodeError(node, absl::StrCat("attribute '", name, "' is not finite"));
  }
  return attr->f();
}

absl::StatusOr<std::string> Importer::AttrString(const NodeProto& node, absl::string_view name,
                                                 std::string fallback) const {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return fallback;
  if (attr->type() != AttributeProto::STRING) {
    return NodeError(node, absl::StrCat("attribute '", name, "' must be a string"));
  }
  return attr->s();
}

absl::StatusOr<std::vector<int64_t>> Importer::AttrInts(const NodeProto& node,
                                                        absl::string_view name,
                                                        std::vector<int64_t> fallback) const {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return fallback;
  if (attr->type() != AttributeProto::INTS) {
    return NodeError(node, absl::StrCat("attribute '", name, "' must be a list of ints"));
  }
  return std::vector<int64_t>(attr->ints().begin(), attr->ints().end());
}

absl::StatusOr<std::vector<float>> Importer::AttrFloats(const NodeProto& node,
                                                        absl::string_view name) const {
  const AttributeProto* attr = FindAttr(node, name);
  if (attr == nullptr) return std::vector<float>{};
  if (attr->type() != AttributeProto::FLOATS) {
    return NodeError(node, absl::StrCat("attribute '", name, "' must be a list of floats"));
  }
  return std::vector<float>(attr->floats().begin(), attr->floats().end());
}

absl::StatusOr<const Value*> Importer::InputValue(const NodeProto& node, int index) const {
  if (!HasInput(node, index)) {
    return NodeError(node, absl::StrCat("required input ", index, " is missing"));
  }
  auto it = values_.find(node.input(index));
  if (it == values_.end()) {
    return NodeError(node, absl::StrCat("input '", node.input(index), "' is not defined"));
  }
  return &it->second;
}

absl::StatusOr<const Value*> Importer::ActivationInput(const NodeProto& node, int index) const {
  auto value = InputValue(node, index);
  if (!value.ok()) return value.status();
  if ((*value)->is_constant()) {
    return Unsupported(node, absl::StrCat("input ", index, " ('", node.input(index),
                                          "') is a constant; psched expects a computed tensor"));
  }
  return value;
}

absl::StatusOr<ConstPtr> Importer::ConstantInput(const NodeProto& node, int index,
                                                 bool need_data) const {
  auto value = InputValue(node, index);
  if (!value.ok()) return value.status();
  if (!(*value)->is_constant()) {
    return Unsupported(node, absl::StrCat("input ", index, " ('", node.input(index),
                                          "') must be a constant (initializer or constant "
                                          "sub-graph), not a computed tensor"));
  }
  if (need_data && !(*value)->constant->has_data) {
    return NodeError(node, absl::StrCat("input ", index, " ('", node.input(index),
                                        "') is needed to compute shapes but its data is "
                                        "absent (external data?)"));
  }
  return (*value)->constant;
}

absl::StatusOr<std::vector<int64_t>> Importer::Axes(const NodeProto& node,
                                                    bool as_input) const {
  if (!as_input) return AttrInts(node, "axes", {});
  if (!HasInput(node, 1)) return std::vector<int64_t>{};
  auto axes = ConstantInput(node, 1, true);
  if (!axes.ok()) return axes.status();
  if (!(*axes)->IsInteger()) return NodeError(node, "axes must be integers");
  return (*axes)->ints;
}

absl::Status Importer::CheckOutputs(const NodeProto& node, int max_used) const {
  if (node.output_size() == 0 || node.output(0).empty()) {
    return NodeError(node, "has no output");
  }
  for (int i = max_used; i < node.output_size(); ++i) {
    if (!node.output(i).empty()) {
      for (const NodeProto& other : model_.graph().node()) {
        for (const std::string& in : other.input()) {
          if (in == node.output(i)) {
            return Unsupported(node, absl::StrCat("optional output ", i, " ('", node.output(i),
                                                  "') is used; psched computes only output 0"));
          }
        }
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Importer::CheckDims(absl::string_view what, const std::vector<int64_t>& dims) const {
  int64_t elements = 1;
  for (int64_t d : dims) {
    if (d <= 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(what, " has a non-positive dimension in ", DimsString(dims)));
    }
    if (d > options_.max_dim) {
      return absl::ResourceExhaustedError(
          absl::StrCat(what, " has dimension ", d, ", more than max_dim (", options_.max_dim, ")"));
    }
    if (elements > options_.max_tensor_elements / d) {
      return absl::ResourceExhaustedError(absl::StrCat(what, " ", DimsString(dims),
                                                       " has more than max_tensor_elements (",
                                                       options_.max_tensor_elements, ") elements"));
    }
    elements *= d;
  }
  return absl::OkStatus();
}

}  // namespace psched::model::onnx_importer
