// A minimal .npy reader and writer for float32 C-order arrays (format versions 1.0 and 2.0
// read, 1.0 written), the format model inputs and outputs are exchanged in.
//
// Anything else (other dtypes, big-endian, Fortran order, truncated data) is rejected with
// a message saying what was found. Plain functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace psched::executor {

struct NpyArray {
  std::vector<int64_t> shape;  // () for a scalar
  std::vector<float> data;     // C order, product(shape) values
};

absl::StatusOr<NpyArray> ParseNpy(std::string_view bytes);
absl::StatusOr<NpyArray> ReadNpy(const std::string& path);
// REQUIRES for success: data.size() == product(shape).
absl::StatusOr<std::string> SerializeNpy(const NpyArray& array);
absl::Status WriteNpy(const std::string& path, const NpyArray& array);

}  // namespace psched::executor
