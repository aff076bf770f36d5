// .npy files given to `pschedctl infer --input` and written by tests.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "executor/npy.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  absl::StatusOr<psched::executor::NpyArray> array =
      psched::executor::ParseNpy(std::string_view(reinterpret_cast<const char*>(data), size));
  // What parses must serialise again.
  if (array.ok()) (void)psched::executor::SerializeNpy(*array);
  return 0;
}
