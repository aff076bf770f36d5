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

// Adds `src` - out.shape's elements stored contiguously, in (h, w, c) order - into `out`: a cin
// slice's partial sum into its op's output, which may be a channel slice of a concat's.
inline void AddContiguousInto(const float* src, const TensorView& out) {
  for (int64_t h = 0; h < out.shape.h; ++h) {
    for (int64_t w = 0; w < out.shape.w; ++w) {
      float* dst = out.pixel(h, w);
      for (int64_t c = 0; c < out.shape.c; ++c) dst[c] += *src++;
    }
  }
}

}  // namespace psched::executor
