#include "executor/layout.h"

namespace psched::executor {

void NchwToNhwc(const model::Shape& shape, std::span<const float> src, std::span<float> dst) {
  const int64_t hw = shape.h * shape.w;
  for (int64_t c = 0; c < shape.c; ++c) {
    for (int64_t p = 0; p < hw; ++p) dst[p * shape.c + c] = src[c * hw + p];
  }
}

void NhwcToNchw(const model::Shape& shape, std::span<const float> src, std::span<float> dst) {
  const int64_t hw = shape.h * shape.w;
  for (int64_t p = 0; p < hw; ++p) {
    for (int64_t c = 0; c < shape.c; ++c) dst[c * hw + p] = src[p * shape.c + c];
  }
}

std::vector<float> NchwToNhwc(const model::Shape& shape, std::span<const float> src) {
  std::vector<float> dst(static_cast<size_t>(shape.Elements()));
  NchwToNhwc(shape, src, dst);
  return dst;
}

std::vector<float> NhwcToNchw(const model::Shape& shape, std::span<const float> src) {
  std::vector<float> dst(static_cast<size_t>(shape.Elements()));
  NhwcToNchw(shape, src, dst);
  return dst;
}

}  // namespace psched::executor
