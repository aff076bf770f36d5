#include <filesystem>
#include <iostream>

#include "client/pschedctl/commands.h"
#include "client/pschedctl/output.h"
#include "model/inspect.h"
#include "model/onnx_import.h"

namespace psched::pschedctl {

void CmdModelAdd(const Globals& g, const std::string& file, const std::string& name,
                 bool synthetic) {
  std::string bytes = ReadFile(file);
  std::string model_name = name.empty() ? std::filesystem::path(file).stem().string() : name;
  auto client = Connect(g);
  v1::RegisterModelResponse response = Check(client.RegisterModel(bytes, model_name, synthetic));
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

void CmdModelInspect(const Globals& g, const std::string& target) {
  json inspect;
  if (std::filesystem::is_regular_file(target)) {
    psched::model::ImportOptions options;
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
