// Input shapes from the command line (`pschedctl model add --input-shape NAME=DIMS`, one per
// line here) and their canonical text read back from the store: every text parses or gives a
// Status, what parses round-trips, and the parsed shapes bind a model with symbolic dims or
// give a Status, never a crash.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"
#include "model/input_shapes.h"
#include "model/onnx_import.h"
#include "model/onnx_test_builder.h"

namespace {

// x [N,3,H,W] -> relu -> y: the batch bound by default, H and W only by a given shape.
const std::string& SymbolicModel() {
  static const std::string* bytes = [] {
    psched::model::testing::OnnxBuilder b;
    b.Input("x", {-1, 3, -1, -1});
    b.Node("Relu", {"x"}, {"y"}, "relu");
    b.Output("y");
    return new std::string(b.Bytes());
  }();
  return *bytes;
}

void Require(bool condition) {
  if (!condition) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  psched::model::ImportOptions options;
  size_t begin = 0;
  while (begin <= text.size()) {
    const size_t end = std::min(text.find('\n', begin), text.size());
    auto parsed = psched::model::ParseInputShape(text.substr(begin, end - begin));
    if (parsed.ok()) {
      const std::string again = parsed->first + "=" + psched::model::InputDimsText(parsed->second);
      auto reparsed = psched::model::ParseInputShape(again);
      Require(reparsed.ok() && *reparsed == *parsed);
      options.input_shapes[parsed->first] = parsed->second;
    }
    begin = end + 1;
  }
  auto stored = psched::model::ParseInputShapesKey(text);
  if (stored.ok()) {
    auto round_trip = psched::model::ParseInputShapesKey(psched::model::InputShapesKey(*stored));
    Require(round_trip.ok() && *round_trip == *stored);
  }
  (void)psched::model::ImportOnnx(SymbolicModel(), options);
  return 0;
}
