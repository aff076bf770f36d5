// Binding of a model's graph inputs to static shapes, before the importer reads them
// (Importer::ReadInputs). Exporters with dynamic axes leave dimensions symbolic (dim_param
// "N", or an unknown / 0 / -1 dim_value); psched plans static shapes, so each input gets one:
//   * a shape given for it (ImportOptions::input_shapes) replaces its dims, after checking the
//     rank and every fixed dimension against the declared ones;
//   * otherwise a symbolic first dimension (the batch) becomes 1;
//   * any other symbolic dimension left is an error naming the input, the dimension and how
//     to bind it.
// A given shape that names no graph input is an error listing the inputs. The bound dims are
// written into the GraphProto, so ONNX shape inference (the importer's cross-check) resolves
// the symbolic dimensions inside the graph from them.
// Internal to model/.
#pragma once

#include <onnx/onnx_pb.h>

#include "absl/status/status.h"
#include "model/input_shapes.h"

namespace psched::model::onnx_importer {

absl::Status BindInputShapes(const InputShapes& given, onnx::GraphProto* graph);

}  // namespace psched::model::onnx_importer
