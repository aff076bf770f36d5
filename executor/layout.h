// Conversions between the NCHW layout ONNX models declare for their inputs and outputs and
// the NHWC layout every psched kernel works in.
//
// Plain functions over caller-owned buffers; `src` and `dst` must not overlap. Thread-safe.
// A rank-2 ONNX tensor [1, K] is Shape{1, 1, K}, for which both layouts are the same.
#pragma once

#include <span>
#include <vector>

#include "model/graph.h"

namespace psched::executor {

// dst[h][w][c] = src[c][h][w].  REQUIRES: both spans hold shape.Elements() floats.
void NchwToNhwc(const model::Shape& shape, std::span<const float> src, std::span<float> dst);
// dst[c][h][w] = src[h][w][c].  REQUIRES: both spans hold shape.Elements() floats.
void NhwcToNchw(const model::Shape& shape, std::span<const float> src, std::span<float> dst);

std::vector<float> NchwToNhwc(const model::Shape& shape, std::span<const float> src);
std::vector<float> NhwcToNchw(const model::Shape& shape, std::span<const float> src);

}  // namespace psched::executor
