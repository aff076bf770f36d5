#include "executor/io_buffers.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace psched::executor {

absl::Status CheckIoPointers(size_t num_inputs, size_t num_outputs,
                             std::span<const float* const> inputs_nhwc,
                             std::span<float* const> outputs_nhwc) {
  if (inputs_nhwc.size() != num_inputs || outputs_nhwc.size() != num_outputs) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph takes ", num_inputs, " inputs and ", num_outputs, " outputs, got ",
                     inputs_nhwc.size(), " and ", outputs_nhwc.size()));
  }
  for (const float* p : inputs_nhwc) {
    if (p == nullptr) return absl::InvalidArgumentError("null input buffer");
  }
  for (float* p : outputs_nhwc) {
    if (p == nullptr) return absl::InvalidArgumentError("null output buffer");
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::vector<float>>> RunWithOwnedBuffers(
    std::span<const model::Shape> input_shapes, std::span<const model::Shape> output_shapes,
    const std::vector<std::vector<float>>& inputs_nhwc, PointerRun run) {
  if (inputs_nhwc.size() != input_shapes.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("graph takes ", input_shapes.size(), " inputs, got ", inputs_nhwc.size()));
  }
  std::vector<const float*> in_ptrs;
  for (size_t i = 0; i < inputs_nhwc.size(); ++i) {
    const int64_t expected = input_shapes[i].Elements();
    if (static_cast<int64_t>(inputs_nhwc[i].size()) != expected) {
      return absl::InvalidArgumentError(absl::StrCat("input ", i, " holds ", inputs_nhwc[i].size(),
                                                     " floats, expected ", expected));
    }
    in_ptrs.push_back(inputs_nhwc[i].data());
  }
  std::vector<std::vector<float>> outputs;
  std::vector<float*> out_ptrs;
  for (const model::Shape& shape : output_shapes) {
    outputs.emplace_back(static_cast<size_t>(shape.Elements()));
    out_ptrs.push_back(outputs.back().data());
  }
  if (absl::Status s = run(in_ptrs, out_ptrs); !s.ok()) return s;
  return outputs;
}

void CopyInParts(std::span<const FloatCopy> copies, PartsRunner parallel_for) {
  constexpr int64_t kPartFloats = int64_t{1} << 14;
  std::vector<std::pair<size_t, int64_t>> parts;  // (copy, first float)
  for (size_t c = 0; c < copies.size(); ++c) {
    for (int64_t f = 0; f < copies[c].floats; f += kPartFloats) parts.emplace_back(c, f);
  }
  parallel_for(parts.size(), [&](size_t p) {
    const auto [c, first] = parts[p];
    const FloatCopy& copy = copies[c];
    std::copy_n(copy.from + first, std::min(kPartFloats, copy.floats - first), copy.to + first);
  });
}

}  // namespace psched::executor
