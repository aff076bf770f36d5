#include "model/onnx_input_binding.h"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace psched::model::onnx_importer {
namespace {

using Dim = onnx::TensorShapeProto::Dimension;

// A dimension with a known size. dim_value 0 and -1 are how some exporters write "unknown".
bool IsFixed(const Dim& dim) { return dim.has_dim_value() && dim.dim_value() > 0; }

// "'T'", or "(unnamed)" for a dimension with neither a size nor a name.
std::string SymbolLabel(const Dim& dim) {
  return dim.has_dim_param() && !dim.dim_param().empty() ? absl::StrCat("'", dim.dim_param(), "'")
                                                         : "(unnamed)";
}

// "[N,3,224,224]": sizes, symbol names, '?' for unnamed symbols.
std::string DeclaredText(const onnx::TensorShapeProto& shape) {
  std::vector<std::string> parts;
  for (const Dim& dim : shape.dim()) {
    if (IsFixed(dim)) {
      parts.push_back(absl::StrCat(dim.dim_value()));
    } else {
      parts.push_back(dim.has_dim_param() && !dim.dim_param().empty() ? dim.dim_param() : "?");
    }
  }
  return absl::StrCat("[", absl::StrJoin(parts, ","), "]");
}

std::string GivenText(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

// How to bind the symbolic dimensions of `shape`, as pschedctl and the Python client take
// it: sizes where they are known (the batch bound to 1), "<T>" placeholders elsewhere.
std::string BindingHint(const std::string& name, const onnx::TensorShapeProto& shape) {
  std::vector<std::string> parts;
  for (int i = 0; i < shape.dim_size(); ++i) {
    const Dim& dim = shape.dim(i);
    if (IsFixed(dim)) {
      parts.push_back(absl::StrCat(dim.dim_value()));
    } else if (i == 0) {
      parts.push_back("1");
    } else {
      parts.push_back(absl::StrCat("<",
                                   dim.has_dim_param() && !dim.dim_param().empty()
                                       ? dim.dim_param()
                                       : absl::StrCat("dim", i),
                                   ">"));
    }
  }
  return absl::StrCat("--input-shape ", name, "=", absl::StrJoin(parts, "x"),
                      " (Python: add_model(..., input_shapes={\"", name, "\": (",
                      absl::StrJoin(parts, ", "), ")}))");
}

void SetDims(const std::vector<int64_t>& dims, onnx::TensorShapeProto* shape) {
  shape->clear_dim();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
}

absl::Status BindGiven(const std::string& name, const std::vector<int64_t>& given,
                       onnx::TypeProto::Tensor* tensor_type) {
  for (size_t i = 0; i < given.size(); ++i) {
    if (given[i] < 1) {
      return absl::InvalidArgumentError(absl::StrCat("input shape given for '", name, "' ",
                                                     GivenText(given), " has dim ", i, " = ",
                                                     given[i], "; dims are sizes >= 1"));
    }
  }
  if (!tensor_type->has_shape()) {  // nothing declared: the given shape is the shape
    SetDims(given, tensor_type->mutable_shape());
    return absl::OkStatus();
  }
  const onnx::TensorShapeProto& declared = tensor_type->shape();
  if (static_cast<size_t>(declared.dim_size()) != given.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input shape given for '", name, "' ", GivenText(given), " has rank ",
                     given.size(), ", but graph input '", name, "' has rank ", declared.dim_size(),
                     " ", DeclaredText(declared)));
  }
  for (int i = 0; i < declared.dim_size(); ++i) {
    const Dim& dim = declared.dim(i);
    if (IsFixed(dim) && dim.dim_value() != given[static_cast<size_t>(i)]) {
      return absl::InvalidArgumentError(
          absl::StrCat("input shape given for '", name, "' ", GivenText(given), " sets dim ", i,
                       " to ", given[static_cast<size_t>(i)], ", but graph input '", name, "' ",
                       DeclaredText(declared), " fixes it at ", dim.dim_value()));
    }
  }
  SetDims(given, tensor_type->mutable_shape());
  return absl::OkStatus();
}

absl::Status BindDeclared(const std::string& name, onnx::TypeProto::Tensor* tensor_type) {
  if (!tensor_type->has_shape()) return absl::OkStatus();  // ReadInputs reports it
  onnx::TensorShapeProto* shape = tensor_type->mutable_shape();
  for (int i = 0; i < shape->dim_size(); ++i) {
    if (IsFixed(shape->dim(i))) continue;
    if (i == 0) continue;  // the batch: bound below, once the rest is known to be static
    return absl::InvalidArgumentError(absl::StrCat(
        "graph input '", name, "' dimension ", i, " ", SymbolLabel(shape->dim(i)), " of ",
        DeclaredText(*shape), " is dynamic (symbolic); bind it with ", BindingHint(name, *shape)));
  }
  if (shape->dim_size() > 0 && !IsFixed(shape->dim(0))) {
    Dim* batch = shape->mutable_dim(0);
    batch->Clear();
    batch->set_dim_value(1);
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status BindInputShapes(const InputShapes& given, onnx::GraphProto* graph) {
  std::unordered_set<std::string> initializers;
  for (const onnx::TensorProto& t : graph->initializer()) initializers.insert(t.name());
  std::vector<std::string> input_names;
  for (const onnx::ValueInfoProto& input : graph->input()) {
    if (!initializers.contains(input.name())) input_names.push_back(input.name());
  }
  for (const auto& [name, dims] : given) {
    if (std::find(input_names.begin(), input_names.end(), name) == input_names.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input shape given for '", name,
                       "', but the model has no graph input of that name (its inputs: ",
                       input_names.empty() ? "none" : absl::StrJoin(input_names, ", "), ")"));
    }
  }
  for (onnx::ValueInfoProto& input : *graph->mutable_input()) {
    // An initializer listed as an input (IR < 4) is a weight, and non-tensors are
    // ReadInputs' to report.
    if (initializers.contains(input.name()) || !input.type().has_tensor_type()) continue;
    onnx::TypeProto::Tensor* tensor_type = input.mutable_type()->mutable_tensor_type();
    auto it = given.find(input.name());
    absl::Status bound = it != given.end() ? BindGiven(input.name(), it->second, tensor_type)
                                           : BindDeclared(input.name(), tensor_type);
    if (!bound.ok()) return bound;
  }
  return absl::OkStatus();
}

}  // namespace psched::model::onnx_importer
