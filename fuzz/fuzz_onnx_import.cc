// ONNX bytes from a client (RegisterModel) or from the store: the importer must answer every
// input with a graph or a Status, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/onnx_import.h"
#include "model/op_cost.h"

namespace {

// Synthesising weights fills every absent constant; on the full-size seeds that costs seconds
// per input under ASan (7 s for hrnetv2_w44), which would starve the mutator. The synthesis
// code is the same at any size, so it is fuzzed on graphs up to this many parameters.
constexpr int64_t kMaxSynthesizedParams = int64_t{1} << 20;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  psched::model::ImportOptions options;
  absl::StatusOr<psched::model::Graph> plain = psched::model::ImportOnnx(bytes, options);
  if (!plain.ok() || psched::model::GraphParams(*plain) <= kMaxSynthesizedParams) {
    options.synthesize_weights = true;
    (void)psched::model::ImportOnnx(bytes, options);
  }
  return 0;
}
