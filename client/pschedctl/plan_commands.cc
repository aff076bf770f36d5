#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "client/pschedctl/commands.h"
#include "client/pschedctl/output.h"
#include "client/pschedctl/timelines.h"
#include "timeline/gantt_svg.h"

namespace psched::pschedctl {

void CmdPlanShow(const Globals& g, const std::string& id, const std::string& scheduler,
                 const std::vector<std::string>& option_list, bool refresh,
                 const std::string& svg_path) {
  std::map<std::string, std::string> options;
  for (const std::string& option : option_list) {
    std::vector<std::string> kv = absl::StrSplit(option, absl::MaxSplits('=', 1));
    if (kv.size() != 2) throw CommandError{absl::StrCat("option '", option, "' is not KEY=VALUE")};
    options[kv[0]] = kv[1];
  }
  auto client = Connect(g);
  auto progress = [](const v1::PlanProgress& p) {
    std::fprintf(stderr, "planning: %s (%.0f ms)\n", p.stage().c_str(), p.elapsed_ms());
  };
  v1::Plan plan = Check(client.GetPlan(id, scheduler, options, refresh, progress));
  if (!svg_path.empty()) {
    const PlanTimeline planned = PlanSpans(plan);
    CheckStatus(timeline::WriteGanttSvg(
        svg_path, planned.devices, planned.spans, plan.makespan_us(),
        {.title = absl::StrCat(plan.scheduler(), " plan of model ", Short(plan.model_id()))}));
  }
  if (g.json()) {
    PrintJson(PlanJson(plan));
    return;
  }
  std::cout << "model " << plan.model_id() << "\nscheduler " << plan.scheduler() << ", makespan "
            << Fixed(plan.makespan_us()) << " us, planned in " << Fixed(plan.planning_ms(), 2)
            << " ms"
            << (plan.imported() ? " (imported)"
                : plan.cached() ? " (cached)"
                                : "")
            << "\n";
  if (plan.has_memory()) {
    const v1::PlanMemory& memory = plan.memory();
    std::cout << "peak memory " << HumanBytes(memory.peak_bytes()) << ": activations "
              << HumanBytes(memory.activation_bytes()) << ", weights "
              << HumanBytes(memory.weight_bytes()) << ", inputs and outputs "
              << HumanBytes(memory.io_bytes()) << "\n";
  }
  if (plan.measured_runs() > 0) {
    std::cout << "predicted " << Fixed(plan.makespan_us()) << " us, measured "
              << Fixed(plan.measured_makespan_us()) << " us (median of the last runs; "
              << plan.measured_runs() << " runs), predictor " << plan.predictor_version() << "\n";
  } else {
    std::cout << "predicted " << Fixed(plan.makespan_us()) << " us, not measured yet\n";
  }
  std::vector<std::vector<std::string>> rows;
  int fallbacks = 0;
  for (const auto& s : plan.subtasks()) {
    fallbacks += s.fallback() ? 1 : 0;
    rows.push_back({s.op(), s.device(), s.strategy(),
                    absl::StrCat("[", s.work_begin(), ", ", s.work_end(), ")"), Fixed(s.start_us()),
                    Fixed(s.end_us()),
                    absl::StrCat(Fixed(s.end_us() - s.start_us()), s.fallback() ? "*" : ""),
                    s.measured_us() > 0 ? Fixed(s.measured_us()) : "-"});
  }
  PrintTable(
      {"OP", "DEVICE", "STRATEGY", "WORK", "START_US", "END_US", "PREDICTED_US", "MEASURED_US"},
      rows);
  if (fallbacks > 0) {
    std::cout << "* " << fallbacks << " subtask" << (fallbacks == 1 ? "" : "s")
              << " predicted by the analytic fallback: the predictor has no data for their op "
                 "family\n";
  }
}

void CmdPlanExport(const Globals& g, const std::string& id, const std::string& scheduler,
                   const std::string& out_path) {
  auto client = Connect(g);
  v1::ExportPlansResponse exported = Check(client.ExportPlans(id, scheduler));
  {
    std::ofstream out(out_path, std::ios::binary | std::ios::trunc);
    out << exported.bundle();
    out.close();
    if (!out) throw CommandError{absl::StrCat("cannot write ", out_path)};
  }
  if (g.json()) {
    PrintJson({{"file", out_path}, {"plans", exported.plans()}});
    return;
  }
  std::cout << "wrote " << exported.plans() << " plan" << (exported.plans() == 1 ? "" : "s")
            << " to " << out_path << "\n";
}

void CmdPlanImport(const Globals& g, const std::string& path) {
  const std::string bundle = ReadFile(path);
  // pschedd's limit (docs/api.md, Plan bundles), checked here so no 64 MiB message is sent.
  constexpr size_t kMaxBundleBytes = size_t{48} << 20;
  if (bundle.size() > kMaxBundleBytes) {
    throw CommandError{absl::StrCat(path, ": ", bundle.size(), " bytes; a plan bundle is at most ",
                                    kMaxBundleBytes >> 20, " MiB")};
  }
  auto client = Connect(g);
  v1::ImportPlansResponse imported = Check(client.ImportPlans(bundle));
  if (g.json()) {
    json plans = json::array();
    for (const auto& p : imported.plans()) {
      plans.push_back({{"scheduler_config", p.scheduler_config()},
                       {"predictor_version", p.predictor_version()},
                       {"served", p.served()}});
    }
    PrintJson({{"model_id", imported.model_id()},
               {"plans", plans},
               {"calibration", imported.calibration()}});
    return;
  }
  std::cout << "model " << imported.model_id() << ": imported " << imported.plans_size() << " plan"
            << (imported.plans_size() == 1 ? "" : "s") << "\n";
  if (!imported.calibration().empty()) {
    std::cout << "calibration: " << imported.calibration() << "\n";
  }
  std::vector<std::vector<std::string>> rows;
  for (const auto& p : imported.plans()) {
    rows.push_back({p.scheduler_config(), p.predictor_version(),
                    p.served() ? "yes" : "no (another predictor version)"});
  }
  PrintTable({"SCHEDULER_CONFIG", "PREDICTOR", "SERVED"}, rows);
}

}  // namespace psched::pschedctl
