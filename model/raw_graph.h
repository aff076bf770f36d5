// RawGraph: the ONNX importer's output before canonicalisation.
//
// It uses the canonical IR's tensors, constants and layout (NHWC, OHWI filters, [out][in]
// FC weights), but its ops may still be ONNX-level constructs the canonical graph never
// contains: BatchNormalization and Identity (Dropout included). Canonicalize() turns a
// RawGraph into a Graph. Shape sub-graphs (Shape, Gather, Unsqueeze, ...) never reach a
// RawGraph: the importer evaluates them while it reads the model. A plain value type;
// thread-compatible.
#pragma once

#include <string>
#include <vector>

#include "model/graph.h"

namespace psched::model {

enum class RawOpKind : uint8_t {
  kCanonical,  // `op` is a canonical op as it will appear in the Graph
  kBatchNorm,  // per-channel y = (x - mean) * scale / sqrt(variance + epsilon) + bias
  kIdentity,   // y = x (ONNX Identity, Dropout in inference, a no-op Reshape/Flatten)
};

// Constants of an inference-mode BatchNormalization; each has dims [C].
struct BatchNormParams {
  ConstantId scale = kInvalidId;
  ConstantId bias = kInvalidId;
  ConstantId mean = kInvalidId;
  ConstantId variance = kInvalidId;
  float epsilon = 1e-5f;
};

struct RawOp {
  RawOpKind raw_kind = RawOpKind::kCanonical;
  // For kBatchNorm and kIdentity only name, inputs (one activation) and output are used.
  Op op;
  BatchNormParams batch_norm;  // kBatchNorm only
  std::string onnx_op_type;    // for error messages
};

struct RawGraph {
  std::string name;
  std::vector<Tensor> tensors;
  std::vector<RawOp> ops;  // topological order
  std::vector<Constant> constants;
  std::vector<GraphIO> inputs;
  std::vector<GraphIO> outputs;
  bool has_weights = false;
};

}  // namespace psched::model
