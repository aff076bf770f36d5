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

// The id of a model registered with input shapes bound (`bound_inputs`, a canonical text of
// the given shapes; empty when none were given): ModelHash(onnx_bytes) when none were given,
// else the hex SHA-256 of that hash and the text, so the same bytes bound differently are
// different models with their own graphs and plans.
std::string ModelId(std::string_view onnx_bytes, std::string_view bound_inputs);

}  // namespace psched::model
