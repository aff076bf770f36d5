#include <onnx/shape_inference/implementation.h>

#include <exception>
#include <queue>
#include <unordered_set>
#include <utility>

#include "model/onnx_importer.h"
#include "model/onnx_input_binding.h"

namespace psched::model::onnx_importer {
namespace {

constexpr int64_t kMinOpset = 7;
constexpr int64_t kMaxOpset = 17;

}  // namespace

const std::unordered_map<std::string_view, Importer::Handler>& Importer::Handlers() {
  static const auto* handlers = new std::unordered_map<std::string_view, Handler>{
      {"Conv", &Importer::ConvertConv},
      {"ConvTranspose", &Importer::ConvertConvTranspose},
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
      {"LayerNormalization", &Importer::ConvertLayerNorm},
      {"ReduceMean", &Importer::ConvertReduce},
      {"ReduceSum", &Importer::ConvertReduce},
      {"ReduceMax", &Importer::ConvertReduce},
      {"ReduceL2", &Importer::ConvertReduce},
      {"Einsum", &Importer::ConvertEinsum},
      {"Where", &Importer::ConvertWhere},
      {"Tanh", &Importer::ConvertUnary},
      {"Erf", &Importer::ConvertUnary},
      {"Exp", &Importer::ConvertUnary},
      {"Log", &Importer::ConvertUnary},
      {"Sqrt", &Importer::ConvertUnary},
      {"Reciprocal", &Importer::ConvertUnary},
      {"Neg", &Importer::ConvertUnary},
      {"Abs", &Importer::ConvertUnary},
      {"Gelu", &Importer::ConvertUnary},
      {"Pow", &Importer::ConvertPow},
      {"Split", &Importer::ConvertSplit},
      {"Expand", &Importer::ConvertExpand},
  };
  return *handlers;
}

std::vector<std::string_view> HandledOnnxOps() {
  std::vector<std::string_view> ops;
  for (const auto& [op, handler] : Importer::Handlers()) ops.push_back(op);
  return ops;
}

absl::StatusOr<RawGraph> Importer::Run(std::string_view bytes) {
  if (static_cast<int64_t>(bytes.size()) > options_.max_model_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("ONNX model is ", bytes.size(),
                                                     " bytes, more than max_model_bytes (",
                                                     options_.max_model_bytes, ")"));
  }
  if (bytes.empty()) return absl::InvalidArgumentError("ONNX model is empty (0 bytes)");
  if (!model_.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a valid ONNX model: protobuf parsing failed on ", bytes.size(),
                     " bytes (truncated or not an ONNX file?)"));
  }
  if (absl::Status s = CheckHeader(); !s.ok()) return s;
  graph_.name = model_.graph().name();
  if (absl::Status s = ReadInitializers(); !s.ok()) return s;
  if (absl::Status s = ReadInputs(); !s.ok()) return s;
  std::vector<const NodeProto*> order;
  if (absl::Status s = SortNodes(&order); !s.ok()) return s;

  for (const NodeProto* node : order) {
    auto folded = FoldConstantNode(*node);
    if (!folded.ok()) return folded.status();
    if (*folded) continue;
    auto it = Handlers().find(node->op_type());
    if (it == Handlers().end()) {
      if (IsConstantEvaluable(node->op_type())) {
        return Unsupported(*node, absl::StrCat("'", node->op_type(),
                                               "' is read only when all its inputs are constants "
                                               "(masks, shape arithmetic); here one is computed"));
      }
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
    if (t.name().empty())
      return absl::InvalidArgumentError("ONNX graph has an unnamed initializer");
    auto value = ReadTensorProto(t, options_, "initializer");
    if (!value.ok()) return value.status();
    Value v;
    v.constant = std::make_shared<const ConstValue>(*std::move(value));
    values_[t.name()] = std::move(v);
  }
  return absl::OkStatus();
}

absl::Status Importer::ReadInputs() {
  if (absl::Status s = BindInputShapes(options_.input_shapes, model_.mutable_graph()); !s.ok()) {
    return s;
  }
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
    if (dims.empty() || dims.size() > 6) {
      return absl::UnimplementedError(absl::StrCat(where, " has rank ", dims.size(), " ",
                                                   DimsString(dims),
                                                   "; psched reads tensors of rank 1 to 6"));
    }
    if (dims.size() == 4 && dims[0] != 1) {
      return absl::UnimplementedError(absl::StrCat(where, " has batch size ", dims[0], " ",
                                                   DimsString(dims), "; psched runs batch 1"));
    }
    auto id = NewActivation(input.name(), dims, DefaultChannelsLast(dims));
    if (!id.ok()) return id.status();
    graph_.inputs.push_back(GraphIO{*id, input.name(), dims});
    Value v;
    v.tensor = *id;
    v.channels_last = DefaultChannelsLast(dims);
    v.onnx_dims = std::move(dims);
    values_[input.name()] = std::move(v);
  }
  if (graph_.inputs.empty())
    return absl::InvalidArgumentError("ONNX graph has no (non-initializer) input");
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
        return absl::InvalidArgumentError(absl::StrCat(where, " has element type ",
                                                       DtypeName(tensor_type.elem_type()),
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
          return absl::InvalidArgumentError(
              absl::StrCat("inconsistent shapes: ", where, " declares ", DimsString(dims),
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

}  // namespace psched::model::onnx_importer
