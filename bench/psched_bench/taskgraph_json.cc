#include "bench/psched_bench/taskgraph_json.h"

#include <cmath>
#include <fstream>
#include <map>
#include <queue>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace psched::bench {
namespace {

using nlohmann::json;

absl::Status Bad(const std::string& where, const std::string& why) {
  return absl::InvalidArgumentError(absl::StrCat("task graph: ", where, ": ", why));
}

absl::StatusOr<double> NonNegative(const json& v, const std::string& where) {
  if (!v.is_number()) return Bad(where, "must be a number");
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0) return Bad(where, absl::StrCat("must be finite and >= 0, got ", v.dump()));
  return d;
}

absl::StatusOr<platform::DeviceSpec> ParseDevice(const json& v, const std::string& where) {
  platform::DeviceSpec spec;
  if (v.is_string()) {
    spec.name = v.get<std::string>();
  } else if (v.is_object()) {
    if (!v.contains("name") || !v["name"].is_string()) return Bad(where, "needs a string \"name\"");
    spec.name = v["name"].get<std::string>();
    if (v.contains("kind")) {
      const std::string kind = v["kind"].is_string() ? v["kind"].get<std::string>() : "";
      if (kind == "gpu") {
        spec.kind = platform::DeviceKind::kGpu;
      } else if (kind != "cpu") {
        return Bad(where + ".kind", "must be \"cpu\" or \"gpu\"");
      }
    }
    if (v.contains("memory_domain")) {
      if (!v["memory_domain"].is_number_integer()) return Bad(where + ".memory_domain", "must be an integer");
      spec.memory_domain = v["memory_domain"].get<int>();
    }
  } else {
    return Bad(where, "must be a device name or an object with \"name\"");
  }
  if (spec.name.empty()) return Bad(where, "device name is empty");
  return spec;
}

}  // namespace

absl::StatusOr<TaskGraphInput> ParseTaskGraphJson(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Bad("document", "not valid JSON");
  if (!doc.is_object()) return Bad("document", "must be a JSON object");
  for (const char* key : {"devices", "tasks"}) {
    if (!doc.contains(key) || !doc[key].is_array() || doc[key].empty()) {
      return Bad(key, "must be a non-empty array");
    }
  }
  TaskGraphInput in;
  in.platform.name = doc.value("name", std::string("taskgraph"));
  std::map<std::string, int> device_index;
  for (size_t d = 0; d < doc["devices"].size(); ++d) {
    const std::string where = absl::StrCat("devices[", d, "]");
    absl::StatusOr<platform::DeviceSpec> spec = ParseDevice(doc["devices"][d], where);
    if (!spec.ok()) return spec.status();
    if (!device_index.emplace(spec->name, static_cast<int>(d)).second) {
      return Bad(where, absl::StrCat("duplicate device name '", spec->name, "'"));
    }
    in.platform.devices.push_back(*std::move(spec));
  }
  const size_t devices = in.platform.devices.size();

  // Tasks in file order first; reordered topologically below.
  std::vector<std::string> names;
  std::vector<std::vector<double>> cost;
  std::map<std::string, int> task_index;
  for (size_t t = 0; t < doc["tasks"].size(); ++t) {
    const json& task = doc["tasks"][t];
    const std::string where = absl::StrCat("tasks[", t, "]");
    if (!task.is_object()) return Bad(where, "must be an object with \"cost\"");
    std::string name = absl::StrCat("t", t);
    if (task.contains("name")) {
      if (!task["name"].is_string() || task["name"].get<std::string>().empty()) {
        return Bad(where + ".name", "must be a non-empty string");
      }
      name = task["name"].get<std::string>();
    }
    if (!task_index.emplace(name, static_cast<int>(t)).second) {
      return Bad(where, absl::StrCat("duplicate task name '", name, "'"));
    }
    if (!task.contains("cost")) return Bad(where, "missing \"cost\"");
    const json& c = task["cost"];
    std::vector<double> row(devices, -1.0);
    if (c.is_array()) {
      if (c.size() != devices) {
        return Bad(where + ".cost", absl::StrCat("has ", c.size(), " entries for ", devices, " devices"));
      }
      for (size_t d = 0; d < devices; ++d) {
        absl::StatusOr<double> v = NonNegative(c[d], absl::StrCat(where, ".cost[", d, "]"));
        if (!v.ok()) return v.status();
        row[d] = *v;
      }
    } else if (c.is_object()) {
      for (const auto& [device, value] : c.items()) {
        auto it = device_index.find(device);
        if (it == device_index.end()) return Bad(where + ".cost", absl::StrCat("unknown device '", device, "'"));
        absl::StatusOr<double> v = NonNegative(value, absl::StrCat(where, ".cost.", device));
        if (!v.ok()) return v.status();
        row[static_cast<size_t>(it->second)] = *v;
      }
      for (size_t d = 0; d < devices; ++d) {
        if (row[d] < 0) {
          return Bad(where + ".cost", absl::StrCat("no cost for device '", in.platform.devices[d].name, "'"));
        }
      }
    } else {
      return Bad(where + ".cost", "must be an array (one per device) or an object keyed by device");
    }
    names.push_back(std::move(name));
    cost.push_back(std::move(row));
  }
  const int n = static_cast<int>(names.size());

  auto task_ref = [&](const json& v, const std::string& where) -> absl::StatusOr<int> {
    if (v.is_number_integer()) {
      const int64_t i = v.get<int64_t>();
      if (i < 0 || i >= n) return Bad(where, absl::StrCat("task index ", i, " outside [0, ", n, ")"));
      return static_cast<int>(i);
    }
    if (v.is_string()) {
      auto it = task_index.find(v.get<std::string>());
      if (it == task_index.end()) return Bad(where, absl::StrCat("unknown task '", v.get<std::string>(), "'"));
      return it->second;
    }
    return Bad(where, "must be a task name or index");
  };
  std::vector<scheduler::TaskGraph::Edge> edges;
  if (doc.contains("edges")) {
    if (!doc["edges"].is_array()) return Bad("edges", "must be an array");
    for (size_t e = 0; e < doc["edges"].size(); ++e) {
      const json& edge = doc["edges"][e];
      const std::string where = absl::StrCat("edges[", e, "]");
      json from, to;
      double transfer = 0;
      if (edge.is_array() && edge.size() == 2) {
        from = edge[0];
        to = edge[1];
      } else if (edge.is_object() && edge.contains("from") && edge.contains("to")) {
        from = edge["from"];
        to = edge["to"];
        if (edge.contains("transfer_us")) {
          absl::StatusOr<double> v = NonNegative(edge["transfer_us"], where + ".transfer_us");
          if (!v.ok()) return v.status();
          transfer = *v;
        }
      } else {
        return Bad(where, "must be [from, to] or {\"from\", \"to\", \"transfer_us\"}");
      }
      absl::StatusOr<int> a = task_ref(from, where + ".from");
      if (!a.ok()) return a.status();
      absl::StatusOr<int> b = task_ref(to, where + ".to");
      if (!b.ok()) return b.status();
      if (*a == *b) return Bad(where, absl::StrCat("task '", names[static_cast<size_t>(*a)], "' depends on itself"));
      edges.push_back({*a, *b, transfer});
    }
  }

  // Stable topological order (Kahn with a min-heap on the file index).
  std::vector<std::vector<int>> succ(static_cast<size_t>(n));
  std::vector<int> indegree(static_cast<size_t>(n), 0);
  for (const auto& e : edges) {
    succ[static_cast<size_t>(e.from)].push_back(e.to);
    ++indegree[static_cast<size_t>(e.to)];
  }
  std::priority_queue<int, std::vector<int>, std::greater<int>> ready;
  for (int t = 0; t < n; ++t) {
    if (indegree[static_cast<size_t>(t)] == 0) ready.push(t);
  }
  std::vector<int> position(static_cast<size_t>(n), -1);
  int next = 0;
  while (!ready.empty()) {
    const int t = ready.top();
    ready.pop();
    position[static_cast<size_t>(t)] = next++;
    for (int s : succ[static_cast<size_t>(t)]) {
      if (--indegree[static_cast<size_t>(s)] == 0) ready.push(s);
    }
  }
  if (next != n) {
    for (int t = 0; t < n; ++t) {
      if (position[static_cast<size_t>(t)] < 0) {
        return Bad("edges", absl::StrCat("the graph has a cycle through task '", names[static_cast<size_t>(t)], "'"));
      }
    }
  }
  in.tasks.names.resize(static_cast<size_t>(n));
  in.tasks.cost.resize(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) {
    const size_t p = static_cast<size_t>(position[static_cast<size_t>(t)]);
    in.tasks.names[p] = names[static_cast<size_t>(t)];
    in.tasks.cost[p] = cost[static_cast<size_t>(t)];
  }
  for (const auto& e : edges) {
    in.tasks.edges.push_back({position[static_cast<size_t>(e.from)], position[static_cast<size_t>(e.to)], e.transfer_us});
  }
  return in;
}

absl::StatusOr<TaskGraphInput> LoadTaskGraphFile(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return absl::NotFoundError(absl::StrCat("task graph file ", path, " cannot be opened"));
  std::stringstream buffer;
  buffer << file.rdbuf();
  absl::StatusOr<TaskGraphInput> parsed = ParseTaskGraphJson(buffer.str());
  if (!parsed.ok()) {
    return absl::Status(parsed.status().code(), absl::StrCat(path, ": ", parsed.status().message()));
  }
  return parsed;
}

}  // namespace psched::bench
