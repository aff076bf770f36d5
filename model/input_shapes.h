// Shapes given for a model's graph inputs: they bind the symbolic dimensions an exporter
// leaves in a model with dynamic axes (batch `N`, sequence `T`) to sizes, so the importer
// sees static shapes. ImportOptions::input_shapes carries them; the text form `NAME=DIMS`
// ("x=1x3x224x224") is what `pschedctl model add --input-shape` takes.
//
// Pure functions; thread-safe. Text from the command line is untrusted: every malformed
// form comes back as InvalidArgument naming what is wrong, never a crash.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace psched::model {

// Input name -> its dims in ONNX order.
using InputShapes = std::map<std::string, std::vector<int64_t>>;

// Largest size accepted for one given dimension; the importer's own limits (max_dim,
// max_tensor_elements) are checked after binding.
inline constexpr int64_t kMaxGivenDim = int64_t{1} << 40;

// "NAME=D0xD1x..." -> {NAME, {D0, D1, ...}}. The name is everything before the last '='
// (input names may contain '='); the dims are positive decimal integers joined by 'x'.
absl::StatusOr<std::pair<std::string, std::vector<int64_t>>> ParseInputShape(
    absl::string_view text);

// "1x3x224x224": the dims as ParseInputShape reads them.
std::string InputDimsText(const std::vector<int64_t>& dims);

// The canonical text of a set of shapes, part of a model's id (ModelId) and stored with it:
// compact JSON {"name":[dims],...} with names sorted; "" for none, so a model registered
// without shapes keeps the id of its bytes alone.
std::string InputShapesKey(const InputShapes& shapes);
// InputShapesKey's text back ("" -> none). InvalidArgument for anything else than an object
// of names to arrays of dims >= 1.
absl::StatusOr<InputShapes> ParseInputShapesKey(absl::string_view key);

}  // namespace psched::model
