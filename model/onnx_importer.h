// The ONNX importer's internals behind ImportOnnxRaw (onnx_import.h): the Importer that reads
// one ModelProto into a RawGraph, and the constant values it folds shape sub-graphs with. The
// Importer's member functions are spread over files by concern:
//   onnx_graph_reader.cc      the model header, initializers, graph inputs, node order, the
//                             operator table, graph outputs, ONNX shape inference as a check
//   onnx_node_inputs.cc       reading a node: attributes, inputs, output use, shape limits
//   onnx_graph_builder.cc     writing the RawGraph: activations, ops, constants in canonical
//                             layouts (NCHW -> NHWC, OIHW -> OHWI)
//   onnx_tensor_data.cc       TensorProto data (raw and typed fields) -> ConstValue
//   onnx_nn_ops.cc            conv, pooling, Gemm/MatMul, BatchNorm, activations, softmax,
//                             element-wise arithmetic
//   onnx_conv_transpose.cc    ConvTranspose: output extent, pads, weight layout
//   onnx_layout_ops.cc        concat, pad, resize, the reshape family, identity
//   onnx_tensor_ops.cc        the general tensor ops: transpose, matmul between activations,
//                             layer norm, reductions, division, unary math, slice/gather/split,
//                             and the layout conversions between channels-last and row-major
//   onnx_constant_folding.cc  shape sub-graphs evaluated at import (Shape, Gather, Constant,
//                             Cast, ConstantOfShape, Slice, Transpose, constant arithmetic)
//   onnx_constant_eval.cc     any node of the evaluable set whose inputs are all constants
//                             (masks: Equal, Where, Range, Mod, ScatterND; constant MatMul)
//   onnx_einsum.cc            two-operand Einsum as transposes, reshapes and one MatMul
//   onnx_conv1d.cc            Conv on [1,C,L] as a conv2d of height 1
//   onnx_where.cc             Where with a constant mask (masked_fill) as multiply-add
// Internal to model/. An Importer reads one model once, on one thread.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "model/graph.h"
#include "model/onnx_import.h"
#include "model/raw_graph.h"

namespace psched::model::onnx_importer {

using onnx::AttributeProto;
using onnx::NodeProto;
using onnx::TensorProto;

// A constant value: an initializer, a Constant node's output or a folded shape computation.
struct ConstValue {
  std::string name;
  std::vector<int64_t> dims;
  int32_t dtype = TensorProto::UNDEFINED;
  bool has_data = false;
  std::vector<float> floats;  // dtype FLOAT (or DOUBLE converted)
  std::vector<int64_t> ints;  // integer dtypes
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
    return IsFloat() ? floats[static_cast<size_t>(i)]
                     : static_cast<double>(ints[static_cast<size_t>(i)]);
  }
};
using ConstPtr = std::shared_ptr<const ConstValue>;

// What an ONNX value name stands for while the graph is read.
struct Value {
  TensorId tensor = kInvalidId;  // an activation tensor ...
  std::vector<int64_t> onnx_dims;
  bool channels_last = false;  // the tensor's layout (model/graph.h)
  ConstPtr constant;  // ... or a constant
  bool is_constant() const { return constant != nullptr; }
};

// "[1,3,224,224]".
std::string DimsString(const std::vector<int64_t>& dims);
// "FLOAT16 (10)".
std::string DtypeName(int32_t dtype);
// "node 'conv1' (Conv)": the node's name, else its first output's.
std::string NodeLabel(const NodeProto& node);

// The data of `t` (onnx_tensor_data.cc). External data is left absent (has_data false);
// errors name `where` and the tensor.
absl::StatusOr<ConstValue> ReadTensorProto(const TensorProto& t, const ImportOptions& options,
                                           absl::string_view where);

// Physical dims of ONNX `dims` in a layout: channels-last moves axis 1 to the end.
std::vector<int64_t> PhysicalOf(const std::vector<int64_t>& onnx_dims, bool channels_last);
// The layout a tensor of these ONNX dims gets when nothing asks otherwise: channels-last for
// [1,C,H,W], row-major for everything else.
bool DefaultChannelsLast(const std::vector<int64_t>& onnx_dims);

// Constant folding helpers (onnx_constant_folding.cc).
// Numpy-style broadcast of two shapes; false when they are incompatible.
bool Broadcast(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
               std::vector<int64_t>* out);
// Folds a binary op ("Add", "Sub", "Mul", "Div") on two constants (shape arithmetic); same
// dims or a scalar operand.
absl::StatusOr<ConstValue> FoldBinary(const ConstValue& a, const ConstValue& b,
                                      const std::string& op);

// The ONNX operators with a handler (onnx_graph_reader.cc) and those evaluated only on
// constants (onnx_constant_eval.cc); onnx_op_table.h documents their union.
std::vector<std::string_view> HandledOnnxOps();
std::vector<std::string_view> ConstantEvaluableOps();
bool IsConstantEvaluable(std::string_view op_type);

class Importer {
 public:
  using Handler = absl::Status (Importer::*)(const NodeProto&);

  explicit Importer(const ImportOptions& options) : options_(options) {}

  absl::StatusOr<RawGraph> Run(std::string_view bytes);
  // The operator table: ONNX op type -> the member that converts it.
  static const std::unordered_map<std::string_view, Handler>& Handlers();

 private:

  absl::Status CheckHeader();
  absl::Status ReadInitializers();
  absl::Status ReadInputs();
  absl::Status SortNodes(std::vector<const NodeProto*>* order);
  absl::Status ReadOutputs();
  absl::Status CrossCheckShapes();

  // Evaluates `node` when its operator is in the evaluable set and all its inputs are
  // constants with data; false when it is not such a node (onnx_constant_eval.cc).
  absl::StatusOr<bool> FoldConstantNode(const NodeProto& node);
  absl::StatusOr<ConstValue> FoldBroadcast(const NodeProto& node, const std::vector<ConstPtr>& in);
  absl::StatusOr<ConstValue> FoldRange(const NodeProto& node, const std::vector<ConstPtr>& in);
  absl::StatusOr<ConstValue> FoldMatMul(const NodeProto& node, const std::vector<ConstPtr>& in);
  absl::StatusOr<ConstValue> FoldScatterND(const NodeProto& node, const std::vector<ConstPtr>& in);
  absl::StatusOr<ConstValue> FoldConcat(const NodeProto& node, const std::vector<ConstPtr>& in);

  // Operator handlers.
  absl::Status ConvertConv(const NodeProto& node);
  absl::Status ConvertConv1d(const NodeProto& node, const Value& x);  // onnx_conv1d.cc
  absl::Status ConvertConvTranspose(const NodeProto& node);  // onnx_conv_transpose.cc
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
  // onnx_tensor_ops.cc
  absl::Status ConvertLayerNorm(const NodeProto& node);
  absl::Status ConvertReduce(const NodeProto& node);
  absl::Status ConvertUnary(const NodeProto& node);
  absl::Status ConvertPow(const NodeProto& node);
  absl::Status ConvertSplit(const NodeProto& node);
  absl::Status ConvertExpand(const NodeProto& node);
  absl::Status ConvertEinsum(const NodeProto& node);  // onnx_einsum.cc
  absl::Status ConvertWhere(const NodeProto& node);   // onnx_where.cc
  absl::Status MatMulOfActivations(const NodeProto& node, const Value& a, const Value& b);
  absl::Status FullyConnectedRows(const NodeProto& node, const Value& x, const ConstValue& weight,
                                  bool trans_b, float alpha, const ConstValue* bias, float beta);
  absl::Status TransposeActivation(const NodeProto& node, const Value& x,
                                   const std::vector<int64_t>& perm);
  absl::Status SliceActivation(const NodeProto& node, int output_index, const Value& x,
                               const std::vector<int64_t>& begin, const std::vector<int64_t>& step,
                               const std::vector<int64_t>& sizes,
                               std::vector<int64_t> out_onnx_dims);
  absl::Status GatherActivation(const NodeProto& node, const Value& x);
  absl::Status ConcatGeneral(const NodeProto& node, const std::vector<const Value*>& inputs,
                             int64_t axis);
  absl::Status BinaryOp(const NodeProto& node, OpKind kind, const Value& a, const Value& b);
  // Errors.
  absl::Status NodeError(const NodeProto& node, absl::string_view message) const {
    return absl::InvalidArgumentError(absl::StrCat(NodeLabel(node), ": ", message));
  }
  absl::Status Unsupported(const NodeProto& node, absl::string_view message) const {
    return absl::UnimplementedError(absl::StrCat(NodeLabel(node), ": ", message));
  }

  // Attributes.
  const AttributeProto* FindAttr(const NodeProto& node, absl::string_view name) const;
  absl::StatusOr<int64_t> AttrInt(const NodeProto& node, absl::string_view name,
                                  int64_t fallback) const;
  absl::StatusOr<float> AttrFloat(const NodeProto& node, absl::string_view name,
                                  float fallback) const;
  absl::StatusOr<std::string> AttrString(const NodeProto& node, absl::string_view name,
                                         std::string fallback) const;
  absl::StatusOr<std::vector<int64_t>> AttrInts(const NodeProto& node, absl::string_view name,
                                                std::vector<int64_t> fallback) const;
  absl::StatusOr<std::vector<float>> AttrFloats(const NodeProto& node,
                                                absl::string_view name) const;

  // Inputs and outputs.
  bool HasInput(const NodeProto& node, int index) const {
    return index < node.input_size() && !node.input(index).empty();
  }
  absl::StatusOr<const Value*> InputValue(const NodeProto& node, int index) const;
  absl::StatusOr<const Value*> ActivationInput(const NodeProto& node, int index) const;
  absl::StatusOr<ConstPtr> ConstantInput(const NodeProto& node, int index, bool need_data) const;
  // The `axes` of a Reduce*/Squeeze/Unsqueeze node: its constant input 1 when the opset moved
  // them there (`as_input`), else its attribute; empty when absent.
  absl::StatusOr<std::vector<int64_t>> Axes(const NodeProto& node, bool as_input) const;
  absl::Status CheckOutputs(const NodeProto& node, int max_used) const;

  // Shapes and limits.
  absl::Status CheckDims(absl::string_view what, const std::vector<int64_t>& dims) const;

  // Graph building. A new activation's layout defaults to DefaultChannelsLast(onnx_dims).
  absl::StatusOr<TensorId> NewActivation(const std::string& name,
                                         const std::vector<int64_t>& onnx_dims,
                                         bool channels_last);
  absl::StatusOr<TensorId> DefineActivation(const NodeProto& node, int output_index,
                                            std::vector<int64_t> onnx_dims,
                                            std::optional<bool> channels_last = std::nullopt);
  OpId AppendOp(const NodeProto& node, std::string name, RawOpKind raw_kind, OpKind kind,
                std::vector<TensorId> inputs, TensorId output, OpAttrs attrs);
  // The value as a row-major or channels-last tensor: itself when it already is one, else
  // the output of a layout op added once per tensor and layout.
  absl::StatusOr<Value> AsRowMajor(const NodeProto& node, const Value& v);
  absl::StatusOr<Value> AsChannelsLast(const NodeProto& node, const Value& v);
  // AsRowMajor, then a copy when the tensor's physical dims differ from the value's ONNX dims
  // in leading 1s (an identity reshape aliases [1,1,K] and [1,K]): for ops whose attributes
  // index input axes (reduce, slice, concat).
  absl::StatusOr<Value> AsExactRowMajor(const NodeProto& node, const Value& v);
  // ActivationInput as a channels-last [1,C,H,W] image (convolution, pooling, resize).
  absl::StatusOr<Value> ImageInput(const NodeProto& node, int index);
  // An identity when `x` already holds `out_onnx_dims` in its element order under the same
  // three-axis view, else a row-major copy (kReshape).
  absl::Status ReshapeRowMajor(const NodeProto& node, const Value& x,
                               std::vector<int64_t> out_onnx_dims);
  // A constant as a row-major operand tensor of `rank` axes (leading 1s added).
  TensorId RowMajorConstant(const ConstValue& c, size_t rank);
  absl::Status DefineConstant(const NodeProto& node, int output_index, ConstValue value);
  absl::StatusOr<TensorId> AddOp(const NodeProto& node, RawOpKind raw_kind, OpKind kind,
                                 std::vector<TensorId> inputs, std::vector<int64_t> out_dims,
                                 OpAttrs attrs = {},
                                 std::optional<bool> channels_last = std::nullopt);
  // One row-major step of a node lowered to several ops; its tensor is named after the
  // node's first output and `suffix`.
  absl::StatusOr<Value> AddStep(const NodeProto& node, absl::string_view suffix, OpKind kind,
                                std::vector<TensorId> inputs, std::vector<int64_t> onnx_dims,
                                OpAttrs attrs = {});
  ConstantId AddConstant(const std::string& key, std::string name, std::vector<int64_t> dims,
                         bool has_data, const std::function<std::vector<float>()>& data);
  ConstantId FilterConstant(const ConstValue& w);
  // A ConvTranspose weight [C, M/groups, kH, kW] in ConvAttrs' OHWI layout.
  ConstantId TransposedFilterConstant(const ConstValue& w, int64_t groups);
  ConstantId VectorConstant(const ConstValue& v, int64_t length);
  TensorId ConstantOperand(const ConstValue& c, const std::vector<int64_t>& act_dims);
  absl::Status ReshapeTo(const NodeProto& node, const Value& input, std::vector<int64_t> target);
  absl::Status ResolveWindow(const NodeProto& node, const std::vector<int64_t>& in_dims,
                             int64_t kernel_h, int64_t kernel_w, bool allow_ceil, Window2d* window,
                             std::vector<int64_t>* out_hw, int32_t* declared_pad_bottom,
                             int32_t* declared_pad_right);

  const ImportOptions& options_;
  onnx::ModelProto model_;
  int64_t opset_ = 0;
  RawGraph graph_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, const NodeProto*> producer_node_;
  std::unordered_map<std::string, ConstantId> constant_cache_;
  std::unordered_map<TensorId, Value> row_major_of_, channels_last_of_, exact_of_;
  bool weights_missing_ = false;
};

}  // namespace psched::model::onnx_importer
