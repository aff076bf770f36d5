// Float buffers aligned to a 64-byte cache line (also the width of an AVX-512 load): the
// activation arenas of the executor and the co-execution runtime, and packed filters.
#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace psched::executor {

struct AlignedFree {
  void operator()(float* p) const { std::free(p); }
};
using AlignedFloats = std::unique_ptr<float[], AlignedFree>;

// Room for `floats` floats (at least one cache line), uninitialised; null when out of memory.
AlignedFloats AllocateAlignedFloats(size_t floats);

}  // namespace psched::executor
