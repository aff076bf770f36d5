// The ONNX operators the importer reads: what each becomes in the canonical graph and its
// limits. One list behind docs/model-import.md's operator table (generated from it, and a
// test keeps the two and the importer's dispatch equal), so the docs cannot drift.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace psched::model {

struct OnnxOpSupport {
  std::string_view op_type;
  std::string_view becomes;  // canonical op kinds (op_kinds.inc), "folded" or "nothing"
  std::string_view limits;   // what is not supported, or the forms that are
  // Read only when every input is a constant (evaluated at import, never computed).
  bool constants_only = false;
};

// Every supported operator of the default ONNX domain, alphabetically.
const std::vector<OnnxOpSupport>& SupportedOnnxOps();

// The markdown table docs/model-import.md holds between its onnx-ops markers.
std::string OnnxOpTableMarkdown();

}  // namespace psched::model
