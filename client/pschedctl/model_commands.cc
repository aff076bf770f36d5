#include <filesystem>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "client/pschedctl/commands.h"
#include "client/pschedctl/output.h"
#include "model/input_shapes.h"
#include "model/inspect.h"
#include "model/onnx_external_data.h"
#include "model/onnx_import.h"

namespace psched::pschedctl {
namespace {

// The --input-shape texts by input name; CommandError for a malformed one or a name given twice.
psched::model::InputShapes ParseInputShapes(const std::vector<std::string>& texts) {
  psched::model::InputShapes shapes;
  for (const std::string& text : texts) {
    auto [name, dims] = Check(psched::model::ParseInputShape(text));
    if (shapes.contains(name)) {
      throw CommandError{absl::StrCat("--input-shape gives input '", name, "' twice")};
    }
    shapes.emplace(std::move(name), std::move(dims));
  }
  return shapes;
}

// The bytes to send: the file itself with --graph-only (its external data stays behind on
// purpose), else the model with its external data inlined.
std::string ModelBytes(const ModelAddFlags& flags) {
  if (flags.graph_only) return ReadFile(flags.file);
  psched::model::InlineOptions options;
  // Weights the daemon synthesizes need no file; those that are there are kept.
  options.allow_missing_files = flags.synthetic;
  psched::model::InlinedModel inlined =
      Check(psched::model::ReadModelInliningExternalData(flags.file, options));
  return std::move(inlined.bytes);
}

}  // namespace

void CmdModelAdd(const Globals& g, const ModelAddFlags& flags) {
  v1::ModelHeader header;
  header.set_name(flags.name.empty() ? std::filesystem::path(flags.file).stem().string()
                                     : flags.name);
  header.set_synthesize_weights(flags.synthetic);
  header.set_graph_only(flags.graph_only);
  for (const auto& [input, dims] : ParseInputShapes(flags.input_shapes)) {
    v1::InputShape* shape = header.add_input_shapes();
    shape->set_name(input);
    for (int64_t d : dims) shape->add_dims(d);
  }
  const std::string bytes = ModelBytes(flags);
  auto client = Connect(g);
  v1::RegisterModelResponse response = Check(client.RegisterModel(bytes, std::move(header)));
  if (g.json()) {
    json out = ModelJson(response.model());
    out["already_registered"] = response.already_registered();
    PrintJson(out);
  } else {
    std::cout << response.model().id() << "\n";
  }
}

void CmdModelLs(const Globals& g) {
  auto client = Connect(g);
  v1::ListModelsResponse models = Check(client.ListModels());
  if (g.json()) {
    json out = json::array();
    for (const auto& m : models.models()) out.push_back(ModelJson(m));
    PrintJson({{"models", out}});
    return;
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& m : models.models()) {
    rows.push_back({Short(m.id()), m.name(), std::to_string(m.ops()),
                    Fixed(static_cast<double>(m.flops()) / 1e9, 2), std::to_string(m.size_bytes()),
                    m.has_weights() ? "yes" : "no",
                    m.inputs_size() > 0 ? Dims(m.inputs(0).dims()) : ""});
  }
  PrintTable({"ID", "NAME", "OPS", "GFLOP", "BYTES", "WEIGHTS", "INPUT"}, rows);
}

void CmdModelRm(const Globals& g, const std::string& id) {
  auto client = Connect(g);
  v1::RemoveModelResponse removed = Check(client.RemoveModel(id));
  if (g.json()) {
    PrintJson({{"id", removed.id()}, {"plans_removed", removed.plans_removed()}});
  } else {
    std::cout << "removed " << removed.id() << " (" << removed.plans_removed()
              << " cached plans)\n";
  }
}

void CmdModelInspect(const Globals& g, const std::string& target,
                     const std::vector<std::string>& input_shapes) {
  json inspect;
  if (std::filesystem::is_regular_file(target)) {
    psched::model::ImportOptions options;
    options.input_shapes = ParseInputShapes(input_shapes);
    psched::model::Graph graph = Check(psched::model::ImportOnnxFile(target, options));
    inspect = psched::model::InspectJson(graph);
  } else {
    auto client = Connect(g);
    v1::Model model = Check(client.GetModel(target));
    inspect = json::parse(model.inspect_json(), nullptr, false);
    if (inspect.is_discarded()) inspect = json::object();
    inspect["id"] = model.id();
    json summary = ModelJson(model);
    inspect["inputs"] = summary["inputs"];
    inspect["outputs"] = summary["outputs"];
  }
  PrintJson(inspect);
}

}  // namespace psched::pschedctl
