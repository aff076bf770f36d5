// TensorView: an NHWC f32 tensor in memory, as every backend's kernels and the co-execution
// runtime see activations. Pixels may be further apart than the channel count, which is how
// a producer writes straight into its channel slice of a concat output and a consumer reads
// from one. A non-owning value type; the memory belongs to an arena.
#pragma once

#include <cstdint>

#include "model/graph.h"

namespace psched::executor {

// Element (h, w, c) is at data[(h * shape.w + w) * pixel_stride + c].
struct TensorView {
  float* data = nullptr;
  model::Shape shape;
  int64_t pixel_stride = 0;  // >= shape.c

  float* pixel(int64_t h, int64_t w) const { return data + (h * shape.w + w) * pixel_stride; }
  bool contiguous() const { return pixel_stride == shape.c; }
};

}  // namespace psched::executor
