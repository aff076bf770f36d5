#include "model/onnx_import.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_cat.h"
#include "model/canonicalize.h"
#include "model/onnx_importer.h"
#include "model/synthetic_weights.h"

namespace psched::model {
namespace {

absl::StatusOr<std::string> ReadFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("cannot open ONNX file '", path, "'"));
  std::ostringstream contents;
  contents << file.rdbuf();
  if (file.bad()) return absl::DataLossError(absl::StrCat("error reading '", path, "'"));
  return std::move(contents).str();
}

}  // namespace

absl::StatusOr<RawGraph> ImportOnnxRaw(std::string_view bytes, const ImportOptions& options) {
  onnx_importer::Importer importer(options);
  auto graph = importer.Run(bytes);
  if (graph.ok() && !options.name.empty()) graph->name = options.name;
  return graph;
}

absl::StatusOr<Graph> ImportOnnx(std::string_view bytes, const ImportOptions& options) {
  auto raw = ImportOnnxRaw(bytes, options);
  if (!raw.ok()) return raw.status();
  auto graph = Canonicalize(*std::move(raw));
  if (!graph.ok()) return graph.status();
  if (options.synthesize_weights) {
    SynthesizeWeights(options.seed, &*graph);
  } else if (!graph->has_weights) {
    for (Constant& c : graph->constants) c.data.clear();
  }
  return graph;
}

absl::StatusOr<Graph> ImportOnnxFile(const std::string& path, const ImportOptions& options) {
  auto bytes = ReadFile(path);
  if (!bytes.ok()) return bytes.status();
  ImportOptions file_options = options;
  if (file_options.name.empty()) {
    std::string stem = path.substr(path.find_last_of('/') + 1);
    if (const size_t dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
    file_options.name = stem;
  }
  auto graph = ImportOnnx(*bytes, file_options);
  if (!graph.ok()) {
    return absl::Status(graph.status().code(), absl::StrCat(path, ": ", graph.status().message()));
  }
  return graph;
}

}  // namespace psched::model
