#include "bench/psched_bench/results_table.h"

#include <algorithm>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace psched::bench {
namespace {

constexpr char kExact[] = "exact";

std::string CsvField(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

template <typename T>
std::vector<std::string> InOrder(const std::vector<ResultRow>& rows, T key) {
  std::vector<std::string> out;
  for (const ResultRow& r : rows) {
    const std::string& k = key(r);
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  }
  return out;
}

}  // namespace

void Normalize(std::vector<ResultRow>& rows) {
  std::map<std::string, std::pair<double, std::string>> reference;  // model -> (makespan, method)
  for (const ResultRow& r : rows) {
    if (!r.ok) continue;
    auto [it, inserted] = reference.emplace(r.model, std::pair{r.makespan_us, r.method});
    const bool exact_already = it->second.second == kExact;
    if (inserted) continue;
    if (r.method == kExact || (!exact_already && r.makespan_us < it->second.first)) {
      it->second = {r.makespan_us, r.method};
    }
  }
  for (ResultRow& r : rows) {
    auto it = reference.find(r.model);
    if (!r.ok || it == reference.end() || it->second.first <= 0) {
      r.normalized = 0;
      continue;
    }
    r.normalized = r.makespan_us / it->second.first;
    r.reference = it->second.second;
  }
}

std::vector<MethodSummary> Summarize(const std::vector<ResultRow>& rows) {
  std::vector<MethodSummary> out;
  for (const std::string& method : InOrder(rows, [](const ResultRow& r) -> const std::string& { return r.method; })) {
    MethodSummary s;
    s.method = method;
    double sum = 0, planning = 0;
    for (const ResultRow& r : rows) {
      if (r.method != method) continue;
      if (!r.ok) {
        ++s.failed;
        continue;
      }
      ++s.models;
      sum += r.normalized;
      s.worst = std::max(s.worst, r.normalized);
      planning += r.planning_ms;
      s.max_planning_ms = std::max(s.max_planning_ms, r.planning_ms);
    }
    if (s.models > 0) {
      s.avg = sum / s.models;
      s.avg_planning_ms = planning / s.models;
    }
    out.push_back(s);
  }
  return out;
}

std::string CsvHeader() {
  return "model,platform,method,makespan_us,planning_ms,normalized,reference,ops,subtasks,"
         "partitioned_ops,ok,error,stages,stages_proven,stage_gap,lower_bound_us,"
         "staged_makespan_us,exact_source\n";
}

std::string CsvLine(const ResultRow& r) {
  return absl::StrFormat("%s,%s,%s,%.3f,%.3f,%.5f,%s,%d,%d,%d,%s,%s,%d,%d,%.6f,%.3f,%.3f,%s\n",
                         CsvField(r.model), CsvField(r.platform), CsvField(r.method), r.makespan_us,
                         r.planning_ms, r.normalized, CsvField(r.reference), r.ops, r.subtasks,
                         r.partitioned_ops, r.ok ? "true" : "false", CsvField(r.error), r.stages,
                         r.stages_proven, r.stage_gap, r.lower_bound_us, r.staged_makespan_us,
                         CsvField(r.exact_source));
}

nlohmann::json ToJson(const std::vector<ResultRow>& rows, const std::vector<MethodSummary>& summary) {
  nlohmann::json j;
  j["results"] = nlohmann::json::array();
  for (const ResultRow& r : rows) {
    nlohmann::json row = {{"model", r.model},       {"platform", r.platform},
                          {"method", r.method},     {"ok", r.ok},
                          {"makespan_us", r.makespan_us}, {"planning_ms", r.planning_ms},
                          {"normalized", r.normalized},   {"reference", r.reference},
                          {"ops", r.ops},           {"subtasks", r.subtasks},
                          {"partitioned_ops", r.partitioned_ops}};
    if (!r.ok) row["error"] = r.error;
    if (r.stages > 0) {
      row["exact"] = {{"stages", r.stages},
                      {"stages_proven", r.stages_proven},
                      {"stage_gap", r.stage_gap},
                      {"lower_bound_us", r.lower_bound_us},
                      {"staged_makespan_us", r.staged_makespan_us},
                      {"source", r.exact_source}};
    }
    j["results"].push_back(std::move(row));
  }
  j["summary"] = nlohmann::json::array();
  for (const MethodSummary& s : summary) {
    j["summary"].push_back({{"method", s.method}, {"models", s.models}, {"failed", s.failed},
                            {"avg", s.avg}, {"worst", s.worst}, {"avg_planning_ms", s.avg_planning_ms},
                            {"max_planning_ms", s.max_planning_ms}});
  }
  return j;
}

std::string TextTable(const std::vector<ResultRow>& rows, const std::vector<MethodSummary>& summary) {
  const std::vector<std::string> models =
      InOrder(rows, [](const ResultRow& r) -> const std::string& { return r.model; });
  std::map<std::pair<std::string, std::string>, const ResultRow*> cell;
  for (const ResultRow& r : rows) cell[{r.model, r.method}] = &r;
  size_t model_width = 10;
  for (const std::string& m : models) model_width = std::max(model_width, m.size());
  std::string out = absl::StrFormat("Makespan normalised to the reference (exact where it ran, else the best method):\n\n");
  // Methods as rows keep the table narrow enough for a terminal whatever the model count.
  size_t method_width = 8;
  for (const MethodSummary& s : summary) method_width = std::max(method_width, s.method.size());
  absl::StrAppend(&out, absl::StrFormat("%-*s  %6s  %6s  %9s", method_width, "method", "avg", "worst", "plan_ms"));
  absl::StrAppend(&out, "\n");
  for (const MethodSummary& s : summary) {
    absl::StrAppend(&out, absl::StrFormat("%-*s  %6.3f  %6.3f  %9.2f%s\n", method_width, s.method, s.avg,
                                          s.worst, s.avg_planning_ms,
                                          s.failed > 0 ? absl::StrCat("  (", s.failed, " failed)") : ""));
  }
  absl::StrAppend(&out, "\nPer model (normalised makespan; reference makespan in ms):\n\n");
  absl::StrAppend(&out, absl::StrFormat("%-*s", method_width, "method"));
  for (size_t k = 0; k < models.size(); ++k) absl::StrAppend(&out, absl::StrFormat(" %6s", absl::StrCat("m", k)));
  absl::StrAppend(&out, "\n");
  for (const MethodSummary& s : summary) {
    absl::StrAppend(&out, absl::StrFormat("%-*s", method_width, s.method));
    for (const std::string& m : models) {
      auto it = cell.find({m, s.method});
      if (it == cell.end()) {
        absl::StrAppend(&out, absl::StrFormat(" %6s", "-"));
      } else if (!it->second->ok) {
        absl::StrAppend(&out, absl::StrFormat(" %6s", "fail"));
      } else {
        absl::StrAppend(&out, absl::StrFormat(" %6.3f", it->second->normalized));
      }
    }
    absl::StrAppend(&out, "\n");
  }
  absl::StrAppend(&out, "\n");
  for (size_t k = 0; k < models.size(); ++k) {
    double reference = std::numeric_limits<double>::quiet_NaN();
    std::string by;
    for (const ResultRow& r : rows) {
      if (r.model == models[k] && r.ok && r.normalized > 0) {
        reference = r.makespan_us / r.normalized / 1000.0;
        by = r.reference;
        break;
      }
    }
    absl::StrAppend(&out, absl::StrFormat("m%-3d %-*s  ref %8.3f ms (%s)\n", k, model_width, models[k], reference, by));
  }
  bool any_exact = false;
  for (const ResultRow& r : rows) any_exact |= r.ok && r.stages > 0;
  if (!any_exact) return out;
  absl::StrAppend(&out, "\nExact solvers: stages proven optimal / all, the sum of the stage gaps over the "
                        "makespan, the whole problem's lower bound, what was returned:\n\n");
  for (const ResultRow& r : rows) {
    if (!r.ok || r.stages == 0) continue;
    absl::StrAppend(&out, absl::StrFormat("%-*s %-*s  proven %3d/%-3d  gap %6.2f%%  bound %9.3f ms  %s  %.1f s\n",
                                          model_width, r.model, method_width, r.method, r.stages_proven,
                                          r.stages, 100 * r.stage_gap, r.lower_bound_us / 1000.0,
                                          r.exact_source, r.planning_ms / 1000.0));
  }
  return out;
}

}  // namespace psched::bench
