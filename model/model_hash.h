// Content identity of a model: the lowercase hex SHA-256 of its ONNX file bytes.
//
// The hash is the model id everywhere (cache keys, `pschedctl model add`), so it depends on
// every byte, weights included: two files differing in one weight get different ids.
// Pure functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace psched::model {

// SHA-256 (FIPS 180-4) of `bytes`.
std::array<uint8_t, 32> Sha256(std::string_view bytes);

// Lowercase hex SHA-256 of the model file's bytes (64 characters).
std::string ModelHash(std::string_view onnx_bytes);

}  // namespace psched::model
