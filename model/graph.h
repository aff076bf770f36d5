// The canonical graph IR every other module works on.
//
// A Graph is an immutable-after-import DAG of canonical ops (see op_kinds.inc) over f32
// activation tensors of rank 1 to 6. Each tensor has physical dims (`Tensor::dims`, in
// storage order) and one of two layouts: channels-last, for the image tensors convolutions
// and pooling work on (ONNX [1,C,H,W] stored as [1,H,W,C], ONNX [1,C,L] as [1,L,C]), or
// row-major, where storage order is the ONNX order. Every change of layout is an op of its
// own (kTranspose), so the scheduler sees and costs it.
//
// Every tensor also has a three-axis view, `Shape{h, w, c}`, the unit the convolution
// kernels, the split axes and the latency features work in: a channels-last image is
// {H, W, C}; a row-major tensor is {rows, 1, last dim}, rows the product of the other dims
// (so [1, K] is {1, 1, K}). `ops` is stored in a topological order and op ids are indices
// into it, so schedulers can use plain vectors indexed by OpId.
//
// Weights live in `constants`. A graph imported for planning only (graph-only ONNX, weights
// absent) has `has_weights == false` and every Constant's `data` empty; shapes are still
// exact. Ownership: a Graph owns all its data; it is cheap to move and safe to share
// read-only across threads.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace psched::model {

enum class OpKind : uint8_t {
#define PSCHED_OP(kind, name, partitionable) kind,
#include "model/op_kinds.inc"
#undef PSCHED_OP
};
inline constexpr int kNumOpKinds = 0
#define PSCHED_OP(kind, name, partitionable) +1
#include "model/op_kinds.inc"
#undef PSCHED_OP
    ;

std::string_view OpKindName(OpKind kind);
std::optional<OpKind> OpKindFromName(std::string_view name);
// Whether ops of `kind` may be split across devices (paper sec. 2.2); model::WorkSize says
// along which axes a given op can.
bool IsPartitionable(OpKind kind);

using TensorId = int32_t;
using OpId = int32_t;
using ConstantId = int32_t;
inline constexpr int32_t kInvalidId = -1;

// NHWC extent of a batch-1 tensor.
struct Shape {
  int64_t h = 1;
  int64_t w = 1;
  int64_t c = 1;
  int64_t Elements() const { return h * w * c; }
  bool operator==(const Shape&) const = default;
};

// Element-wise functions. The first six fuse into the producing op where kernels can; the
// rest come from transformer and modern CNN graphs (kGelu is x * Phi(x) with the exact erf,
// kPow raises to `alpha`).
enum class ActivationKind : uint8_t {
  kNone,
  kRelu,
  kClip,
  kSigmoid,
  kHardSigmoid,
  kHardSwish,
  kSilu,
  kGelu,
  kTanh,
  kErf,
  kExp,
  kLog,
  kSqrt,
  kReciprocal,
  kNeg,
  kAbs,
  kPow,
};
// An element-wise activation, fused into its producer or standing alone (kActivation).
struct Activation {
  ActivationKind kind = ActivationKind::kNone;
  float min = -std::numeric_limits<float>::infinity();  // kClip (Relu6: 0, 6)
  float max = std::numeric_limits<float>::infinity();
  float alpha = 0.2f;  // kHardSigmoid: max(0, min(1, alpha * x + beta)); kPow: the exponent
  float beta = 0.5f;
  bool operator==(const Activation&) const = default;
};

struct Window2d {
  int32_t kernel_h = 1, kernel_w = 1;
  int32_t stride_h = 1, stride_w = 1;
  int32_t dilation_h = 1, dilation_w = 1;
  int32_t pad_top = 0, pad_left = 0, pad_bottom = 0, pad_right = 0;
  bool operator==(const Window2d&) const = default;
};

// kConv2d and kConvTranspose2d. Filter constant is OHWI: [cout][kernel_h][kernel_w][cin /
// groups], output channel o in group o / (cout / groups); bias [cout]. Both kinds share the
// struct so weight handling (batch-norm folding, synthetic weights, constant remapping) is
// written once.
//
// For kConvTranspose2d input pixel (iy, ix) scatters into output pixel
// (iy * stride - pad_top + ky * dilation, ...): the window's pads crop the full transposed
// output, and output_padding adds rows/columns at the bottom/right, so
// out = (in - 1) * stride + (kernel - 1) * dilation + 1 + output_padding - pad_begin - pad_end.
struct ConvAttrs {
  Window2d window;
  int32_t groups = 1;
  ConstantId filter = kInvalidId;
  ConstantId bias = kInvalidId;  // kInvalidId: no bias
  int32_t output_padding_h = 0, output_padding_w = 0;  // kConvTranspose2d only; 0 for kConv2d
};

// kFullyConnected. Weight constant is [out_features][in_features]; bias [out_features].
struct FullyConnectedAttrs {
  ConstantId weight = kInvalidId;
  ConstantId bias = kInvalidId;
};

// kMaxPool / kAvgPool. ceil_mode is already resolved into the output shape; the extra
// bottom/right rows it implies are folded into pad_bottom/pad_right, and
// `count_include_pad` then counts only the declared (ONNX) padding, as ONNX does.
struct PoolAttrs {
  Window2d window;
  bool count_include_pad = false;
  int32_t declared_pad_bottom = 0;  // ONNX pads before ceil_mode extension
  int32_t declared_pad_right = 0;
};

// kPad: constant padding on h, w and c.
struct PadAttrs {
  int32_t top = 0, left = 0, bottom = 0, right = 0;
  int32_t channels_before = 0, channels_after = 0;
  float value = 0.0f;
};

enum class ResizeMode : uint8_t { kNearest, kLinear };
enum class CoordinateTransform : uint8_t { kHalfPixel, kAsymmetric, kAlignCorners, kPytorchHalfPixel };
enum class NearestRounding : uint8_t { kRoundPreferFloor, kRoundPreferCeil, kFloor, kCeil };

// kResize. Output size is the output tensor's shape; scales are out/in per axis.
struct ResizeAttrs {
  ResizeMode mode = ResizeMode::kNearest;
  CoordinateTransform transform = CoordinateTransform::kAsymmetric;
  NearestRounding rounding = NearestRounding::kFloor;
  float scale_h = 1.0f, scale_w = 1.0f;
};

// kConcat. Concatenates along physical axis `axis` of the output; -1 is the last axis (the
// channels of a channels-last image), the only axis whose inputs may be written in place.
struct ConcatAttrs {
  int32_t axis = -1;
};

// kTranspose. Reads its input as a row-major tensor of `in_dims` (same element count as the
// input tensor: a reshape before it folds into this view) and writes output axis i from
// input axis perm[i], contiguously (a reshape after it folds into the output tensor's dims).
struct TransposeAttrs {
  std::vector<int64_t> in_dims;
  std::vector<int32_t> perm;
};

// kSlice. Output element (i_0, ..., i_r) = input (start_0 + i_0 * step_0, ...), over the
// input's physical axes; `sizes` is the extent taken per axis. Gather with a constant index
// and Split are slices. The output tensor may drop axes of extent 1 (same element order).
struct SliceAttrs {
  std::vector<int64_t> starts;
  std::vector<int64_t> steps;
  std::vector<int64_t> sizes;
};

// kLayerNorm: (x - mean) / sqrt(variance + epsilon) * scale + bias over the last physical axis.
struct LayerNormAttrs {
  float epsilon = 1e-5f;
  ConstantId scale = kInvalidId;  // [last]
  ConstantId bias = kInvalidId;   // [last] or kInvalidId
};

enum class ReduceKind : uint8_t { kMean, kSum, kMax };

// kReduce over the physical input axes in `axes` (ascending). The output has the input's
// element order with those axes dropped or kept as 1.
struct ReduceAttrs {
  ReduceKind reduce = ReduceKind::kMean;
  std::vector<int32_t> axes;
};

using OpAttrs = std::variant<std::monostate, ConvAttrs, FullyConnectedAttrs, PoolAttrs, PadAttrs,
                             ResizeAttrs, ConcatAttrs, TransposeAttrs, SliceAttrs, LayerNormAttrs,
                             ReduceAttrs>;

struct Op {
  std::string name;  // the ONNX node name (or its output's name when the node has none)
  OpKind kind = OpKind::kActivation;
  // Inputs in ONNX order; for the binary kinds, kMatMul and kConcat inputs may be constant
  // tensors (see Tensor::constant). kConcat concatenates along ConcatAttrs::axis.
  std::vector<TensorId> inputs;
  TensorId output = kInvalidId;
  Activation activation;  // fused output activation (the op itself for kActivation)
  OpAttrs attrs;
};

struct Tensor {
  std::string name;
  Shape shape;                    // the three-axis view (see the top of this file)
  int32_t onnx_rank = 4;          // the ONNX rank: 4 for [1,C,H,W], 2 for [1,K]
  OpId producer = kInvalidId;          // kInvalidId for graph inputs and constants
  ConstantId constant = kInvalidId;    // set when the tensor is a constant operand
  // Physical dims in storage order; empty means {shape.h, shape.w, shape.c} (graphs built
  // by hand in tests and calibration). Use PhysicalDims().
  std::vector<int64_t> dims;
  bool channels_last = true;  // an image in channels-last layout (else row-major)
};

// `t.dims`, or the three-axis view for tensors built without dims.
std::vector<int64_t> PhysicalDims(const Tensor& t);
// The three-axis view of a tensor with physical `dims` (see the top of this file).
Shape ViewOf(const std::vector<int64_t>& dims, bool channels_last);
int64_t ElementsOf(const std::vector<int64_t>& dims);

// Constant data in canonical layout (see the attrs above); `dims` as stored.
struct Constant {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> data;  // empty when the model has no weights
  int64_t Elements() const;
};

// A graph input or output with the shape the ONNX model declares (NCHW: [1,C,H,W]).
struct GraphIO {
  TensorId tensor = kInvalidId;
  std::string name;
  std::vector<int64_t> onnx_dims;
};

struct Graph {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<Op> ops;  // topological order; OpId indexes this vector
  std::vector<Constant> constants;
  std::vector<GraphIO> inputs;
  std::vector<GraphIO> outputs;
  bool has_weights = false;

  const Tensor& tensor(TensorId id) const { return tensors[static_cast<size_t>(id)]; }
  const Op& op(OpId id) const { return ops[static_cast<size_t>(id)]; }
  const Shape& output_shape(OpId id) const { return tensor(op(id).output).shape; }
  // Activation (non-constant) inputs of an op.
  std::vector<TensorId> ActivationInputs(OpId id) const;
  // Ops that consume an op's output / produce an op's activation inputs (deduplicated,
  // ascending). O(inputs) per call; cache them when calling in a loop.
  std::vector<OpId> Predecessors(OpId id) const;
  std::vector<std::vector<OpId>> AllSuccessors() const;
};

}  // namespace psched::model
