// ConvSlice: what one WorkSlice of a conv op computes, in the terms every conv kernel library
// takes - the window (with the slice's own padding for row slices), the groups and channels
// per group, the filter and bias rows it uses, and where it reads and writes inside the whole
// op's views. Shared by the XNNPACK and oneDNN conv kernels so both cut slices identically.
//
// A plain value; `filter` and `bias` point into the graph's constants or into
// `filter_storage` (cin slices gather their filter columns), so copying a ConvSlice leaves
// them dangling: keep it where it was built until the kernel has packed its weights.
#pragma once

#include <cstdint>
#include <vector>

#include "executor/common/work_slice.h"
#include "model/graph.h"

namespace psched::executor::cpu::internal {

struct ConvSlice {
  model::Window2d window;
  int64_t groups = 1, group_in = 0, group_out = 0;
  const float* filter = nullptr;  // OHWI, [groups * group_out][kh][kw][group_in]
  const float* bias = nullptr;    // null: none (or not this slice's to add)
  // Inside the whole op's input and output views:
  int64_t in_row_begin = 0, in_rows = 0, in_channel_offset = 0;
  int64_t out_row_begin = 0, out_rows = 0, out_channel_offset = 0, out_channels = 0;
  std::vector<float> filter_storage;  // cin slices only
};

// Builds the slice `slice` of conv op `id`. REQUIRES: model::ValidateOp passed and the slice
// is inside model::WorkSize (CreateCpuKernel checks both); grouped convs have no cin slices.
// Fills `out` in place because the result must not be copied (see above).
void BuildConvSlice(const model::Graph& graph, model::OpId id, WorkSlice slice, ConvSlice& out);

}  // namespace psched::executor::cpu::internal
