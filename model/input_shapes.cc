#include "model/input_shapes.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace psched::model {
namespace {

constexpr absl::string_view kExpected = "expected NAME=DIMS such as x=1x3x224x224";

absl::Status Malformed(absl::string_view text, absl::string_view why) {
  return absl::InvalidArgumentError(
      absl::StrCat("input shape '", text, "': ", why, "; ", kExpected));
}

}  // namespace

absl::StatusOr<std::pair<std::string, std::vector<int64_t>>> ParseInputShape(
    absl::string_view text) {
  const size_t equals = text.rfind('=');
  if (equals == absl::string_view::npos) return Malformed(text, "no '='");
  std::string name(text.substr(0, equals));
  if (name.empty()) return Malformed(text, "the input name is empty");
  const absl::string_view dims_text = text.substr(equals + 1);
  if (dims_text.empty()) return Malformed(text, "no dims after '='");
  std::vector<int64_t> dims;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(dims_text.find('x', begin), dims_text.size());
    const absl::string_view digits = dims_text.substr(begin, end - begin);
    const size_t index = dims.size();
    if (digits.empty()) return Malformed(text, absl::StrCat("dim ", index, " is empty"));
    int64_t value = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') {
        return Malformed(text,
                         absl::StrCat("dim ", index, " ('", digits, "') is not a decimal number"));
      }
      value = value * 10 + (c - '0');
      if (value > kMaxGivenDim) {
        return Malformed(text, absl::StrCat("dim ", index, " is larger than ", kMaxGivenDim));
      }
    }
    if (value == 0)
      return Malformed(text, absl::StrCat("dim ", index, " is 0; dims are sizes >= 1"));
    dims.push_back(value);
    if (end == dims_text.size()) break;
    begin = end + 1;
  }
  return std::make_pair(std::move(name), std::move(dims));
}

std::string InputDimsText(const std::vector<int64_t>& dims) { return absl::StrJoin(dims, "x"); }

std::string InputShapesKey(const InputShapes& shapes) {
  if (shapes.empty()) return "";
  nlohmann::json key = nlohmann::json::object();
  for (const auto& [name, dims] : shapes) key[name] = dims;
  // Names sorted (std::map) and no whitespace: equal shapes give equal text. Names that are
  // not valid UTF-8 are escaped byte by byte rather than refused.
  return key.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

absl::StatusOr<InputShapes> ParseInputShapesKey(absl::string_view key) {
  InputShapes shapes;
  if (key.empty()) return shapes;
  const nlohmann::json parsed = nlohmann::json::parse(key, nullptr, /*allow_exceptions=*/false);
  if (!parsed.is_object() || parsed.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("input shapes '", key, "' are not a JSON object of names to dims"));
  }
  for (const auto& [name, dims] : parsed.items()) {
    if (!dims.is_array() || dims.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("input shapes '", key, "': '", name, "' has no array of dims"));
    }
    std::vector<int64_t>& out = shapes[name];
    for (const nlohmann::json& d : dims) {
      if (!d.is_number_integer() || d.get<int64_t>() < 1 || d.get<int64_t>() > kMaxGivenDim) {
        return absl::InvalidArgumentError(absl::StrCat("input shapes '", key, "': '", name,
                                                       "' has a dim that is not a size >= 1"));
      }
      out.push_back(d.get<int64_t>());
    }
  }
  return shapes;
}

}  // namespace psched::model
