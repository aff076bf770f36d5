// ONNX bytes from a client (RegisterModel) or from the store: the importer must answer every
// input with a graph or a Status, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/onnx_import.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  for (bool synthesize : {false, true}) {
    psched::model::ImportOptions options;
    options.synthesize_weights = synthesize;
    (void)psched::model::ImportOnnx(bytes, options);
  }
  return 0;
}
