#include "model/onnx_import.h"

#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <memory>
#include <queue>
#include <sstream>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "model/canonicalize.h"
#include "model/synthetic_weights.h"

namespace psched::model {
namespace {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 17;

std::string DimsString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ","), "]");
}

std::string DtypeName(int32_t dtype) {
  return absl::StrCat(TensorProto::DataType_IsValid(dtype)
                          ? TensorProto::DataType_Name(static_cast<TensorProto::DataType>(dtype))
                          : std::string("unknown"),
                      " (", dtype, ")");
}

std::string NodeLabel(const NodeProto& node) {
  std::string name = node.name();
  if (name.empty() && node.output_size() > 0) name = node.output(0);
  return absl::StrCat("node '", name, "' (", node.op_type(), ")");
}

// A constant value: an initializer, a Constant node's output or a folded shape computation.
struct ConstValue {
  std::string name;
  std::vector<int64_t> dims;
  int32_t dtype = TensorProto::UNDEFINED;
  bool has_data = false;
  std::vector<float> floats;   // dtype FLOAT (or DOUBLE converted)
  std::vector<int64_t> ints;   // integer dtypes
  int64_t Elements() const {
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    return n;
  }
  bool IsFloat() const { return dtype == TensorProto::FLOAT || dtype == TensorProto::DOUBLE; }
  bool IsInteger() const {
    return dtype == TensorProto::INT64 || dtype == TensorProto::INT32 ||
           dtype == TensorProto::INT8 || dtype == TensorProto::UINT8 ||
           dtype == TensorProto::INT16 || dtype == TensorProto::BOOL;
  }
  double At(int64_t i) const {
    return IsFloat() ? floats[static_cast<size_t>(i)] : static_cast<double>(ints[static_cast<size_t>(i)]);
  }
};
using ConstPtr = std::shared_ptr<const ConstValue>;

// What an ONNX value name stands for while the graph is read.
struct Value {
  TensorId tensor = kInvalidId;  // an activation tensor ...
  std::vector<int64_t> onnx_dims;
  ConstPtr constant;  // ... or a constant
  bool is_constant() const { return constant != nullptr; }
};

class Importer {
 public:
  explicit Importer(const ImportOptions& options) : options_(options) {}

  absl::StatusOr<RawGraph> Run(std::string_view bytes);

 private:
  using Handler = absl::Status (Importer::*)(const NodeProto&);

  absl::Status CheckHeader();
  absl::Status ReadInitializers();
  absl::Status ReadInputs();
  absl::Status SortNodes(std::vector<const NodeProto*>* order);
  absl::Status ReadOutputs();
  absl::Status CrossCheckShapes();

  // Operator handlers.
  absl::Status ConvertConv(const NodeProto& node);
  absl::Status ConvertGemm(const NodeProto& node);
  absl::Status ConvertMatMul(const NodeProto& node);
  absl::Status ConvertBatchNorm(const NodeProto& node);
  absl::Status ConvertActivation(const NodeProto& node);
  absl::Status ConvertPool(const NodeProto& node);
  absl::Status ConvertGlobalAvgPool(const NodeProto& node);
  absl::Status ConvertElementwise(const NodeProto& node);
  absl::Status ConvertDiv(const NodeProto& node);
  absl::Status ConvertConcat(const NodeProto& node);
  absl::Status ConvertPad(const NodeProto& node);
  absl::Status ConvertResize(const NodeProto& node);
  absl::Status ConvertReshape(const NodeProto& node);
  absl::Status ConvertFlatten(const NodeProto& node);
  absl::Status ConvertSqueeze(const NodeProto& node);
  absl::Status ConvertSoftmax(const NodeProto& node);
  absl::Status ConvertIdentity(const NodeProto& node);
  absl::Status ConvertShape(const NodeProto& node);
  absl::Status ConvertGather(const NodeProto& node);
  absl::Status ConvertConstant(const NodeProto& node);
  absl::Status ConvertCast(const NodeProto& node);
  absl::Status ConvertConstantOfShape(const NodeProto& node);
  absl::Status ConvertSlice(const NodeProto& node);
  absl::Status ConvertTranspose(const NodeProto& node);

  // Errors.
  absl::Status NodeError(const NodeProto& node, absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(NodeLabel(node), ": ", message));
  }
  absl::Status Unsupported(const NodeProto& node, absl::string_view message) const {
    return absl::UnimplementedError(absl::StrCat(NodeLabel(node), ": ", message));
  }

  // Attributes.
  const AttributeProto* FindAttr(const NodeProto& node, absl::string_view name) const;
  absl::StatusOr<int64_t> AttrInt(const NodeProto& node, absl::string_view name, int64_t fallback) const;
  absl::StatusOr<float> AttrFloat(const NodeProto& node, absl::string_view name, float fallback) const;
  absl::StatusOr<std::string> AttrString(const NodeProto& node, absl::string_view name,
                                         std::string fallback) const;
  absl::StatusOr<std::vector<int64_t>> AttrInts(const NodeProto& node, absl::string_view name,
                                                std::vector<int64_t> fallback) const;
  absl::StatusOr<std::vector<float>> AttrFloats(const NodeProto& node, absl::string_view name) const;

  // Inputs and outputs.
  bool HasInput(const NodeProto& node, int index) const {
    return index < node.input_size() && !node.input(index).empty();
  }
  absl::StatusOr<const Value*> InputValue(const NodeProto& node, int index) const;
  absl::StatusOr<const Value*> ActivationInput(const NodeProto& node, int index) const;
  absl::StatusOr<ConstPtr> ConstantInput(const NodeProto& node, int index, bool need_data) const;
  absl::Status CheckOutputs(const NodeProto& node, int max_used) const;

  // Shapes and limits.
  absl::Status CheckDims(absl::string_view what, const std::vector<int64_t>& dims) const;
  absl::StatusOr<Shape> ActivationShape(const NodeProto& node, const std::vector<int64_t>& dims) const;

  // Graph building.
  absl::StatusOr<TensorId> DefineActivation(const NodeProto& node, int output_index,
                                            std::vector<int64_t> onnx_dims);
  absl::Status DefineConstant(const NodeProto& node, int output_index, ConstValue value);
  absl::StatusOr<TensorId> AddOp(const NodeProto& node, RawOpKind raw_kind, OpKind kind,
                                 std::vector<TensorId> inputs, std::vector<int64_t> out_dims,
                                 OpAttrs attrs = {});
  ConstantId AddConstant(const std::string& key, std::string name, std::vector<int64_t> dims,
                         bool has_data, const std::function<std::vector<float>()>& data);
  ConstantId FilterConstant(const ConstValue& w);
  ConstantId VectorConstant(const ConstValue& v, int64_t length);
  TensorId ConstantOperand(const ConstValue& c, const std::vector<int64_t>& act_dims);
  absl::Status ReshapeTo(const NodeProto& node, const Value& input, std::vector<int64_t> target);
  absl::Status ResolveWindow(const NodeProto& node, const std::vector<int64_t>& in_dims,
                             int64_t kernel_h, int64_t kernel_w, bool allow_ceil,
                             Window2d* window, std::vector<int64_t>* out_hw,
                             int32_t* declared_pad_bottom, int32_t* declared_pad_right);

  const ImportOptions& options_;
  onnx::ModelProto model_;
  int64_t opset_ = 0;
  RawGraph graph_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, const NodeProto*> producer_node_;
  std::unordered_map<std::string, ConstantId> constant_cache_;
  bool weights_missing_ = false;
};

// ---------------------------------------------------------------------------------------
// Tensor data.

absl::StatusOr<ConstValue> ReadTensorProto(const TensorProto& t, const ImportOptions& options,
                                           absl::string_view where) {
  ConstValue v;
  v.name = t.name();
  v.dtype = t.data_type();
  int64_t elements = 1;
  for (int64_t d : t.dims()) {
    if (d < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": tensor '", t.name(), "' has a negative dimension ", d));
    }
    if (d > options.max_tensor_elements || (d > 0 && elements > options.max_tensor_elements / d)) {
      return absl::ResourceExhaustedError(absl::StrCat(
          where, ": tensor '", t.name(), "' has more than max_tensor_elements (",
          options.max_tensor_elements, ") elements"));
    }
    elements *= d;
    v.dims.push_back(d);
  }
  if (t.data_location() == TensorProto::EXTERNAL) {
    v.has_data = false;
    return v;
  }
  const auto n = static_cast<size_t>(elements);
  auto size_error = [&](size_t got) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": tensor '", t.name(), "' with dims ",
                                                   DimsString(v.dims), " holds ", got,
                                                   " values, expected ", n));
  };
  const std::string& raw = t.raw_data();
  switch (t.data_type()) {
    case TensorProto::FLOAT:
      if (!raw.empty()) {
        if (raw.size() != n * 4) return size_error(raw.size() / 4);
        v.floats.resize(n);
        std::memcpy(v.floats.data(), raw.data(), raw.size());
      } else {
        if (static_cast<size_t>(t.float_data_size()) != n) return size_error(t.float_data_size());
        v.floats.assign(t.float_data().begin(), t.float_data().end());
      }
      break;
    case TensorProto::DOUBLE:
      if (!raw.empty()) {
        if (raw.size() != n * 8) return size_error(raw.size() / 8);
        v.floats.resize(n);
        for (size_t i = 0; i < n; ++i) {
          double d;
          std::memcpy(&d, raw.data() + 8 * i, 8);
          v.floats[i] = static_cast<float>(d);
        }
      } else {
        if (static_cast<size_t>(t.double_data_size()) != n) return size_error(t.double_data_size());
        v.floats.assign(t.double_data().begin(), t.double_data().end());
      }
      break;
    case TensorProto::INT64:
      if (!raw.empty()) {
        if (raw.size() != n * 8) return size_error(raw.size() / 8);
        v.ints.resize(n);
        std::memcpy(v.ints.data(), raw.data(), raw.size());
      } else {
        if (static_cast<size_t>(t.int64_data_size()) != n) return size_error(t.int64_data_size());
        v.ints.assign(t.int64_data().begin(), t.int64_data().end());
      }
      break;
    case TensorProto::INT32:
      if (!raw.empty()) {
        if (raw.size() != n * 4) return size_error(raw.size() / 4);
        v.ints.resize(n);
        for (size_t i = 0; i < n; ++i) {
          int32_t x;
          std::memcpy(&x, raw.data() + 4 * i, 4);
          v.ints[i] = x;
        }
      } else {
        if (static_cast<size_t>(t.int32_data_size()) != n) return size_error(t.int32_data_size());
        v.ints.assign(t.int32_data().begin(), t.int32_data().end());
      }
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": tensor '", t.name(), "' has unsupported data type ",
                       DtypeName(t.data_type()),
                       "; psched reads float32 weights and int64 shapes"));
  }
  v.has_data = true;
  return v;
}

// ---------------------------------------------------------------------------------------
// Top level.

absl::StatusOr<RawGraph> Importer::Run(std::string_view bytes) {
  if (static_cast<int64_t>(bytes.size()) > options_.max_model_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("ONNX model is ", bytes.size(),
                                                     " bytes, more than max_model_bytes (",
                                                     options_.max_model_bytes, ")"));
  }
  if (bytes.empty()) return absl::InvalidArgumentError("ONNX model is empty (0 bytes)");
  if (!model_.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(absl::StrCat(
        "not a valid ONNX model: protobuf parsing failed on ", bytes.size(),
        " bytes (truncated or not an ONNX file?)"));
  }
  if (absl::Status s = CheckHeader(); !s.ok()) return s;
  graph_.name = model_.graph().name();
  if (absl::Status s = ReadInitializers(); !s.ok()) return s;
  if (absl::Status s = ReadInputs(); !s.ok()) return s;
  std::vector<const NodeProto*> order;
  if (absl::Status s = SortNodes(&order); !s.ok()) return s;

  static const std::unordered_map<std::string_view, Handler> kHandlers = {
      {"Conv", &Importer::ConvertConv},
      {"Gemm", &Importer::ConvertGemm},
      {"MatMul", &Importer::ConvertMatMul},
      {"BatchNormalization", &Importer::ConvertBatchNorm},
      {"Relu", &Importer::ConvertActivation},
      {"Clip", &Importer::ConvertActivation},
      {"Sigmoid", &Importer::ConvertActivation},
      {"HardSigmoid", &Importer::ConvertActivation},
      {"HardSwish", &Importer::ConvertActivation},
      {"MaxPool", &Importer::ConvertPool},
      {"AveragePool", &Importer::ConvertPool},
      {"GlobalAveragePool", &Importer::ConvertGlobalAvgPool},
      {"Add", &Importer::ConvertElementwise},
      {"Mul", &Importer::ConvertElementwise},
      {"Sub", &Importer::ConvertElementwise},
      {"Div", &Importer::ConvertDiv},
      {"Concat", &Importer::ConvertConcat},
      {"Pad", &Importer::ConvertPad},
      {"Resize", &Importer::ConvertResize},
      {"Upsample", &Importer::ConvertResize},
      {"Reshape", &Importer::ConvertReshape},
      {"Flatten", &Importer::ConvertFlatten},
      {"Squeeze", &Importer::ConvertSqueeze},
      {"Unsqueeze", &Importer::ConvertSqueeze},
      {"Softmax", &Importer::ConvertSoftmax},
      {"Identity", &Importer::ConvertIdentity},
      {"Dropout", &Importer::ConvertIdentity},
      {"Shape", &Importer::ConvertShape},
      {"Gather", &Importer::ConvertGather},
      {"Constant", &Importer::ConvertConstant},
      {"Cast", &Importer::ConvertCast},
      {"ConstantOfShape", &Importer::ConvertConstantOfShape},
      {"Slice", &Importer::ConvertSlice},
      {"Transpose", &Importer::ConvertTranspose},
  };
  for (const NodeProto* node : order) {
    auto it = kHandlers.find(node->op_type());
    if (it == kHandlers.end()) {
      return Unsupported(*node, absl::StrCat("unsupported operator '", node->op_type(),
                                             "'; see docs/model-import.md for the supported list"));
    }
    if (absl::Status s = (this->*(it->second))(*node); !s.ok()) return s;
  }
  if (absl::Status s = ReadOutputs(); !s.ok()) return s;
  if (absl::Status s = CrossCheckShapes(); !s.ok()) return s;
  graph_.has_weights = !weights_missing_;
  return std::move(graph_);
}

absl::Status Importer::CheckHeader() {
  if (!model_.has_graph()) return absl::InvalidArgumentError("ONNX model has no graph");
  if (model_.graph().node_size() > options_.max_ops) {
    return absl::ResourceExhaustedError(absl::StrCat("ONNX graph has ", model_.graph().node_size(),
                                                     " nodes, more than max_ops (",
                                                     options_.max_ops, ")"));
  }
  for (const auto& opset : model_.opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") opset_ = opset.version();
  }
  if (opset_ == 0) {
    return absl::InvalidArgumentError("ONNX model imports no default-domain opset (opset_import)");
  }
  if (opset_ < kMinOpset || opset_ > kMaxOpset) {
    return absl::UnimplementedError(absl::StrCat("ONNX opset ", opset_,
                                                 " is not supported (psched reads opsets ",
                                                 kMinOpset, " to ", kMaxOpset, ")"));
  }
  for (const NodeProto& node : model_.graph().node()) {
    if (!node.domain().empty() && node.domain() != "ai.onnx") {
      return Unsupported(node, absl::StrCat("operator domain '", node.domain(),
                                            "' is not supported (only the default ONNX domain)"));
    }
  }
  return absl::OkStatus();
}

absl::Status Importer::ReadInitializers() {
  for (const TensorProto& t : model_.graph().initializer()) {
    if (t.name().empty()) return absl::InvalidArgumentError("ONNX graph has an unnamed initializer");
    auto value = ReadTensorProto(t, options_, "initializer");
    if (!value.ok()) return value.status();
    Value v;
    v.constant = std::make_shared<const ConstValue>(*std::move(value));
    values_[t.name()] = std::move(v);
  }
  return absl::OkStatus();
}

absl::Status Importer::ReadInputs() {
  for (const auto& input : model_.graph().input()) {
    if (values_.count(input.name()) > 0) continue;  // an initializer listed as input (IR < 4)
    const std::string where = absl::StrCat("graph input '", input.name(), "'");
    if (!input.type().has_tensor_type()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is not a tensor"));
    }
    const auto& tensor_type = input.type().tensor_type();
    if (tensor_type.elem_type() != TensorProto::FLOAT) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has element type ",
                                                     DtypeName(tensor_type.elem_type()),
                                                     "; psched runs float32 (type 1) models"));
    }
    if (!tensor_type.has_shape()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has no declared shape"));
    }
    std::vector<int64_t> dims;
    for (int i = 0; i < tensor_type.shape().dim_size(); ++i) {
      const auto& dim = tensor_type.shape().dim(i);
      if (!dim.has_dim_value()) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " has a dynamic or unknown dimension ", i,
            dim.has_dim_param() ? absl::StrCat(" ('", dim.dim_param(), "')") : std::string(),
            "; psched needs static shapes (export with fixed input size)"));
      }
      dims.push_back(dim.dim_value());
    }
    if (absl::Status s = CheckDims(where, dims); !s.ok()) return s;
    if (dims.size() != 4 && dims.size() != 2) {
      return absl::UnimplementedError(absl::StrCat(where, " has rank ", dims.size(), " ",
                                                   DimsString(dims),
                                                   "; psched reads [1,C,H,W] or [1,K] inputs"));
    }
    if (dims[0] != 1) {
      return absl::UnimplementedError(absl::StrCat(where, " has batch size ", dims[0], " ",
                                                   DimsString(dims), "; psched runs batch 1"));
    }
    Tensor tensor;
    tensor.name = input.name();
    tensor.shape = dims.size() == 4 ? Shape{dims[2], dims[3], dims[1]} : Shape{1, 1, dims[1]};
    tensor.onnx_rank = static_cast<int32_t>(dims.size());
    const auto id = static_cast<TensorId>(graph_.tensors.size());
    graph_.tensors.push_back(std::move(tensor));
    graph_.inputs.push_back(GraphIO{id, input.name(), dims});
    Value v;
    v.tensor = id;
    v.onnx_dims = std::move(dims);
    values_[input.name()] = std::move(v);
  }
  if (graph_.inputs.empty()) return absl::InvalidArgumentError("ONNX graph has no (non-initializer) input");
  return absl::OkStatus();
}

absl::Status Importer::SortNodes(std::vector<const NodeProto*>* order) {
  const auto& nodes = model_.graph().node();
  const int n = nodes.size();
  std::unordered_map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : nodes[i].output()) {
      if (out.empty()) continue;
      if (values_.count(out) > 0 || !producer.emplace(out, i).second) {
        return NodeError(nodes[i], absl::StrCat("output '", out,
                                                "' is already defined elsewhere (ONNX values "
                                                "must have exactly one producer)"));
      }
      producer_node_[out] = &nodes[i];
    }
  }
  std::vector<int> pending(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> consumers(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    for (const AttributeProto& attr : nodes[i].attribute()) {
      if (attr.has_g() || attr.graphs_size() > 0) {
        return Unsupported(nodes[i], "sub-graph attributes (control flow) are not supported");
      }
    }
    for (const std::string& in : nodes[i].input()) {
      if (in.empty() || values_.count(in) > 0) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        return NodeError(nodes[i], absl::StrCat("input '", in,
                                                "' is not defined: no initializer, graph input "
                                                "or node output has that name (missing "
                                                "initializer?)"));
      }
      ++pending[static_cast<size_t>(i)];
      consumers[static_cast<size_t>(it->second)].push_back(i);
    }
  }
  // Kahn's algorithm, lowest node index first, so an already sorted graph keeps its order.
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[static_cast<size_t>(i)] == 0) ready.push(i);
  }
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order->push_back(&nodes[i]);
    for (int c : consumers[static_cast<size_t>(i)]) {
      if (--pending[static_cast<size_t>(c)] == 0) ready.push(c);
    }
  }
  if (static_cast<int>(order->size()) != n) {
    for (int i = 0; i < n; ++i) {
      if (pending[static_cast<size_t>(i)] > 0) {
        return NodeError(nodes[i], "the graph has a cycle through this node");
      }
    }
  }
  return absl::OkStatus();
}

absl::Status Importer::ReadOutputs() {
  for (const auto& output : model_.graph().output()) {
    const std::string where = absl::StrCat("graph output '", output.name(), "'");
    auto it = values_.find(output.name());
    if (it == values_.end()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " is not produced by any node"));
    }
    if (it->second.is_constant()) {
      return absl::UnimplementedError(absl::StrCat(where, " is a constant, not computed"));
    }
    std::vector<int64_t> declared = it->second.onnx_dims;
    if (output.type().has_tensor_type()) {
      const auto& tensor_type = output.type().tensor_type();
      if (tensor_type.elem_type() != TensorProto::FLOAT &&
          tensor_type.elem_type() != TensorProto::UNDEFINED) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, " has element type ", DtypeName(tensor_type.elem_type()),
            "; psched computes float32"));
      }
      if (tensor_type.has_shape()) {
        const auto& shape = tensor_type.shape();
        bool all_static = true;
        std::vector<int64_t> dims;
        for (const auto& dim : shape.dim()) {
          all_static = all_static && dim.has_dim_value();
          dims.push_back(dim.has_dim_value() ? dim.dim_value() : -1);
        }
        bool consistent = dims.size() == it->second.onnx_dims.size();
        for (size_t i = 0; consistent && i < dims.size(); ++i) {
          consistent = dims[i] == -1 || dims[i] == it->second.onnx_dims[i];
        }
        if (!consistent) {
          return absl::InvalidArgumentError(absl::StrCat(
              "inconsistent shapes: ", where, " declares ", DimsString(dims),
              " but its producer computes ", DimsString(it->second.onnx_dims)));
        }
        if (all_static) declared = dims;
      }
    }
    graph_.outputs.push_back(GraphIO{it->second.tensor, output.name(), declared});
  }
  if (graph_.outputs.empty()) return absl::InvalidArgumentError("ONNX graph has no output");
  return absl::OkStatus();
}

// ONNX's shape inference as a second opinion on every activation shape psched computed.
absl::Status Importer::CrossCheckShapes() {
  try {
    onnx::shape_inference::InferShapes(model_, onnx::OpSchemaRegistry::Instance(),
                                       onnx::ShapeInferenceOptions(false, 0, false));
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("inconsistent shapes: ONNX shape inference failed: ", e.what()));
  }
  auto check = [&](const onnx::ValueInfoProto& info) -> absl::Status {
    auto it = values_.find(info.name());
    if (it == values_.end() || it->second.is_constant()) return absl::OkStatus();
    if (!info.type().has_tensor_type() || !info.type().tensor_type().has_shape()) {
      return absl::OkStatus();
    }
    const auto& shape = info.type().tensor_type().shape();
    std::vector<int64_t> inferred;
    for (const auto& dim : shape.dim()) {
      if (!dim.has_dim_value()) return absl::OkStatus();
      inferred.push_back(dim.dim_value());
    }
    if (inferred != it->second.onnx_dims) {
      auto producer = producer_node_.find(info.name());
      return absl::InvalidArgumentError(absl::StrCat(
          "inconsistent shapes: tensor '", info.name(), "'",
          producer != producer_node_.end() ? absl::StrCat(" from ", NodeLabel(*producer->second))
                                           : std::string(),
          ": psched computes ", DimsString(it->second.onnx_dims), ", ONNX shape inference ",
          DimsString(inferred)));
    }
    return absl::OkStatus();
  };
  for (const auto& info : model_.graph().value_info()) {
    if (absl::Status s = check(info); !s.ok()) return s;
  }
  for (const auto& info : model_.graph().output()) {
    if (absl::Status s = check(info); !s.ok()) return s;
  }
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------------------
// Attributes.

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

// ---------------------------------------------------------------------------------------
// Inputs, shapes, graph building.

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
      return absl::ResourceExhaustedError(absl::StrCat(what, " has dimension ", d,
                                                       ", more than max_dim (",
                                                       options_.max_dim, ")"));
    }
    if (elements > options_.max_tensor_elements / d) {
      return absl::ResourceExhaustedError(absl::StrCat(what, " ", DimsString(dims),
                                                       " has more than max_tensor_elements (",
                                                       options_.max_tensor_elements,
                                                       ") elements"));
    }
    elements *= d;
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> Importer::ActivationShape(const NodeProto& node,
                                                const std::vector<int64_t>& dims) const {
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", dims); !s.ok()) return s;
  if (dims.size() == 4 && dims[0] == 1) return Shape{dims[2], dims[3], dims[1]};
  if (dims.size() == 2 && dims[0] == 1) return Shape{1, 1, dims[1]};
  return Unsupported(node, absl::StrCat("output shape ", DimsString(dims),
                                        " is not [1,C,H,W] or [1,K]"));
}

absl::StatusOr<TensorId> Importer::DefineActivation(const NodeProto& node, int output_index,
                                                    std::vector<int64_t> onnx_dims) {
  auto shape = ActivationShape(node, onnx_dims);
  if (!shape.ok()) return shape.status();
  Tensor tensor;
  tensor.name = node.output(output_index);
  tensor.shape = *shape;
  tensor.onnx_rank = static_cast<int32_t>(onnx_dims.size());
  const auto id = static_cast<TensorId>(graph_.tensors.size());
  graph_.tensors.push_back(std::move(tensor));
  Value v;
  v.tensor = id;
  v.onnx_dims = std::move(onnx_dims);
  values_[node.output(output_index)] = std::move(v);
  return id;
}

absl::Status Importer::DefineConstant(const NodeProto& node, int output_index, ConstValue value) {
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", value.dims);
      !s.ok() && value.Elements() != 0) {
    return s;
  }
  value.name = node.output(output_index);
  Value v;
  v.constant = std::make_shared<const ConstValue>(std::move(value));
  values_[node.output(output_index)] = std::move(v);
  return absl::OkStatus();
}

absl::StatusOr<TensorId> Importer::AddOp(const NodeProto& node, RawOpKind raw_kind, OpKind kind,
                                         std::vector<TensorId> inputs,
                                         std::vector<int64_t> out_dims, OpAttrs attrs) {
  auto out = DefineActivation(node, 0, std::move(out_dims));
  if (!out.ok()) return out.status();
  const auto op_id = static_cast<OpId>(graph_.ops.size());
  RawOp raw;
  raw.raw_kind = raw_kind;
  raw.op.name = node.name().empty() ? node.output(0) : node.name();
  raw.op.kind = kind;
  raw.op.inputs = std::move(inputs);
  raw.op.output = *out;
  raw.op.attrs = std::move(attrs);
  raw.onnx_op_type = node.op_type();
  graph_.ops.push_back(std::move(raw));
  graph_.tensors[static_cast<size_t>(*out)].producer = op_id;
  return *out;
}

ConstantId Importer::AddConstant(const std::string& key, std::string name,
                                 std::vector<int64_t> dims, bool has_data,
                                 const std::function<std::vector<float>()>& data) {
  auto it = constant_cache_.find(key);
  if (it != constant_cache_.end()) return it->second;
  Constant c;
  c.name = std::move(name);
  c.dims = std::move(dims);
  if (has_data) {
    c.data = data();
  } else {
    weights_missing_ = true;
  }
  const auto id = static_cast<ConstantId>(graph_.constants.size());
  graph_.constants.push_back(std::move(c));
  constant_cache_.emplace(key, id);
  return id;
}

// OIHW -> OHWI.
ConstantId Importer::FilterConstant(const ConstValue& w) {
  const int64_t o = w.dims[0], i = w.dims[1], kh = w.dims[2], kw = w.dims[3];
  return AddConstant(absl::StrCat(w.name, "|ohwi"), w.name, {o, kh, kw, i}, w.has_data, [&] {
    std::vector<float> out(w.floats.size());
    for (int64_t a = 0; a < o; ++a)
      for (int64_t b = 0; b < i; ++b)
        for (int64_t y = 0; y < kh; ++y)
          for (int64_t x = 0; x < kw; ++x)
            out[static_cast<size_t>(((a * kh + y) * kw + x) * i + b)] =
                w.floats[static_cast<size_t>(((a * i + b) * kh + y) * kw + x)];
    return out;
  });
}

// A per-channel vector of `length`, from [length], [1,length] or a broadcast scalar.
ConstantId Importer::VectorConstant(const ConstValue& v, int64_t length) {
  return AddConstant(absl::StrCat(v.name, "|vec", length), v.name, {length}, v.has_data, [&] {
    if (v.Elements() == length) return v.floats;
    return std::vector<float>(static_cast<size_t>(length), v.floats.empty() ? 0.0f : v.floats[0]);
  });
}

// An element-wise constant operand broadcast against an activation of `act_dims`, in NHWC:
// dims {h, w, c} of the constant itself (each 1 or the activation's extent).
TensorId Importer::ConstantOperand(const ConstValue& c, const std::vector<int64_t>& act_dims) {
  std::vector<int64_t> padded(act_dims.size() - std::min(act_dims.size(), c.dims.size()), 1);
  padded.insert(padded.end(), c.dims.begin(), c.dims.end());
  Shape shape = act_dims.size() == 4 ? Shape{padded[2], padded[3], padded[1]}
                                     : Shape{1, 1, padded[1]};
  const ConstantId id =
      AddConstant(absl::StrCat(c.name, "|nhwc", DimsString(act_dims)), c.name,
                  {shape.h, shape.w, shape.c}, c.has_data, [&] {
                    std::vector<float> out(static_cast<size_t>(shape.Elements()));
                    for (int64_t y = 0; y < shape.h; ++y)
                      for (int64_t x = 0; x < shape.w; ++x)
                        for (int64_t ch = 0; ch < shape.c; ++ch)
                          out[static_cast<size_t>((y * shape.w + x) * shape.c + ch)] =
                              static_cast<float>(
                                  c.At((ch * shape.h + y) * shape.w + x));
                    return out;
                  });
  Tensor tensor;
  tensor.name = c.name;
  tensor.shape = shape;
  tensor.onnx_rank = static_cast<int32_t>(act_dims.size());
  tensor.constant = id;
  graph_.tensors.push_back(std::move(tensor));
  return static_cast<TensorId>(graph_.tensors.size() - 1);
}

// ---------------------------------------------------------------------------------------
// Convolution and pooling windows.

absl::Status Importer::ResolveWindow(const NodeProto& node, const std::vector<int64_t>& in_dims,
                                     int64_t kernel_h, int64_t kernel_w, bool allow_ceil,
                                     Window2d* window, std::vector<int64_t>* out_hw,
                                     int32_t* declared_pad_bottom, int32_t* declared_pad_right) {
  auto strides = AttrInts(node, "strides", {1, 1});
  auto dilations = AttrInts(node, "dilations", {1, 1});
  auto pads = AttrInts(node, "pads", {0, 0, 0, 0});
  auto auto_pad = AttrString(node, "auto_pad", "NOTSET");
  auto ceil_mode = AttrInt(node, "ceil_mode", 0);
  for (const absl::Status& s : {strides.status(), dilations.status(), pads.status(),
                                auto_pad.status(), ceil_mode.status()}) {
    if (!s.ok()) return s;
  }
  if (strides->size() != 2 || dilations->size() != 2 || pads->size() != 4) {
    return NodeError(node, absl::StrCat("expects 2 strides, 2 dilations and 4 pads, got ",
                                        DimsString(*strides), ", ", DimsString(*dilations),
                                        ", ", DimsString(*pads)));
  }
  const int64_t limit = options_.max_dim;
  for (int64_t v : {kernel_h, kernel_w, (*strides)[0], (*strides)[1], (*dilations)[0],
                    (*dilations)[1]}) {
    if (v < 1 || v > limit) {
      return NodeError(node, absl::StrCat("kernel, stride and dilation must be in [1, ",
                                          limit, "], got ", v));
    }
  }
  for (int64_t p : *pads) {
    if (p < 0 || p > limit) {
      return NodeError(node, absl::StrCat("pads must be in [0, ", limit, "], got ",
                                          DimsString(*pads)));
    }
  }
  if (*ceil_mode != 0 && (!allow_ceil || *ceil_mode != 1)) {
    return NodeError(node, absl::StrCat("ceil_mode ", *ceil_mode, " is not supported here"));
  }
  const int64_t in[2] = {in_dims[2], in_dims[3]};
  const int64_t kernel[2] = {kernel_h, kernel_w};
  int64_t begin[2] = {(*pads)[0], (*pads)[1]};
  int64_t end[2] = {(*pads)[2], (*pads)[3]};
  int64_t extra[2] = {0, 0};
  out_hw->assign(2, 0);
  for (int a = 0; a < 2; ++a) {
    const int64_t stride = (*strides)[static_cast<size_t>(a)];
    const int64_t effective = (kernel[a] - 1) * (*dilations)[static_cast<size_t>(a)] + 1;
    if (*auto_pad == "SAME_UPPER" || *auto_pad == "SAME_LOWER") {
      const int64_t out = (in[a] + stride - 1) / stride;
      const int64_t total = std::max<int64_t>(0, (out - 1) * stride + effective - in[a]);
      begin[a] = *auto_pad == "SAME_UPPER" ? total / 2 : total - total / 2;
      end[a] = total - begin[a];
    } else if (*auto_pad == "VALID") {
      begin[a] = end[a] = 0;
    } else if (*auto_pad != "NOTSET" && !auto_pad->empty()) {
      return NodeError(node, absl::StrCat("unknown auto_pad '", *auto_pad, "'"));
    }
    const int64_t span = in[a] + begin[a] + end[a] - effective;
    if (span < 0) {
      return NodeError(node, absl::StrCat("window of extent ", effective,
                                          " is larger than the padded input ",
                                          DimsString(in_dims)));
    }
    int64_t out = span / stride + 1;
    if (*ceil_mode == 1) {
      out = (span + stride - 1) / stride + 1;
      extra[a] = std::max<int64_t>(0, (out - 1) * stride + effective - (in[a] + begin[a] + end[a]));
    }
    (*out_hw)[static_cast<size_t>(a)] = out;
  }
  window->kernel_h = static_cast<int32_t>(kernel_h);
  window->kernel_w = static_cast<int32_t>(kernel_w);
  window->stride_h = static_cast<int32_t>((*strides)[0]);
  window->stride_w = static_cast<int32_t>((*strides)[1]);
  window->dilation_h = static_cast<int32_t>((*dilations)[0]);
  window->dilation_w = static_cast<int32_t>((*dilations)[1]);
  window->pad_top = static_cast<int32_t>(begin[0]);
  window->pad_left = static_cast<int32_t>(begin[1]);
  window->pad_bottom = static_cast<int32_t>(end[0] + extra[0]);
  window->pad_right = static_cast<int32_t>(end[1] + extra[1]);
  if (declared_pad_bottom != nullptr) *declared_pad_bottom = static_cast<int32_t>(end[0]);
  if (declared_pad_right != nullptr) *declared_pad_right = static_cast<int32_t>(end[1]);
  return absl::OkStatus();
}

absl::Status Importer::ConvertConv(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  auto w = ConstantInput(node, 1, false);
  if (!w.ok()) return w.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  const ConstValue& weight = **w;
  if (in.size() != 4) {
    return Unsupported(node, absl::StrCat("only 2-D convolution on [1,C,H,W] is supported, input is ",
                                          DimsString(in)));
  }
  if (weight.dims.size() != 4 || !(weight.dtype == TensorProto::FLOAT)) {
    return NodeError(node, absl::StrCat("weight '", weight.name, "' must be a float32 [M,C/group,kH,kW] tensor, got dims ",
                                        DimsString(weight.dims), " of type ", DtypeName(weight.dtype)));
  }
  auto group = AttrInt(node, "group", 1);
  if (!group.ok()) return group.status();
  const int64_t cout = weight.dims[0];
  if (*group < 1 || in[1] % *group != 0 || weight.dims[1] * *group != in[1] || cout % *group != 0 ||
      cout < 1) {
    return NodeError(node, absl::StrCat("input channels ", in[1], ", weight ",
                                        DimsString(weight.dims), " and group ", *group,
                                        " do not agree"));
  }
  auto kernel = AttrInts(node, "kernel_shape", {weight.dims[2], weight.dims[3]});
  if (!kernel.ok()) return kernel.status();
  if (*kernel != std::vector<int64_t>{weight.dims[2], weight.dims[3]}) {
    return NodeError(node, absl::StrCat("kernel_shape ", DimsString(*kernel),
                                        " disagrees with weight ", DimsString(weight.dims)));
  }
  ConvAttrs attrs;
  std::vector<int64_t> out_hw;
  if (absl::Status s = ResolveWindow(node, in, weight.dims[2], weight.dims[3], false,
                                     &attrs.window, &out_hw, nullptr, nullptr);
      !s.ok()) {
    return s;
  }
  attrs.groups = static_cast<int32_t>(*group);
  attrs.filter = FilterConstant(weight);
  if (HasInput(node, 2)) {
    auto b = ConstantInput(node, 2, false);
    if (!b.ok()) return b.status();
    if ((*b)->dims != std::vector<int64_t>{cout} || (*b)->dtype != TensorProto::FLOAT) {
      return NodeError(node, absl::StrCat("bias '", (*b)->name, "' must be float32 [", cout,
                                          "], got ", DimsString((*b)->dims)));
    }
    attrs.bias = VectorConstant(**b, cout);
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kConv2d, {(*x)->tensor},
               {1, cout, out_hw[0], out_hw[1]}, attrs)
      .status();
}

absl::Status Importer::ConvertPool(const NodeProto& node) {
  const bool is_max = node.op_type() == "MaxPool";
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (in.size() != 4) return Unsupported(node, "only 2-D pooling on [1,C,H,W] is supported");
  auto kernel = AttrInts(node, "kernel_shape", {});
  if (!kernel.ok()) return kernel.status();
  if (kernel->size() != 2) {
    return NodeError(node, absl::StrCat("kernel_shape must have 2 values, got ",
                                        DimsString(*kernel)));
  }
  if (!is_max) {
    auto dilations = AttrInts(node, "dilations", {1, 1});
    if (!dilations.ok()) return dilations.status();
    if (*dilations != std::vector<int64_t>{1, 1}) {
      return Unsupported(node, "dilated average pooling is not supported");
    }
  }
  if (is_max) {
    auto storage = AttrInt(node, "storage_order", 0);
    if (!storage.ok()) return storage.status();
  }
  PoolAttrs attrs;
  std::vector<int64_t> out_hw;
  if (absl::Status s = ResolveWindow(node, in, (*kernel)[0], (*kernel)[1], true, &attrs.window,
                                     &out_hw, &attrs.declared_pad_bottom,
                                     &attrs.declared_pad_right);
      !s.ok()) {
    return s;
  }
  if (!is_max) {
    auto include = AttrInt(node, "count_include_pad", 0);
    if (!include.ok()) return include.status();
    attrs.count_include_pad = *include != 0;
  }
  return AddOp(node, RawOpKind::kCanonical, is_max ? OpKind::kMaxPool : OpKind::kAvgPool,
               {(*x)->tensor}, {1, in[1], out_hw[0], out_hw[1]}, attrs)
      .status();
}

absl::Status Importer::ConvertGlobalAvgPool(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (in.size() != 4) return Unsupported(node, "only [1,C,H,W] input is supported");
  return AddOp(node, RawOpKind::kCanonical, OpKind::kGlobalAvgPool, {(*x)->tensor},
               {1, in[1], 1, 1})
      .status();
}

// ---------------------------------------------------------------------------------------
// Fully connected.

absl::Status Importer::ConvertGemm(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  auto b = ConstantInput(node, 1, false);
  if (!b.ok()) return b.status();
  auto trans_a = AttrInt(node, "transA", 0);
  auto trans_b = AttrInt(node, "transB", 0);
  auto alpha = AttrFloat(node, "alpha", 1.0f);
  auto beta = AttrFloat(node, "beta", 1.0f);
  for (const absl::Status& s : {trans_a.status(), trans_b.status(), alpha.status(), beta.status()}) {
    if (!s.ok()) return s;
  }
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (in.size() != 2 || *trans_a != 0) {
    return Unsupported(node, absl::StrCat("expects A of shape [1,K] without transA, got ",
                                          DimsString(in)));
  }
  const ConstValue& weight = **b;
  if (weight.dims.size() != 2 || weight.dtype != TensorProto::FLOAT) {
    return NodeError(node, absl::StrCat("B '", weight.name, "' must be a float32 matrix, got ",
                                        DimsString(weight.dims)));
  }
  const int64_t k = *trans_b ? weight.dims[1] : weight.dims[0];
  const int64_t n = *trans_b ? weight.dims[0] : weight.dims[1];
  if (k != in[1]) {
    return NodeError(node, absl::StrCat("A ", DimsString(in), " and B ", DimsString(weight.dims),
                                        (*trans_b ? " (transB)" : ""), " do not multiply"));
  }
  FullyConnectedAttrs attrs;
  const float a = *alpha;
  attrs.weight = AddConstant(absl::StrCat(weight.name, "|fc", *trans_b, "|", a), weight.name,
                             {n, k}, weight.has_data, [&] {
                               std::vector<float> out(static_cast<size_t>(n * k));
                               for (int64_t o = 0; o < n; ++o)
                                 for (int64_t i = 0; i < k; ++i)
                                   out[static_cast<size_t>(o * k + i)] =
                                       a * weight.floats[static_cast<size_t>(
                                               *trans_b ? o * k + i : i * n + o)];
                               return out;
                             });
  if (HasInput(node, 2)) {
    auto c = ConstantInput(node, 2, false);
    if (!c.ok()) return c.status();
    const ConstValue& bias = **c;
    const int64_t count = bias.Elements();
    if (bias.dtype != TensorProto::FLOAT || (count != n && count != 1) || bias.dims.size() > 2) {
      return NodeError(node, absl::StrCat("C '", bias.name, "' must be float32 [", n,
                                          "] or a scalar, got ", DimsString(bias.dims)));
    }
    const float bt = *beta;
    attrs.bias = AddConstant(absl::StrCat(bias.name, "|bias", n, "|", bt), bias.name, {n},
                             bias.has_data, [&] {
                               std::vector<float> out(static_cast<size_t>(n));
                               for (int64_t o = 0; o < n; ++o)
                                 out[static_cast<size_t>(o)] =
                                     bt * bias.floats[static_cast<size_t>(count == 1 ? 0 : o)];
                               return out;
                             });
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kFullyConnected, {(*x)->tensor}, {1, n},
               attrs)
      .status();
}

absl::Status Importer::ConvertMatMul(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  auto b = ConstantInput(node, 1, false);
  if (!b.ok()) return b.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  const ConstValue& weight = **b;
  if (in.size() != 2) {
    return Unsupported(node, absl::StrCat("expects A of shape [1,K], got ", DimsString(in)));
  }
  if (weight.dims.size() != 2 || weight.dtype != TensorProto::FLOAT || weight.dims[0] != in[1]) {
    return NodeError(node, absl::StrCat("B '", weight.name, "' must be a float32 [", in[1],
                                        ",N] matrix, got ", DimsString(weight.dims)));
  }
  const int64_t k = weight.dims[0], n = weight.dims[1];
  FullyConnectedAttrs attrs;
  attrs.weight = AddConstant(absl::StrCat(weight.name, "|fc0|1"), weight.name, {n, k},
                             weight.has_data, [&] {
                               std::vector<float> out(static_cast<size_t>(n * k));
                               for (int64_t o = 0; o < n; ++o)
                                 for (int64_t i = 0; i < k; ++i)
                                   out[static_cast<size_t>(o * k + i)] =
                                       weight.floats[static_cast<size_t>(i * n + o)];
                               return out;
                             });
  return AddOp(node, RawOpKind::kCanonical, OpKind::kFullyConnected, {(*x)->tensor}, {1, n},
               attrs)
      .status();
}

// ---------------------------------------------------------------------------------------
// Normalisation and activations.

absl::Status Importer::ConvertBatchNorm(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  auto training = AttrInt(node, "training_mode", 0);
  auto spatial = AttrInt(node, "spatial", 1);
  auto epsilon = AttrFloat(node, "epsilon", 1e-5f);
  for (const absl::Status& s : {training.status(), spatial.status(), epsilon.status()}) {
    if (!s.ok()) return s;
  }
  if (*training != 0 || *spatial != 1) {
    return Unsupported(node, "only inference-mode, spatial BatchNormalization is supported");
  }
  if (*epsilon < 0) return NodeError(node, "epsilon must not be negative");
  const int64_t channels = (*x)->onnx_dims[1];
  ConstantId ids[4];
  for (int i = 0; i < 4; ++i) {
    auto c = ConstantInput(node, i + 1, false);
    if (!c.ok()) return c.status();
    if ((*c)->dims != std::vector<int64_t>{channels} || (*c)->dtype != TensorProto::FLOAT) {
      return NodeError(node, absl::StrCat("parameter '", (*c)->name, "' must be float32 [",
                                          channels, "], got ", DimsString((*c)->dims)));
    }
    ids[i] = VectorConstant(**c, channels);
  }
  auto out = AddOp(node, RawOpKind::kBatchNorm, OpKind::kActivation, {(*x)->tensor},
                   (*x)->onnx_dims);
  if (!out.ok()) return out.status();
  graph_.ops.back().batch_norm = BatchNormParams{ids[0], ids[1], ids[2], ids[3], *epsilon};
  return absl::OkStatus();
}

absl::Status Importer::ConvertActivation(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  Activation act;
  const std::string& type = node.op_type();
  if (type == "Relu") {
    act.kind = ActivationKind::kRelu;
  } else if (type == "Sigmoid") {
    act.kind = ActivationKind::kSigmoid;
  } else if (type == "HardSwish") {
    act.kind = ActivationKind::kHardSwish;
  } else if (type == "HardSigmoid") {
    act.kind = ActivationKind::kHardSigmoid;
    auto alpha = AttrFloat(node, "alpha", 0.2f);
    auto beta = AttrFloat(node, "beta", 0.5f);
    if (!alpha.ok()) return alpha.status();
    if (!beta.ok()) return beta.status();
    act.alpha = *alpha;
    act.beta = *beta;
  } else {  // Clip
    act.kind = ActivationKind::kClip;
    if (opset_ < 11) {
      auto lo = AttrFloat(node, "min", act.min);
      auto hi = AttrFloat(node, "max", act.max);
      if (!lo.ok()) return lo.status();
      if (!hi.ok()) return hi.status();
      act.min = *lo;
      act.max = *hi;
    } else {
      for (int i = 1; i <= 2; ++i) {
        if (!HasInput(node, i)) continue;
        auto bound = ConstantInput(node, i, true);
        if (!bound.ok()) return bound.status();
        if ((*bound)->Elements() != 1 || !(*bound)->IsFloat()) {
          return NodeError(node, absl::StrCat("bound '", (*bound)->name,
                                              "' must be a float scalar"));
        }
        (i == 1 ? act.min : act.max) = static_cast<float>((*bound)->At(0));
      }
    }
    if (std::isnan(act.min) || std::isnan(act.max) || act.min > act.max) {
      return NodeError(node, absl::StrCat("invalid bounds min=", act.min, " max=", act.max));
    }
  }
  auto out = AddOp(node, RawOpKind::kCanonical, OpKind::kActivation, {(*x)->tensor},
                   (*x)->onnx_dims);
  if (!out.ok()) return out.status();
  graph_.ops.back().op.activation = act;
  return absl::OkStatus();
}

absl::Status Importer::ConvertSoftmax(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  const auto rank = static_cast<int64_t>(in.size());
  auto axis = AttrInt(node, "axis", opset_ >= 13 ? -1 : 1);
  if (!axis.ok()) return axis.status();
  const int64_t a = *axis < 0 ? *axis + rank : *axis;
  // Softmax runs over channels in NHWC; before opset 13 it flattened all axes from `axis`.
  const bool over_channels =
      a == 1 && (rank == 2 || opset_ >= 13 || in[2] * in[3] == 1);
  if (!over_channels) {
    return Unsupported(node, absl::StrCat("softmax over axis ", *axis, " of ", DimsString(in),
                                          " is not over channels"));
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kSoftmax, {(*x)->tensor}, in).status();
}

// ---------------------------------------------------------------------------------------
// Element-wise arithmetic.

// Numpy-style broadcast of two shapes; false when they are incompatible.
bool Broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
               std::vector<int64_t>* out) {
  const size_t rank = std::max(a.size(), b.size());
  out->assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) return false;
    (*out)[i] = std::max(da, db);
  }
  return true;
}

// Folds a binary op on two constants (shape arithmetic); same dims or a scalar operand.
absl::StatusOr<ConstValue> FoldBinary(const ConstValue& a, const ConstValue& b,
                                      const std::string& op) {
  if (!a.has_data || !b.has_data) {
    return absl::InvalidArgumentError("operands of a constant expression have no data");
  }
  if (a.IsFloat() != b.IsFloat()) return absl::InvalidArgumentError("operand types differ");
  if (a.Elements() != b.Elements() && a.Elements() != 1 && b.Elements() != 1) {
    return absl::UnimplementedError(absl::StrCat("broadcast of ", DimsString(a.dims), " and ",
                                                 DimsString(b.dims), " in a constant expression"));
  }
  ConstValue out;
  out.dtype = a.dtype;
  out.has_data = true;
  out.dims = a.Elements() >= b.Elements() ? a.dims : b.dims;
  const int64_t n = std::max(a.Elements(), b.Elements());
  for (int64_t i = 0; i < n; ++i) {
    const int64_t ia = a.Elements() == 1 ? 0 : i, ib = b.Elements() == 1 ? 0 : i;
    if (a.IsFloat()) {
      const float x = a.floats[static_cast<size_t>(ia)], y = b.floats[static_cast<size_t>(ib)];
      out.floats.push_back(op == "Add" ? x + y : op == "Sub" ? x - y : op == "Mul" ? x * y : x / y);
    } else {
      const int64_t x = a.ints[static_cast<size_t>(ia)], y = b.ints[static_cast<size_t>(ib)];
      if (op == "Div" && y == 0) return absl::InvalidArgumentError("integer division by zero");
      // Wrap-around instead of signed-overflow UB on hostile constants.
      const auto ux = static_cast<uint64_t>(x), uy = static_cast<uint64_t>(y);
      out.ints.push_back(op == "Add"   ? static_cast<int64_t>(ux + uy)
                         : op == "Sub" ? static_cast<int64_t>(ux - uy)
                         : op == "Mul" ? static_cast<int64_t>(ux * uy)
                                       : (x == INT64_MIN && y == -1 ? x : x / y));
    }
  }
  return out;
}

absl::Status Importer::ConvertElementwise(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto a = InputValue(node, 0);
  if (!a.ok()) return a.status();
  auto b = InputValue(node, 1);
  if (!b.ok()) return b.status();
  const Value& va = **a;
  const Value& vb = **b;
  if (va.is_constant() && vb.is_constant()) {
    auto folded = FoldBinary(*va.constant, *vb.constant, node.op_type());
    if (!folded.ok()) return NodeError(node, folded.status().message());
    return DefineConstant(node, 0, *std::move(folded));
  }
  const OpKind kind = node.op_type() == "Add"   ? OpKind::kAdd
                      : node.op_type() == "Mul" ? OpKind::kMul
                                                : OpKind::kSub;
  if (!va.is_constant() && !vb.is_constant()) {
    std::vector<int64_t> out;
    if (va.onnx_dims.size() != vb.onnx_dims.size() || !Broadcast(va.onnx_dims, vb.onnx_dims, &out)) {
      return NodeError(node, absl::StrCat("inconsistent shapes: operands ",
                                          DimsString(va.onnx_dims), " and ",
                                          DimsString(vb.onnx_dims), " do not broadcast"));
    }
    return AddOp(node, RawOpKind::kCanonical, kind, {va.tensor, vb.tensor}, out).status();
  }
  const Value& act = va.is_constant() ? vb : va;
  const ConstValue& c = va.is_constant() ? *va.constant : *vb.constant;
  std::vector<int64_t> out;
  if (!c.IsFloat()) {
    return NodeError(node, absl::StrCat("constant operand '", c.name, "' must be float32"));
  }
  if (c.dims.size() > act.onnx_dims.size() || !Broadcast(act.onnx_dims, c.dims, &out) ||
      out != act.onnx_dims) {
    return NodeError(node, absl::StrCat("constant operand '", c.name, "' ", DimsString(c.dims),
                                        " does not broadcast onto ", DimsString(act.onnx_dims)));
  }
  const TensorId constant = ConstantOperand(c, act.onnx_dims);
  std::vector<TensorId> inputs = va.is_constant() ? std::vector<TensorId>{constant, vb.tensor}
                                                  : std::vector<TensorId>{va.tensor, constant};
  return AddOp(node, RawOpKind::kCanonical, kind, std::move(inputs), act.onnx_dims).status();
}

absl::Status Importer::ConvertDiv(const NodeProto& node) {
  auto a = InputValue(node, 0);
  if (!a.ok()) return a.status();
  auto b = InputValue(node, 1);
  if (!b.ok()) return b.status();
  if (!(*a)->is_constant() || !(*b)->is_constant()) {
    return Unsupported(node, "Div is supported only in constant (shape) expressions");
  }
  auto folded = FoldBinary(*(*a)->constant, *(*b)->constant, "Div");
  if (!folded.ok()) return NodeError(node, folded.status().message());
  return DefineConstant(node, 0, *std::move(folded));
}

// ---------------------------------------------------------------------------------------
// Concat, Pad, Resize.

absl::Status Importer::ConvertConcat(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  if (node.input_size() == 0) return NodeError(node, "has no inputs");
  auto axis_attr = AttrInt(node, "axis", 1);
  if (!axis_attr.ok()) return axis_attr.status();
  std::vector<const Value*> inputs;
  int constants = 0;
  for (int i = 0; i < node.input_size(); ++i) {
    auto v = InputValue(node, i);
    if (!v.ok()) return v.status();
    inputs.push_back(*v);
    constants += (*v)->is_constant() ? 1 : 0;
  }
  if (constants == node.input_size()) {
    // A shape computation: concatenate 1-D integer vectors.
    ConstValue out;
    out.dtype = inputs[0]->constant->dtype;
    out.has_data = true;
    for (const Value* v : inputs) {
      const ConstValue& c = *v->constant;
      if (c.dims.size() != 1 || !c.has_data || c.dtype != out.dtype || !c.IsInteger()) {
        return Unsupported(node, "constant Concat is supported only for 1-D integer vectors");
      }
      out.ints.insert(out.ints.end(), c.ints.begin(), c.ints.end());
    }
    out.dims = {static_cast<int64_t>(out.ints.size())};
    return DefineConstant(node, 0, std::move(out));
  }
  if (constants > 0) {
    return Unsupported(node, "Concat of computed tensors with constants is not supported");
  }
  const std::vector<int64_t>& first = inputs[0]->onnx_dims;
  const auto rank = static_cast<int64_t>(first.size());
  const int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
  if (axis != 1) {
    return Unsupported(node, absl::StrCat("Concat along axis ", *axis_attr, " of ",
                                          DimsString(first), "; only channels are supported"));
  }
  std::vector<int64_t> out = first;
  out[1] = 0;
  std::vector<TensorId> ids;
  for (const Value* v : inputs) {
    std::vector<int64_t> rest = v->onnx_dims;
    if (rest.size() != first.size()) {
      return NodeError(node, "inconsistent shapes: inputs have different ranks");
    }
    out[1] += rest[1];
    rest[1] = first[1];
    if (rest != first) {
      return NodeError(node, absl::StrCat("inconsistent shapes: ", DimsString(v->onnx_dims),
                                          " and ", DimsString(first),
                                          " differ outside the channel axis"));
    }
    ids.push_back(v->tensor);
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kConcat, std::move(ids), out).status();
}

absl::Status Importer::ConvertPad(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  auto mode = AttrString(node, "mode", "constant");
  if (!mode.ok()) return mode.status();
  if (*mode != "constant") {
    return Unsupported(node, absl::StrCat("pad mode '", *mode, "'; only 'constant' is supported"));
  }
  std::vector<int64_t> pads;
  float value = 0.0f;
  if (opset_ < 11) {
    auto p = AttrInts(node, "pads", {});
    auto v = AttrFloat(node, "value", 0.0f);
    if (!p.ok()) return p.status();
    if (!v.ok()) return v.status();
    pads = *p;
    value = *v;
  } else {
    if (HasInput(node, 3)) return Unsupported(node, "the 'axes' input is not supported");
    auto p = ConstantInput(node, 1, true);
    if (!p.ok()) return p.status();
    if (!(*p)->IsInteger()) return NodeError(node, "pads must be integers");
    pads = (*p)->ints;
    if (HasInput(node, 2)) {
      auto v = ConstantInput(node, 2, true);
      if (!v.ok()) return v.status();
      if ((*v)->Elements() != 1 || !(*v)->IsFloat()) {
        return NodeError(node, "constant_value must be a float scalar");
      }
      value = static_cast<float>((*v)->At(0));
    }
  }
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  const size_t rank = in.size();
  if (pads.size() != 2 * rank) {
    return NodeError(node, absl::StrCat("expects ", 2 * rank, " pads for ", DimsString(in),
                                        ", got ", DimsString(pads)));
  }
  for (int64_t p : pads) {
    if (p < 0 || p > options_.max_dim) {
      return Unsupported(node, absl::StrCat("pads must be in [0, ", options_.max_dim, "], got ",
                                            DimsString(pads)));
    }
  }
  if (pads[0] != 0 || pads[rank] != 0) return Unsupported(node, "padding the batch axis");
  std::vector<int64_t> out = in;
  for (size_t i = 0; i < rank; ++i) out[i] += pads[i] + pads[i + rank];
  if (out == in) {
    return AddOp(node, RawOpKind::kIdentity, OpKind::kPad, {(*x)->tensor}, out).status();
  }
  PadAttrs attrs;
  attrs.channels_before = static_cast<int32_t>(pads[1]);
  attrs.channels_after = static_cast<int32_t>(pads[1 + rank]);
  if (rank == 4) {
    attrs.top = static_cast<int32_t>(pads[2]);
    attrs.left = static_cast<int32_t>(pads[3]);
    attrs.bottom = static_cast<int32_t>(pads[6]);
    attrs.right = static_cast<int32_t>(pads[7]);
  }
  attrs.value = value;
  return AddOp(node, RawOpKind::kCanonical, OpKind::kPad, {(*x)->tensor}, out, attrs).status();
}

absl::Status Importer::ConvertResize(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = ActivationInput(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t>& in = (*x)->onnx_dims;
  if (in.size() != 4) return Unsupported(node, "only [1,C,H,W] input can be resized");
  const bool upsample = node.op_type() == "Upsample";
  auto mode = AttrString(node, "mode", "nearest");
  if (!mode.ok()) return mode.status();
  ResizeAttrs attrs;
  if (*mode == "nearest") {
    attrs.mode = ResizeMode::kNearest;
  } else if (*mode == "linear" || *mode == "bilinear") {
    attrs.mode = ResizeMode::kLinear;
  } else {
    return Unsupported(node, absl::StrCat("resize mode '", *mode, "'"));
  }
  // Upsample and Resize-10 sample asymmetrically and round nearest down.
  attrs.transform = CoordinateTransform::kAsymmetric;
  attrs.rounding = NearestRounding::kFloor;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  if (upsample && opset_ < 9) {
    auto s = AttrFloats(node, "scales");
    if (!s.ok()) return s.status();
    scales.assign(s->begin(), s->end());
  } else {
    const int scales_index = (upsample || opset_ < 11) ? 1 : 2;
    if (!upsample && opset_ >= 11) {
      auto transform = AttrString(node, "coordinate_transformation_mode", "half_pixel");
      auto nearest = AttrString(node, "nearest_mode", "round_prefer_floor");
      auto exclude = AttrInt(node, "exclude_outside", 0);
      for (const absl::Status& s : {transform.status(), nearest.status(), exclude.status()}) {
        if (!s.ok()) return s;
      }
      static const std::unordered_map<std::string_view, CoordinateTransform> kTransforms = {
          {"half_pixel", CoordinateTransform::kHalfPixel},
          {"asymmetric", CoordinateTransform::kAsymmetric},
          {"align_corners", CoordinateTransform::kAlignCorners},
          {"pytorch_half_pixel", CoordinateTransform::kPytorchHalfPixel}};
      static const std::unordered_map<std::string_view, NearestRounding> kRoundings = {
          {"round_prefer_floor", NearestRounding::kRoundPreferFloor},
          {"round_prefer_ceil", NearestRounding::kRoundPreferCeil},
          {"floor", NearestRounding::kFloor},
          {"ceil", NearestRounding::kCeil}};
      auto t = kTransforms.find(*transform);
      auto r = kRoundings.find(*nearest);
      if (t == kTransforms.end()) {
        return Unsupported(node, absl::StrCat("coordinate_transformation_mode '", *transform, "'"));
      }
      if (r == kRoundings.end()) {
        return Unsupported(node, absl::StrCat("nearest_mode '", *nearest, "'"));
      }
      if (*exclude != 0) return Unsupported(node, "exclude_outside=1");
      attrs.transform = t->second;
      attrs.rounding = r->second;
      for (absl::string_view name : {"antialias", "axes", "keep_aspect_ratio_policy"}) {
        if (FindAttr(node, name) != nullptr) {
          return Unsupported(node, absl::StrCat("attribute '", name, "'"));
        }
      }
      if (HasInput(node, 3)) {
        auto s = ConstantInput(node, 3, true);
        if (!s.ok()) return s.status();
        if (!(*s)->IsInteger()) return NodeError(node, "sizes must be integers");
        sizes = (*s)->ints;
      }
    }
    if (HasInput(node, scales_index)) {
      auto s = ConstantInput(node, scales_index, true);
      if (!s.ok()) return s.status();
      if (!(*s)->IsFloat()) return NodeError(node, "scales must be floats");
      for (int64_t i = 0; i < (*s)->Elements(); ++i) scales.push_back((*s)->At(i));
    }
  }
  if (!scales.empty() && !sizes.empty()) return NodeError(node, "has both scales and sizes");
  std::vector<int64_t> out = in;
  if (!sizes.empty()) {
    if (sizes.size() != 4 || sizes[0] != in[0] || sizes[1] != in[1] || sizes[2] < 1 ||
        sizes[3] < 1) {
      return Unsupported(node, absl::StrCat("sizes ", DimsString(sizes), " for input ",
                                            DimsString(in), "; only H and W can change"));
    }
    out = sizes;
    attrs.scale_h = static_cast<float>(static_cast<double>(out[2]) / static_cast<double>(in[2]));
    attrs.scale_w = static_cast<float>(static_cast<double>(out[3]) / static_cast<double>(in[3]));
  } else {
    if (scales.size() != 4 || scales[0] != 1.0 || scales[1] != 1.0 || !(scales[2] > 0) ||
        !(scales[3] > 0) || scales[2] > static_cast<double>(options_.max_dim) ||
        scales[3] > static_cast<double>(options_.max_dim)) {
      return Unsupported(node, absl::StrCat("scales [", absl::StrJoin(scales, ","),
                                            "]; expects 4 positive scales, 1 for N and C"));
    }
    out[2] = static_cast<int64_t>(std::floor(static_cast<double>(in[2]) * scales[2]));
    out[3] = static_cast<int64_t>(std::floor(static_cast<double>(in[3]) * scales[3]));
    attrs.scale_h = static_cast<float>(scales[2]);
    attrs.scale_w = static_cast<float>(scales[3]);
  }
  return AddOp(node, RawOpKind::kCanonical, OpKind::kResize, {(*x)->tensor}, out, attrs).status();
}

// ---------------------------------------------------------------------------------------
// Reshape family: either constant folding or a layout-preserving view of an activation.

absl::Status Importer::ReshapeTo(const NodeProto& node, const Value& input,
                                 std::vector<int64_t> target) {
  if (input.is_constant()) {
    ConstValue c = *input.constant;
    int64_t elements = 1;
    for (int64_t d : target) elements *= d;
    if (elements != c.Elements()) {
      return NodeError(node, absl::StrCat("cannot reshape ", DimsString(c.dims), " to ",
                                          DimsString(target)));
    }
    c.dims = std::move(target);
    return DefineConstant(node, 0, std::move(c));
  }
  const std::vector<int64_t>& in = input.onnx_dims;
  auto product = [](const std::vector<int64_t>& d) {
    int64_t n = 1;
    for (int64_t v : d) n *= v;
    return n;
  };
  if (product(target) != product(in)) {
    return NodeError(node, absl::StrCat("inconsistent shapes: cannot reshape ", DimsString(in),
                                        " to ", DimsString(target)));
  }
  // NHWC and NCHW agree on the element order exactly when H = W = 1.
  const bool same_nhwc = target == in ||
                         (in.size() == 4 && in[2] * in[3] == 1 &&
                          (target == std::vector<int64_t>{1, in[1]})) ||
                         (in.size() == 2 && target == std::vector<int64_t>{1, in[1], 1, 1});
  if (same_nhwc) {
    return AddOp(node, RawOpKind::kIdentity, OpKind::kFlatten, {input.tensor}, target).status();
  }
  if (in.size() == 4 && target == std::vector<int64_t>{1, in[1] * in[2] * in[3]}) {
    return AddOp(node, RawOpKind::kCanonical, OpKind::kFlatten, {input.tensor}, target).status();
  }
  return Unsupported(node, absl::StrCat("reshape of ", DimsString(in), " to ", DimsString(target),
                                        "; only flattening [1,C,H,W] to [1,C*H*W] is supported"));
}

absl::Status Importer::ConvertReshape(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  auto shape = ConstantInput(node, 1, true);
  if (!shape.ok()) return shape.status();
  auto allow_zero = AttrInt(node, "allowzero", 0);
  if (!allow_zero.ok()) return allow_zero.status();
  if (!(*shape)->IsInteger() || (*shape)->dims.size() != 1) {
    return NodeError(node, "the shape input must be a 1-D integer tensor");
  }
  const std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  int64_t in_elements = 1;
  for (int64_t d : in) in_elements *= d;
  std::vector<int64_t> target = (*shape)->ints;
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && *allow_zero == 0) {
      if (i >= in.size()) return NodeError(node, "shape copies a dimension the input lacks");
      target[i] = in[i];
    }
    if (target[i] == -1) {
      if (infer >= 0) return NodeError(node, "shape has more than one -1");
      infer = static_cast<int>(i);
      continue;
    }
    if (target[i] < 1 || target[i] > options_.max_tensor_elements) {
      return NodeError(node, absl::StrCat("invalid target shape ", DimsString((*shape)->ints)));
    }
    if (known > options_.max_tensor_elements / target[i]) {
      return NodeError(node, absl::StrCat("target shape ", DimsString((*shape)->ints),
                                          " is too large"));
    }
    known *= target[i];
  }
  if (infer >= 0) {
    if (in_elements % known != 0) {
      return NodeError(node, absl::StrCat("cannot reshape ", DimsString(in), " to ",
                                          DimsString((*shape)->ints)));
    }
    target[static_cast<size_t>(infer)] = in_elements / known;
  }
  return ReshapeTo(node, **x, std::move(target));
}

absl::Status Importer::ConvertFlatten(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  auto axis_attr = AttrInt(node, "axis", 1);
  if (!axis_attr.ok()) return axis_attr.status();
  const auto rank = static_cast<int64_t>(in.size());
  const int64_t axis = *axis_attr < 0 ? *axis_attr + rank : *axis_attr;
  if (axis < 0 || axis > rank) return NodeError(node, absl::StrCat("axis ", *axis_attr, " out of range"));
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < rank; ++i) (i < axis ? outer : inner) *= in[static_cast<size_t>(i)];
  return ReshapeTo(node, **x, {outer, inner});
}

absl::Status Importer::ConvertSqueeze(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  const bool unsqueeze = node.op_type() == "Unsqueeze";
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  std::vector<int64_t> axes;
  if (opset_ >= 13) {
    if (HasInput(node, 1)) {
      auto a = ConstantInput(node, 1, true);
      if (!a.ok()) return a.status();
      if (!(*a)->IsInteger()) return NodeError(node, "axes must be integers");
      axes = (*a)->ints;
    }
  } else {
    auto a = AttrInts(node, "axes", {});
    if (!a.ok()) return a.status();
    axes = *a;
  }
  std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  std::vector<int64_t> out;
  if (unsqueeze) {
    const auto rank = static_cast<int64_t>(in.size() + axes.size());
    std::vector<bool> inserted(static_cast<size_t>(rank), false);
    for (int64_t a : axes) {
      const int64_t axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank || inserted[static_cast<size_t>(axis)]) {
        return NodeError(node, absl::StrCat("invalid axes ", DimsString(axes)));
      }
      inserted[static_cast<size_t>(axis)] = true;
    }
    size_t next = 0;
    for (int64_t i = 0; i < rank; ++i) out.push_back(inserted[static_cast<size_t>(i)] ? 1 : in[next++]);
  } else {
    const auto rank = static_cast<int64_t>(in.size());
    std::vector<bool> removed(static_cast<size_t>(rank), axes.empty());
    for (int64_t a : axes) {
      const int64_t axis = a < 0 ? a + rank : a;
      if (axis < 0 || axis >= rank || in[static_cast<size_t>(axis)] != 1) {
        return NodeError(node, absl::StrCat("invalid axes ", DimsString(axes), " for ",
                                            DimsString(in)));
      }
      removed[static_cast<size_t>(axis)] = true;
    }
    for (int64_t i = 0; i < rank; ++i) {
      if (!(removed[static_cast<size_t>(i)] && in[static_cast<size_t>(i)] == 1)) {
        out.push_back(in[static_cast<size_t>(i)]);
      }
    }
  }
  return ReshapeTo(node, **x, std::move(out));
}

// ---------------------------------------------------------------------------------------
// Identity, shape sub-graphs, constants.

absl::Status Importer::ConvertIdentity(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  if (node.op_type() == "Dropout" && HasInput(node, 2)) {
    auto training = ConstantInput(node, 2, true);
    if (!training.ok()) return training.status();
    if ((*training)->Elements() != 1 || (*training)->At(0) != 0) {
      return Unsupported(node, "Dropout in training mode");
    }
  }
  if ((*x)->is_constant()) {
    Value alias = **x;
    values_[node.output(0)] = std::move(alias);
    return absl::OkStatus();
  }
  return AddOp(node, RawOpKind::kIdentity, OpKind::kActivation, {(*x)->tensor},
               (*x)->onnx_dims)
      .status();
}

absl::Status Importer::ConvertShape(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  const std::vector<int64_t> in = (*x)->is_constant() ? (*x)->constant->dims : (*x)->onnx_dims;
  const auto rank = static_cast<int64_t>(in.size());
  auto start = AttrInt(node, "start", 0);
  auto end = AttrInt(node, "end", rank);
  if (!start.ok()) return start.status();
  if (!end.ok()) return end.status();
  const int64_t s = std::clamp(*start < 0 ? *start + rank : *start, int64_t{0}, rank);
  const int64_t e = std::clamp(*end < 0 ? *end + rank : *end, int64_t{0}, rank);
  ConstValue out;
  out.dtype = TensorProto::INT64;
  out.has_data = true;
  for (int64_t i = s; i < e; ++i) out.ints.push_back(in[static_cast<size_t>(i)]);
  out.dims = {static_cast<int64_t>(out.ints.size())};
  return DefineConstant(node, 0, std::move(out));
}

absl::Status Importer::ConvertGather(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto data = ConstantInput(node, 0, true);
  if (!data.ok()) return data.status();
  auto indices = ConstantInput(node, 1, true);
  if (!indices.ok()) return indices.status();
  auto axis = AttrInt(node, "axis", 0);
  if (!axis.ok()) return axis.status();
  const ConstValue& d = **data;
  const ConstValue& idx = **indices;
  if (d.dims.size() != 1 || (*axis != 0 && *axis != -1) || !idx.IsInteger()) {
    return Unsupported(node, "Gather is supported on 1-D constant vectors (shape arithmetic)");
  }
  ConstValue out;
  out.dtype = d.dtype;
  out.has_data = true;
  out.dims = idx.dims;
  const int64_t n = d.dims[0];
  for (int64_t i : idx.ints) {
    const int64_t k = i < 0 ? i + n : i;
    if (k < 0 || k >= n) {
      return NodeError(node, absl::StrCat("index ", i, " out of range for ", n, " elements"));
    }
    if (d.IsFloat()) {
      out.floats.push_back(d.floats[static_cast<size_t>(k)]);
    } else {
      out.ints.push_back(d.ints[static_cast<size_t>(k)]);
    }
  }
  return DefineConstant(node, 0, std::move(out));
}

absl::Status Importer::ConvertConstant(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  if (node.attribute_size() != 1) {
    return NodeError(node, "a Constant needs exactly one value attribute");
  }
  const AttributeProto& attr = node.attribute(0);
  ConstValue v;
  v.has_data = true;
  if (attr.name() == "value" && attr.type() == AttributeProto::TENSOR) {
    auto t = ReadTensorProto(attr.t(), options_, NodeLabel(node));
    if (!t.ok()) return t.status();
    if (!t->has_data) return NodeError(node, "a Constant cannot hold external data");
    v = *std::move(t);
  } else if (attr.name() == "value_float" && attr.type() == AttributeProto::FLOAT) {
    v.dtype = TensorProto::FLOAT;
    v.floats = {attr.f()};
  } else if (attr.name() == "value_floats" && attr.type() == AttributeProto::FLOATS) {
    v.dtype = TensorProto::FLOAT;
    v.floats.assign(attr.floats().begin(), attr.floats().end());
    v.dims = {static_cast<int64_t>(v.floats.size())};
  } else if (attr.name() == "value_int" && attr.type() == AttributeProto::INT) {
    v.dtype = TensorProto::INT64;
    v.ints = {attr.i()};
  } else if (attr.name() == "value_ints" && attr.type() == AttributeProto::INTS) {
    v.dtype = TensorProto::INT64;
    v.ints.assign(attr.ints().begin(), attr.ints().end());
    v.dims = {static_cast<int64_t>(v.ints.size())};
  } else {
    return Unsupported(node, absl::StrCat("Constant attribute '", attr.name(), "'"));
  }
  return DefineConstant(node, 0, std::move(v));
}

absl::Status Importer::ConvertCast(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto x = InputValue(node, 0);
  if (!x.ok()) return x.status();
  auto to = AttrInt(node, "to", 0);
  if (!to.ok()) return to.status();
  if (!(*x)->is_constant()) {
    if (*to != TensorProto::FLOAT) return Unsupported(node, "Cast of a tensor to non-float");
    return AddOp(node, RawOpKind::kIdentity, OpKind::kActivation, {(*x)->tensor},
                 (*x)->onnx_dims)
        .status();
  }
  const ConstValue& c = *(*x)->constant;
  if (!c.has_data) return NodeError(node, "Cast of a constant whose data is absent");
  ConstValue out;
  out.dims = c.dims;
  out.has_data = true;
  if (*to == TensorProto::FLOAT || *to == TensorProto::DOUBLE) {
    out.dtype = TensorProto::FLOAT;
    for (int64_t i = 0; i < c.Elements(); ++i) out.floats.push_back(static_cast<float>(c.At(i)));
  } else if (*to == TensorProto::INT64 || *to == TensorProto::INT32) {
    out.dtype = static_cast<int32_t>(*to);
    for (int64_t i = 0; i < c.Elements(); ++i) {
      const double d = c.At(i);
      if (!(std::abs(d) < 9.2e18)) return NodeError(node, "value out of int64 range");
      out.ints.push_back(static_cast<int64_t>(d));
    }
  } else {
    return Unsupported(node, absl::StrCat("Cast to type ", *to));
  }
  return DefineConstant(node, 0, std::move(out));
}

// Row-major strides of `dims`.
std::vector<int64_t> Strides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// out[i] = c[source(i)] for a constant of `out_dims`; `source` maps an output multi-index
// to the flat input index.
ConstValue Gathered(const ConstValue& c, std::vector<int64_t> out_dims,
                    const std::function<int64_t(const std::vector<int64_t>&)>& source) {
  ConstValue out;
  out.dtype = c.dtype;
  out.has_data = true;
  out.dims = std::move(out_dims);
  const int64_t n = out.Elements();
  std::vector<int64_t> index(out.dims.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const auto from = static_cast<size_t>(source(index));
    if (c.IsFloat()) {
      out.floats.push_back(c.floats[from]);
    } else {
      out.ints.push_back(c.ints[from]);
    }
    for (size_t a = index.size(); a-- > 0;) {
      if (++index[a] < out.dims[a]) break;
      index[a] = 0;
    }
  }
  return out;
}

absl::Status Importer::ConvertConstantOfShape(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto shape = ConstantInput(node, 0, true);
  if (!shape.ok()) return shape.status();
  if (!(*shape)->IsInteger() || (*shape)->dims.size() != 1) {
    return NodeError(node, "the shape input must be a 1-D integer tensor");
  }
  ConstValue out;
  out.dims = (*shape)->ints;
  if (absl::Status s = CheckDims(NodeLabel(node) + " output", out.dims);
      !s.ok() && !out.dims.empty()) {
    return s;
  }
  out.has_data = true;
  out.dtype = TensorProto::FLOAT;
  double fill = 0.0;
  if (const AttributeProto* attr = FindAttr(node, "value"); attr != nullptr) {
    if (attr->type() != AttributeProto::TENSOR) return NodeError(node, "'value' must be a tensor");
    auto value = ReadTensorProto(attr->t(), options_, NodeLabel(node));
    if (!value.ok()) return value.status();
    if (!value->has_data || value->Elements() != 1) {
      return NodeError(node, "'value' must hold one element");
    }
    out.dtype = value->IsFloat() ? TensorProto::FLOAT : value->dtype;
    fill = value->At(0);
  }
  const auto n = static_cast<size_t>(out.Elements());
  if (out.IsFloat()) {
    out.floats.assign(n, static_cast<float>(fill));
  } else {
    out.ints.assign(n, static_cast<int64_t>(fill));
  }
  return DefineConstant(node, 0, std::move(out));
}

absl::Status Importer::ConvertSlice(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto data = InputValue(node, 0);
  if (!data.ok()) return data.status();
  if (!(*data)->is_constant()) {
    return Unsupported(node, "Slice is supported only in constant (shape) expressions");
  }
  const ConstValue& c = *(*data)->constant;
  if (!c.has_data) return NodeError(node, "Slice of a constant whose data is absent");
  const auto rank = static_cast<int64_t>(c.dims.size());
  std::vector<int64_t> starts, ends, axes, steps;
  if (opset_ < 10) {
    auto s = AttrInts(node, "starts", {});
    auto e = AttrInts(node, "ends", {});
    auto a = AttrInts(node, "axes", {});
    for (const absl::Status& st : {s.status(), e.status(), a.status()}) {
      if (!st.ok()) return st;
    }
    starts = *s;
    ends = *e;
    axes = *a;
  } else {
    std::vector<int64_t>* targets[4] = {&starts, &ends, &axes, &steps};
    for (int i = 1; i <= 4; ++i) {
      if (!HasInput(node, i)) continue;
      auto v = ConstantInput(node, i, true);
      if (!v.ok()) return v.status();
      if (!(*v)->IsInteger()) return NodeError(node, "slice parameters must be integers");
      *targets[i - 1] = (*v)->ints;
    }
  }
  if (axes.empty()) {
    for (int64_t a = 0; a < static_cast<int64_t>(starts.size()); ++a) axes.push_back(a);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (starts.size() != ends.size() || axes.size() != starts.size() ||
      steps.size() != starts.size()) {
    return NodeError(node, "starts, ends, axes and steps differ in length");
  }
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1);
  std::vector<int64_t> out_dims = c.dims;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || steps[i] == 0) {
      return NodeError(node, absl::StrCat("invalid axis ", axes[i], " or step ", steps[i]));
    }
    const int64_t dim = c.dims[static_cast<size_t>(axis)];
    int64_t s = starts[i], e = ends[i];
    // Clamp before adding `dim` so that INT64 sentinels cannot overflow.
    s = std::clamp(s, -dim - 1, dim + 1);
    e = std::clamp(e, -dim - 1, dim + 1);
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    int64_t count;
    if (steps[i] > 0) {
      s = std::clamp(s, int64_t{0}, dim);
      e = std::clamp(e, int64_t{0}, dim);
      count = e > s ? (e - s + steps[i] - 1) / steps[i] : 0;
    } else {
      s = std::clamp(s, int64_t{0}, dim - 1);
      e = std::clamp(e, int64_t{-1}, dim - 1);
      count = s > e ? (s - e - steps[i] - 1) / -steps[i] : 0;
    }
    begin[static_cast<size_t>(axis)] = s;
    step[static_cast<size_t>(axis)] = steps[i];
    out_dims[static_cast<size_t>(axis)] = count;
  }
  const std::vector<int64_t> strides = Strides(c.dims);
  return DefineConstant(node, 0, Gathered(c, out_dims, [&](const std::vector<int64_t>& index) {
                          int64_t flat = 0;
                          for (size_t a = 0; a < index.size(); ++a) {
                            flat += (begin[a] + index[a] * step[a]) * strides[a];
                          }
                          return flat;
                        }));
}

absl::Status Importer::ConvertTranspose(const NodeProto& node) {
  if (absl::Status s = CheckOutputs(node, 1); !s.ok()) return s;
  auto data = InputValue(node, 0);
  if (!data.ok()) return data.status();
  if (!(*data)->is_constant()) {
    return Unsupported(node, "Transpose is supported only in constant (shape) expressions");
  }
  const ConstValue& c = *(*data)->constant;
  if (!c.has_data) return NodeError(node, "Transpose of a constant whose data is absent");
  const auto rank = static_cast<int64_t>(c.dims.size());
  std::vector<int64_t> reversed;
  for (int64_t a = rank - 1; a >= 0; --a) reversed.push_back(a);
  auto perm = AttrInts(node, "perm", reversed);
  if (!perm.ok()) return perm.status();
  std::vector<bool> seen(static_cast<size_t>(rank), false);
  if (static_cast<int64_t>(perm->size()) != rank) return NodeError(node, "perm has the wrong length");
  for (int64_t p : *perm) {
    if (p < 0 || p >= rank || seen[static_cast<size_t>(p)]) {
      return NodeError(node, absl::StrCat("invalid perm ", DimsString(*perm)));
    }
    seen[static_cast<size_t>(p)] = true;
  }
  std::vector<int64_t> out_dims;
  for (int64_t p : *perm) out_dims.push_back(c.dims[static_cast<size_t>(p)]);
  const std::vector<int64_t> strides = Strides(c.dims);
  return DefineConstant(node, 0, Gathered(c, out_dims, [&](const std::vector<int64_t>& index) {
                          int64_t flat = 0;
                          for (size_t a = 0; a < index.size(); ++a) {
                            flat += index[a] * strides[static_cast<size_t>((*perm)[a])];
                          }
                          return flat;
                        }));
}

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ONNX file '", path, "'"));
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat("error reading '", path, "'"));
  return std::move(contents).str();
}

}  // namespace

absl::StatusOr<RawGraph> ImportOnnxRaw(std::string_view bytes, const ImportOptions& options) {
  Importer importer(options);
  auto graph = importer.Run(bytes);
  if (graph.ok() && !options.name.empty()) graph->name = options.name;
  return graph;
}

absl::StatusOr<Graph> ImportOnnx(std::string_view bytes, const ImportOptions& options) {
  auto raw = ImportOnnxRaw(bytes, options);
  if (!raw.ok()) return raw.status();
  auto graph = Canonicalize(*std::move(raw));
  if (!graph.ok()) return graph.status();
  if (options.synthesize_weights) {
    SynthesizeWeights(options.seed, &*graph);
  } else if (!graph->has_weights) {
    for (Constant& c : graph->constants) c.data.clear();
  }
  return graph;
}

absl::StatusOr<Graph> ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  ImportOptions file_options = options;
  if (file_options.name.empty()) {
    std::string stem = path.substr(path.find_last_of('/') + 1);
    if (const size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
    file_options.name = stem;
  }
  auto graph = ImportOnnx(*bytes, file_options);
  if (!graph.ok()) {
    return absl::Status(graph.status().code(),
                        absl::StrCat(path, ": ", graph.status().message()));
  }
  return graph;
}

}  // namespace psched::model
