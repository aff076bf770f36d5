#include "executor/owned_buffers.h"

#include "absl/strings/str_cat.h"

namespace psched::executor {

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

}  // namespace psched::executor
