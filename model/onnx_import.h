// ONNX import: bytes of an ONNX model -> the canonical Graph.
//
// ImportOnnx parses the model, checks it against ImportOptions' limits, converts every node
// to NHWC (tensors and weights), evaluates shape sub-graphs, computes every tensor's shape
// itself and cross-checks it with ONNX's own shape inference, then canonicalises the result
// (see canonicalize.h). Graph-only models, whose initializers point at absent external
// data, import for planning with `has_weights == false`; with `synthesize_weights` they get
// deterministic synthetic weights instead (synthetic_weights.h). Supported operators and
// the canonicalisation rules are listed in docs/model-import.md. Symbolic input dimensions
// (dynamic axes) are bound before the graph is read: see `input_shapes` below.
//
// Bad input never crashes: every problem comes back as an absl::Status whose message names
// the node (name and op type) or tensor at fault. InvalidArgument: malformed or inconsistent
// model; Unimplemented: a valid construct psched does not support; ResourceExhausted: a
// limit below was exceeded; NotFound: the file is missing. Functions are thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "model/graph.h"
#include "model/input_shapes.h"
#include "model/raw_graph.h"

namespace psched::model {

struct ImportOptions {
  // Fill absent weights with deterministic synthetic values (seeded by `seed`) so a graph-only
  // model can run. Weights the file does carry are kept. Without it a graph-only model
  // imports with has_weights == false and every constant's data empty.
  bool synthesize_weights = false;
  uint64_t seed = 0;
  // Graph name; empty: the file's stem (ImportOnnxFile) or the ONNX graph's name.
  std::string name;
  // Shapes of graph inputs by name, binding their symbolic dimensions. An input given none
  // keeps its declared dims with a symbolic first one (the batch) bound to 1; any other
  // symbolic dimension is then an error (onnx_input_binding.h).
  InputShapes input_shapes;
  // Refuse initializers whose data lives in external files (InvalidArgument naming the
  // tensor): an upload must be self-contained. Off: they are read as dims without data, the
  // graph-only import above.
  bool refuse_external_data = false;

  // Limits that keep hostile input from exhausting memory or time. The defaults admit every
  // realistic mobile vision model with room to spare.
  // Size of the serialized model: by default the most one protobuf holds (2 GiB - 1).
  int64_t max_model_bytes = (int64_t{1} << 31) - 1;
  // Elements of any one tensor, activation or constant (2^28 f32 = 1 GiB).
  int64_t max_tensor_elements = int64_t{1} << 28;
  // Any one dimension of any tensor.
  int64_t max_dim = int64_t{1} << 20;
  // Nodes in the ONNX graph.
  int64_t max_ops = 100000;
};

// The importer before canonicalisation; exposed for tests and tools.
absl::StatusOr<RawGraph> ImportOnnxRaw(std::string_view bytes, const ImportOptions& options);

absl::StatusOr<Graph> ImportOnnx(std::string_view bytes, const ImportOptions& options);
absl::StatusOr<Graph> ImportOnnxFile(const std::string& path, const ImportOptions& options);

}  // namespace psched::model
