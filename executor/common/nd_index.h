// Index arithmetic over row-major tensors of any rank: strides, numpy broadcasting and a
// visitor over every element. Shared by the reference kernels and the CPU tensor kernels.
// Header-only, pure, thread-safe.
#pragma once

#include <cstdint>
#include <vector>

namespace psched::executor {

// Strides of a row-major tensor of `dims`, in elements.
inline std::vector<int64_t> RowMajorStrides(const std::vector<int64_t>& dims) {
  std::vector<int64_t> strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * dims[i];
  return strides;
}

// Strides with which to read `operand` at each index of `out` under numpy broadcasting
// (right-aligned; 0 along axes where the operand has extent 1 or lacks the axis).
// REQUIRES: operand.size() <= out.size().
inline std::vector<int64_t> BroadcastStrides(const std::vector<int64_t>& operand,
                                             const std::vector<int64_t>& out) {
  std::vector<int64_t> strides(out.size(), 0);
  const std::vector<int64_t> own = RowMajorStrides(operand);
  // An operand of higher rank has 1s in the extra leading axes (validated by op_validation).
  const size_t skip = operand.size() > out.size() ? operand.size() - out.size() : 0;
  const size_t lead = out.size() - (operand.size() - skip);
  for (size_t i = skip; i < operand.size(); ++i) {
    strides[lead + i - skip] = operand[i] == 1 ? 0 : own[i];
  }
  return strides;
}

// Calls f(offset) for each element of `dims` in row-major order, where offset is the element's
// position under `strides` (one stride per axis).
template <typename F>
void ForEachOffset(const std::vector<int64_t>& dims, const std::vector<int64_t>& strides, F&& f) {
  const size_t rank = dims.size();
  for (int64_t d : dims) {
    if (d == 0) return;
  }
  std::vector<int64_t> index(rank, 0);
  int64_t offset = 0;
  while (true) {
    f(offset);
    size_t a = rank;
    while (a > 0) {
      --a;
      if (++index[a] < dims[a]) {
        offset += strides[a];
        break;
      }
      offset -= strides[a] * (dims[a] - 1);
      index[a] = 0;
      if (a == 0) return;
    }
    if (rank == 0) return;
  }
}

}  // namespace psched::executor
