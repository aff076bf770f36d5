#include "bench/psched_bench/taskgraph_json.h"

#include <cmath>
#include <fstream>
#include <map>
#include <queue>
#include <optional>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "model/split.h"
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

// Microseconds per device: an array in device order or an object keyed by device name.
absl::StatusOr<std::vector<double>> ParseCosts(const json& c, const std::string& where,
                                               const platform::Platform& platform,
                                               const std::map<std::string, int>& device_index) {
  const size_t devices = platform.devices.size();
  std::vector<double> row(devices, -1.0);
  if (c.is_array()) {
    if (c.size() != devices) {
      return Bad(where, absl::StrCat("has ", c.size(), " entries for ", devices, " devices"));
    }
    for (size_t d = 0; d < devices; ++d) {
      absl::StatusOr<double> v = NonNegative(c[d], absl::StrCat(where, "[", d, "]"));
      if (!v.ok()) return v.status();
      row[d] = *v;
    }
    return row;
  }
  if (!c.is_object()) {
    return Bad(where, "must be an array (one per device) or an object keyed by device");
  }
  for (const auto& [device, value] : c.items()) {
    auto it = device_index.find(device);
    if (it == device_index.end()) return Bad(where, absl::StrCat("unknown device '", device, "'"));
    absl::StatusOr<double> v = NonNegative(value, absl::StrCat(where, ".", device));
    if (!v.ok()) return v.status();
    row[static_cast<size_t>(it->second)] = *v;
  }
  for (size_t d = 0; d < devices; ++d) {
    if (row[d] < 0) {
      return Bad(where, absl::StrCat("no cost for device '", platform.devices[d].name, "'"));
    }
  }
  return row;
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

  for (const char* key : {"alignment", "max_splits"}) {
    if (!doc.contains(key)) continue;
    if (!doc[key].is_number_integer() || doc[key].get<int64_t>() < (key[0] == 'a' ? 1 : 0) ||
        doc[key].get<int64_t>() > 1'000'000) {
      return Bad(key, key[0] == 'a' ? "must be an integer >= 1" : "must be an integer >= 0");
    }
  }
  in.options.alignment = doc.value("alignment", int64_t{1});
  in.options.max_splits = doc.value("max_splits", 0);
  std::vector<std::string> names;
  std::vector<std::vector<double>> cost;
  std::vector<std::vector<scheduler::TaskGraph::Split>> splits;
  std::map<std::string, int> task_index;
  // Tasks in file order first; reordered topologically below.
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
    absl::StatusOr<std::vector<double>> row = ParseCosts(task["cost"], where + ".cost", in.platform, device_index);
    if (!row.ok()) return row.status();
    names.push_back(std::move(name));
    cost.push_back(*std::move(row));
    std::vector<scheduler::TaskGraph::Split> task_splits;
    if (task.contains("splits")) {
      const json& sp = task["splits"];
      if (!sp.is_object()) return Bad(where + ".splits", "must be an object keyed by split axis");
      for (const auto& [axis_name, table] : sp.items()) {
        const std::string at = absl::StrCat(where, ".splits.", axis_name);
        const std::optional<model::SplitAxis> axis = model::SplitAxisFromName(axis_name);
        if (!axis || *axis == model::SplitAxis::kNone) {
          return Bad(at, "unknown split axis; use cout, cin or spatial");
        }
        if (!table.is_array() || table.empty()) {
          return Bad(at, "must be a non-empty array with one row of costs per work size");
        }
        scheduler::TaskGraph::Split split;
        split.axis = *axis;
        for (size_t u = 0; u < table.size(); ++u) {
          absl::StatusOr<std::vector<double>> costs =
              ParseCosts(table[u], absl::StrCat(at, "[", u, "]"), in.platform, device_index);
          if (!costs.ok()) return costs.status();
          split.cost.push_back(*std::move(costs));
        }
        task_splits.push_back(std::move(split));
      }
    }
    splits.push_back(std::move(task_splits));
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
  in.tasks.splits.resize(static_cast<size_t>(n));
  for (int t = 0; t < n; ++t) {
    const size_t p = static_cast<size_t>(position[static_cast<size_t>(t)]);
    in.tasks.names[p] = names[static_cast<size_t>(t)];
    in.tasks.cost[p] = cost[static_cast<size_t>(t)];
    in.tasks.splits[p] = std::move(splits[static_cast<size_t>(t)]);
  }
  for (const auto& e : edges) {
    in.tasks.edges.push_back({position[static_cast<size_t>(e.from)], position[static_cast<size_t>(e.to)], e.transfer_us});
  }
  return in;
}

std::string TaskGraphToJson(const TaskGraphInput& input) {
  json doc;
  doc["name"] = input.platform.name;
  json devices = json::array();
  for (const platform::DeviceSpec& d : input.platform.devices) {
    devices.push_back({{"name", d.name},
                       {"kind", std::string(platform::DeviceKindName(d.kind))},
                       {"memory_domain", d.memory_domain}});
  }
  doc["devices"] = std::move(devices);
  if (input.options.alignment != 1) doc["alignment"] = input.options.alignment;
  if (input.options.max_splits != 0) doc["max_splits"] = input.options.max_splits;
  json tasks = json::array();
  const scheduler::TaskGraph& g = input.tasks;
  for (size_t t = 0; t < g.cost.size(); ++t) {
    json task = {{"name", g.names.empty() ? absl::StrCat("t", t) : g.names[t]}, {"cost", g.cost[t]}};
    if (t < g.splits.size() && !g.splits[t].empty()) {
      json sp = json::object();
      for (const scheduler::TaskGraph::Split& split : g.splits[t]) {
        sp[std::string(model::SplitAxisName(split.axis))] = split.cost;
      }
      task["splits"] = std::move(sp);
    }
    tasks.push_back(std::move(task));
  }
  doc["tasks"] = std::move(tasks);
  json edges = json::array();
  for (const scheduler::TaskGraph::Edge& e : g.edges) {
    edges.push_back({{"from", e.from}, {"to", e.to}, {"transfer_us", e.transfer_us}});
  }
  doc["edges"] = std::move(edges);
  return doc.dump(1) + "\n";
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
