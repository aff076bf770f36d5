#include "executor/common/aligned_floats.h"

#include <algorithm>

namespace psched::executor {

AlignedFloats AllocateAlignedFloats(size_t floats) {
  // aligned_alloc wants a whole number of alignments.
  const size_t bytes = std::max<size_t>((floats * sizeof(float) + 63) / 64 * 64, 64);
  return AlignedFloats(static_cast<float*>(std::aligned_alloc(64, bytes)));
}

}  // namespace psched::executor
