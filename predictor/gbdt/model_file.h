// GBDT model files: every family regressor of one device, as a line-oriented text file.
//
//   psched-gbdt 1
//   device pixel4/gpu              the measured device this was trained for
//   kind gpu                       gpu | cpu
//   dispatch tflite-gpu            GPU models: the dispatch scheme (dispatch.h); CPU: none
//   # free-text comments (training data, parameters, held-out error)
//   family conv
//   features in_h in_w ...         must equal FeatureNames(family, kind == gpu)
//   baseline A B C                 us per MFLOP, us per MB, us (features.h)
//   base_score S
//   trees N
//   tree M                         then M node lines, root first:
//   s FEATURE THRESHOLD LEFT RIGHT L|R    a split (children are node indices in the tree;
//   l VALUE                               L|R: the side of a NaN feature), or a leaf
//   ...
//   end-family
//   fallback elementwise concat    a family without data predicted by another family's model
//   end
//
// Every family of kClassicFamilies has a model or a fallback. The transformer families
// (matmul, data_movement, normalization) may have neither: files written before they existed
// have no such section, and a trainer without rows for them writes none; GbdtLatencyModel
// predicts such a family with an analytic roofline.
//
// Numbers are written with enough digits to read back exactly (floats %.9g, doubles %.17g),
// so writing a parsed file reproduces it byte for byte. The file's SHA-256 is its identity:
// GbdtLatencyModel::Version() is built from it.
//
// ParseModelFile never trusts its input: every error names the source and line ("gpu.gbdt:
// 57: ...") and says what was expected; a truncated file is reported as such. DeviceModel is
// a plain value type.
#pragma once

#include <array>
#include <functional>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "predictor/gbdt/features.h"
#include "predictor/gbdt/tree_ensemble.h"

namespace psched::predictor::gbdt {

struct FamilyModel {
  Baseline baseline;
  TreeEnsemble trees;
};

struct DeviceModel {
  std::string device;  // e.g. "pixel4/gpu"
  bool gpu = false;
  std::string dispatch;  // scheme name for GPU models; empty for CPU models
  std::string comments;  // '#' lines without the '# ', newline-separated
  std::array<std::optional<FamilyModel>, kNumFamilies> families;
  // For a family without its own model: the family whose model predicts it.
  std::array<std::optional<OpFamily>, kNumFamilies> fallback;

  // The family model that predicts `family` (its own or its fallback's); null if none (only
  // for a family outside kClassicFamilies in a parsed file).
  const FamilyModel* For(OpFamily family) const;
};

inline constexpr absl::string_view kModelFileMagic = "psched-gbdt";
inline constexpr int kModelFileVersion = 1;

// What the user of a file needs it to be; unset fields are not checked.
struct ModelExpectation {
  std::string device;       // the device id, e.g. "pixel4/gpu"; empty: any
  std::optional<bool> gpu;  // the device kind
  // Whether a dispatch scheme name is known to the caller.
  std::function<bool(absl::string_view)> known_scheme;
  std::string for_what;  // named in mismatch errors, e.g. "platform pixel4-measured device gpu"
};

// `source` names the bytes in errors (a path, or "embedded:pixel4-measured/gpu.gbdt").
// Refuses: a wrong magic or version, unknown keys or families, a feature list that differs
// from this build's layout, malformed numbers, invalid trees (TreeEnsemble::Validate), a
// fallback to a family without a model, a classic family neither modelled nor covered by a
// fallback, a file that ends early, and a file that does not meet `expect` (trained for
// another device or device kind, an unknown dispatch scheme).
absl::StatusOr<DeviceModel> ParseModelFile(absl::string_view text, absl::string_view source,
                                           const ModelExpectation& expect = {});
std::string FormatModelFile(const DeviceModel& model);

// Lowercase hex SHA-256 of a model file's bytes.
std::string ModelFileHash(absl::string_view text);

}  // namespace psched::predictor::gbdt
