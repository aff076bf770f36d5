// psched-bench: runs named schedulers on ONNX models or JSON task graphs for one platform
// profile and reports makespans normalised per model (the paper's Table 3), planning
// times, optional Gantt charts, and the iterative search's planning cost (sec. 6.3).
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/psched_bench/cross_platform.h"
#include "bench/psched_bench/results_table.h"
#include "bench/psched_bench/schedule_gantt.h"
#include "bench/psched_bench/taskgraph_json.h"
#include "fmt/core.h"
#include "model/onnx_import.h"
#include "model/split.h"
#include "predictor/profiles.h"
#include "scheduler/exact/exact_scheduler.h"
#include "scheduler/list_scheduler.h"
#include "scheduler/partition_aware/iterative_search.h"
#include "scheduler/registry/registry.h"

namespace psched::bench {
namespace {

namespace fs = std::filesystem;

// Every practical method; the exact ones (minutes per model) are opt-in.
constexpr char kDefaultMethods[] =
    "single:gpu,single:cpu.l,single:cpu.m,heft,lookahead-heft,peft,ldcp,ceft,psls,partition-only,"
    "expanded-equal:heft,expanded-local:heft,pa-heft,iterative";

struct Flags {
  std::vector<std::string> models;
  std::string taskgraph;
  std::string platform = "oneplus11";
  std::string methods;
  std::string out_csv;
  std::string format = "table";
  uint64_t seed = 0;
  std::string gantt_dir;
  std::vector<std::string> params;
  double stage_timeout_ms = 0;
  int splits = 0;
  int64_t alignment = 1;
  bool predict_all = false;
  bool planning_time = false;
  int repeat = 3;
  std::string cross_platforms;
};

scheduler::ProblemOptions ProblemOptionsOf(const Flags& flags) {
  scheduler::ProblemOptions options;
  options.max_splits = flags.splits;
  options.alignment = flags.alignment;
  options.predict_all = flags.predict_all;
  return options;
}

double MillisSince(absl::Time t) { return absl::ToDoubleMilliseconds(absl::Now() - t); }

std::string FileSafe(std::string s) {
  for (char& c : s) {
    if (c == ':' || c == '/' || c == ' ') c = '_';
  }
  return s;
}

absl::StatusOr<std::vector<std::string>> ModelFiles(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  for (const std::string& arg : args) {
    std::error_code ec;
    if (fs::is_directory(arg, ec)) {
      std::vector<std::string> found;
      for (const auto& entry : fs::directory_iterator(arg, ec)) {
        if (entry.path().extension() == ".onnx") found.push_back(entry.path().string());
      }
      if (found.empty()) return absl::NotFoundError(absl::StrCat("no .onnx files in ", arg));
      std::sort(found.begin(), found.end());
      files.insert(files.end(), found.begin(), found.end());
    } else if (fs::is_regular_file(arg, ec)) {
      files.push_back(arg);
    } else {
      return absl::NotFoundError(absl::StrCat("--models: ", arg, " is neither a file nor a folder"));
    }
  }
  return files;
}

// The options for `method`: --param KEY=VALUE applies to every method, --param
// PREFIX.KEY=VALUE only to methods whose name starts with PREFIX (e.g.
// exact.stage_time_limit_s=2 for the exact methods).
absl::StatusOr<scheduler::SchedulerOptions> Options(const Flags& flags, const std::string& method) {
  scheduler::SchedulerOptions options;
  options.seed = flags.seed;
  if (flags.stage_timeout_ms > 0) options.timeout = absl::Milliseconds(flags.stage_timeout_ms);
  for (const std::string& p : flags.params) {
    const size_t eq = p.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(absl::StrCat("--param '", p, "' is not [PREFIX.]KEY=VALUE"));
    }
    std::string key = p.substr(0, eq);
    const size_t dot = key.find('.');
    if (dot != std::string::npos) {
      if (method.rfind(key.substr(0, dot), 0) != 0) continue;
      key = key.substr(dot + 1);
    }
    options.params[key] = p.substr(eq + 1);
  }
  return options;
}

int PartitionedOps(const scheduler::Schedule& s) {
  int n = 0;
  for (const scheduler::PartitionPlan& p : s.plans()) n += p.ActiveSubtasks() > 1 ? 1 : 0;
  return n;
}

// Plans one (problem, method) pair and fills the row; writes the Gantt chart if asked.
void RunMethod(const scheduler::Problem& problem, const std::string& method,
               const scheduler::SchedulerOptions& options, double setup_ms, const Flags& flags,
               ResultRow& row, scheduler::Schedule* kept = nullptr) {
  row.method = method;
  row.ops = problem.num_ops();
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> scheduler = scheduler::MakeScheduler(method);
  if (!scheduler.ok()) {
    row.error = std::string(scheduler.status().message());
    return;
  }
  const absl::Time start = absl::Now();
  absl::StatusOr<scheduler::Schedule> schedule;
  if (const auto* exact = dynamic_cast<const scheduler::exact::ExactScheduler*>(scheduler->get())) {
    scheduler::exact::ExactReport report;
    schedule = exact->PlanWithReport(problem, options, &report);
    row.stages = static_cast<int>(report.stages.size());
    row.stages_proven = report.stages_proven;
    row.stage_gap = report.makespan_us > 0 ? report.stage_gap_us / report.makespan_us : 0;
    row.lower_bound_us = report.lower_bound_us;
    row.staged_makespan_us = report.staged_makespan_us;
    row.exact_source = report.source;
  } else {
    schedule = (*scheduler)->Plan(problem, options);
  }
  row.planning_ms = setup_ms + MillisSince(start);
  if (!schedule.ok()) {
    row.error = std::string(schedule.status().message());
    return;
  }
  if (absl::Status valid = scheduler::ValidateSchedule(problem, *schedule); !valid.ok()) {
    row.error = absl::StrCat("invalid schedule: ", valid.message());
    return;
  }
  row.ok = true;
  row.makespan_us = schedule->makespan_us();
  row.subtasks = static_cast<int>(schedule->subtasks().size());
  row.partitioned_ops = PartitionedOps(*schedule);
  if (!flags.gantt_dir.empty()) {
    const std::string path =
        (fs::path(flags.gantt_dir) / (FileSafe(row.model) + "__" + FileSafe(method) + ".svg")).string();
    timeline::GanttOptions gantt;
    gantt.title = absl::StrCat(row.model, " - ", method, " on ", row.platform);
    if (absl::Status s = WriteScheduleGanttSvg(path, problem, *schedule, gantt); !s.ok()) {
      fmt::print(stderr, "warning: {}\n", std::string(s.message()));
    }
  }
  if (kept != nullptr) *kept = *std::move(schedule);
}

absl::Status WriteOutputs(std::vector<ResultRow>& rows, const Flags& flags) {
  Normalize(rows);
  const std::vector<MethodSummary> summary = Summarize(rows);
  if (!flags.out_csv.empty()) {
    std::ofstream csv(flags.out_csv, std::ios::trunc);
    if (!csv) return absl::UnavailableError(absl::StrCat("cannot write ", flags.out_csv));
    csv << CsvHeader();
    for (const ResultRow& r : rows) csv << CsvLine(r);
    if (!csv) return absl::UnavailableError(absl::StrCat("writing ", flags.out_csv, " failed"));
  }
  if (flags.format == "json") {
    std::cout << ToJson(rows, summary).dump(2) << "\n";
  } else {
    std::cout << TextTable(rows, summary);
  }
  int failed = 0;
  for (const ResultRow& r : rows) {
    if (r.ok) continue;
    ++failed;
    fmt::print(stderr, "{} / {}: {}\n", r.model, r.method, r.error);
  }
  if (failed > 0) return absl::InternalError(absl::StrCat(failed, " of ", rows.size(), " runs failed"));
  return absl::OkStatus();
}

absl::Status RunModels(const Flags& flags, const std::vector<std::string>& methods) {
  absl::StatusOr<std::vector<std::string>> files = ModelFiles(flags.models);
  if (!files.ok()) return files.status();
  absl::StatusOr<predictor::Profile> profile = predictor::LoadProfile(flags.platform);
  if (!profile.ok()) return profile.status();
  std::vector<ResultRow> rows;
  for (size_t f = 0; f < files->size(); ++f) {
    const std::string& path = (*files)[f];
    // The importer's messages name the file already.
    absl::StatusOr<model::Graph> graph = model::ImportOnnxFile(path, model::ImportOptions{});
    if (!graph.ok()) return graph.status();
    for (const std::string& method : methods) {
      absl::StatusOr<scheduler::SchedulerOptions> options = Options(flags, method);
      if (!options.ok()) return options.status();
      ResultRow row;
      row.model = graph->name;
      row.platform = flags.platform;
      // A fresh problem per method: its planning time includes the predictions it needs.
      const absl::Time setup = absl::Now();
      absl::StatusOr<scheduler::Problem> problem = scheduler::Problem::FromGraph(
          *graph, profile->platform, *profile->model, ProblemOptionsOf(flags));
      if (!problem.ok()) return problem.status();
      RunMethod(*problem, method, *options, MillisSince(setup), flags, row);
      fmt::print(stderr, "[{}/{}] {:<22} {:<24} {:>10.3f} ms  planned in {:.1f} ms{}\n", f + 1, files->size(),
                 row.model, method, row.makespan_us / 1000.0, row.planning_ms, row.ok ? "" : "  FAILED");
      rows.push_back(std::move(row));
    }
  }
  return WriteOutputs(rows, flags);
}

absl::Status RunTaskGraph(const Flags& flags, const std::vector<std::string>& methods) {
  absl::StatusOr<TaskGraphInput> input = LoadTaskGraphFile(flags.taskgraph);
  if (!input.ok()) return input.status();
  absl::StatusOr<scheduler::Problem> problem = scheduler::Problem::FromTaskGraph(input->tasks, input->platform, input->options);
  if (!problem.ok()) return problem.status();
  std::vector<ResultRow> rows;
  nlohmann::json schedules = nlohmann::json::object();
  for (const std::string& method : methods) {
    absl::StatusOr<scheduler::SchedulerOptions> options = Options(flags, method);
    if (!options.ok()) return options.status();
    ResultRow row;
    row.model = fs::path(flags.taskgraph).stem().string();
    row.platform = input->platform.name;
    scheduler::Schedule schedule;
    RunMethod(*problem, method, *options, 0.0, flags, row, &schedule);
    if (row.ok) {
      nlohmann::json subtasks = nlohmann::json::array();
      for (const scheduler::ScheduledSubtask& s : schedule.subtasks()) {
        subtasks.push_back({{"task", problem->op_name(s.op)},
                            {"device", input->platform.devices[static_cast<size_t>(s.device)].name},
                            {"axis", std::string(model::SplitAxisName(s.axis))},
                            {"work", {s.begin, s.end}},
                            {"start_us", s.start_us},
                            {"end_us", s.end_us}});
      }
      schedules[method] = std::move(subtasks);
    }
    rows.push_back(std::move(row));
  }
  if (flags.format == "json") {
    Normalize(rows);
    nlohmann::json j = ToJson(rows, Summarize(rows));
    for (auto& r : j["results"]) {
      if (schedules.contains(r["method"].get<std::string>())) r["subtasks"] = schedules[r["method"].get<std::string>()];
    }
    std::cout << j.dump(2) << "\n";
    int failed = 0;
    for (const ResultRow& r : rows) {
      if (r.ok) continue;
      ++failed;
      fmt::print(stderr, "{}: {}\n", r.method, r.error);
    }
    if (failed > 0) return absl::InternalError(absl::StrCat(failed, " of ", rows.size(), " runs failed"));
    return absl::OkStatus();
  }
  return WriteOutputs(rows, flags);
}

// Single-threaded planning cost of the iterative search: `repeat` cold runs (fresh problem:
// predictions + search) per model, the fastest reported, plus one warm run (predictions
// memoised) that isolates the search.
absl::Status RunPlanningTime(const Flags& flags, const std::vector<std::string>& methods) {
  absl::StatusOr<std::vector<std::string>> files = ModelFiles(flags.models);
  if (!files.ok()) return files.status();
  absl::StatusOr<predictor::Profile> profile = predictor::LoadProfile(flags.platform);
  if (!profile.ok()) return profile.status();
  nlohmann::json out = nlohmann::json::array();
  for (const std::string& method : methods) {
    absl::StatusOr<scheduler::SchedulerOptions> options = Options(flags, method);
    if (!options.ok()) return options.status();
    const std::vector<std::string> parts = absl::StrSplit(method, absl::MaxSplits(':', 1));
    if (parts[0] != "iterative") {
      return absl::InvalidArgumentError(absl::StrCat("--planning-time measures iterative[:<list>], got '", method, "'"));
    }
    absl::StatusOr<std::unique_ptr<scheduler::ListScheduler>> list =
        scheduler::MakeListScheduler(parts.size() > 1 ? parts[1] : "heft");
    if (!list.ok()) return list.status();
    absl::StatusOr<scheduler::partition_aware::IterativeOptions> iterative =
        scheduler::partition_aware::ApplySchedulerOptions({}, *options);
    if (!iterative.ok()) return iterative.status();
    std::cout << fmt::format("Planning time of {} on {} (single thread, best of {} cold runs):\n\n", method,
                             flags.platform, flags.repeat);
    std::cout << fmt::format("{:<22} {:>5} {:>6} {:>10} {:>10} {:>10} {:>8} {:>12} {:>11}\n", "model", "ops",
                             "stages", "total_ms", "predict_ms", "search_ms", "evals", "evals_per_s",
                             "makespan_ms");
    double worst = 0;
    for (const std::string& path : *files) {
      absl::StatusOr<model::Graph> graph = model::ImportOnnxFile(path, model::ImportOptions{});
      if (!graph.ok()) return graph.status();
      double best_total = 1e300;
      scheduler::partition_aware::IterativeStats stats;
      for (int r = 0; r < std::max(1, flags.repeat); ++r) {
        const absl::Time start = absl::Now();
        absl::StatusOr<scheduler::Problem> problem = scheduler::Problem::FromGraph(
            *graph, profile->platform, *profile->model, ProblemOptionsOf(flags));
        if (!problem.ok()) return problem.status();
        absl::StatusOr<scheduler::Schedule> s =
            scheduler::partition_aware::IterativeSearch(*problem, **list, *iterative, &stats);
        if (!s.ok()) return s.status();
        best_total = std::min(best_total, MillisSince(start));
        if (r + 1 == std::max(1, flags.repeat)) {
          // Warm: the same problem again, predictions already memoised.
          scheduler::partition_aware::IterativeStats warm;
          absl::StatusOr<scheduler::Schedule> again =
              scheduler::partition_aware::IterativeSearch(*problem, **list, *iterative, &warm);
          if (!again.ok()) return again.status();
          const double search_ms = warm.search_ms;
          const double evals_per_s = warm.evaluations / std::max(1e-9, search_ms / 1000.0);
          std::cout << fmt::format("{:<22} {:>5} {:>6} {:>10.2f} {:>10.2f} {:>10.2f} {:>8} {:>12.0f} {:>11.3f}\n",
                                   graph->name, problem->num_ops(), warm.stages, best_total,
                                   std::max(0.0, best_total - search_ms), search_ms, warm.evaluations,
                                   evals_per_s, again->makespan_us() / 1000.0);
          out.push_back({{"model", graph->name}, {"method", method}, {"ops", problem->num_ops()},
                         {"total_ms", best_total}, {"search_ms", search_ms},
                         {"evaluations", warm.evaluations}, {"evaluations_per_s", evals_per_s},
                         {"makespan_us", again->makespan_us()}});
        }
      }
      worst = std::max(worst, best_total);
      fmt::print(stderr, "planned {} in {:.1f} ms\n", graph->name, best_total);
    }
    std::cout << fmt::format("\nslowest model: {:.2f} ms\n\n", worst);
  }
  if (!flags.out_csv.empty()) {
    std::ofstream csv(flags.out_csv, std::ios::trunc);
    csv << "model,method,ops,total_ms,search_ms,evaluations,evaluations_per_s,makespan_us\n";
    for (const auto& r : out) {
      csv << fmt::format("{},{},{},{:.3f},{:.3f},{},{:.0f},{:.3f}\n", r["model"].get<std::string>(),
                         r["method"].get<std::string>(), r["ops"].get<int>(), r["total_ms"].get<double>(),
                         r["search_ms"].get<double>(), r["evaluations"].get<int64_t>(),
                         r["evaluations_per_s"].get<double>(), r["makespan_us"].get<double>());
    }
    if (!csv) return absl::UnavailableError(absl::StrCat("cannot write ", flags.out_csv));
  }
  return absl::OkStatus();
}

// The paper's cross-platform table: one method, every model planned on each platform of
// --cross-platforms and run on each.
absl::Status RunCrossPlatform(const Flags& flags, const std::vector<std::string>& methods) {
  if (methods.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("--cross-platforms takes one method, got ", methods.size()));
  }
  absl::StatusOr<std::vector<std::string>> files = ModelFiles(flags.models);
  if (!files.ok()) return files.status();
  std::vector<predictor::Profile> profiles;
  for (const std::string& name : std::vector<std::string>(
           absl::StrSplit(flags.cross_platforms, ',', absl::SkipWhitespace()))) {
    absl::StatusOr<predictor::Profile> profile = predictor::LoadProfile(name);
    if (!profile.ok()) return profile.status();
    profiles.push_back(*std::move(profile));
  }
  std::vector<model::Graph> graphs;
  for (const std::string& path : *files) {
    absl::StatusOr<model::Graph> graph = model::ImportOnnxFile(path, model::ImportOptions{});
    if (!graph.ok()) return graph.status();
    graphs.push_back(*std::move(graph));
  }
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> scheduler =
      scheduler::MakeScheduler(methods[0]);
  if (!scheduler.ok()) return scheduler.status();
  absl::StatusOr<scheduler::SchedulerOptions> options = Options(flags, methods[0]);
  if (!options.ok()) return options.status();
  fmt::print(stderr, "planning {} models on {} platforms with {}\n", graphs.size(), profiles.size(),
             methods[0]);
  absl::StatusOr<CrossPlatformResult> result =
      CrossPlatform(graphs, profiles, **scheduler, *options, ProblemOptionsOf(flags));
  if (!result.ok()) return result.status();
  std::cout << fmt::format(
                   "{} plans, planned on the row's platform and run on the column's, normalised "
                   "per model "
                   "to the column's own plan (average / worst over {} models):\n\n",
                   methods[0], graphs.size())
            << CrossPlatformTable(*result);
  if (!flags.out_csv.empty()) {
    std::ofstream csv(flags.out_csv, std::ios::trunc);
    csv << "planned_on,run_on,model,ratio\n";
    for (size_t from = 0; from < result->platforms.size(); ++from) {
      for (size_t on = 0; on < result->platforms.size(); ++on) {
        for (size_t m = 0; m < result->models.size(); ++m) {
          csv << fmt::format("{},{},{},{:.6f}\n", result->platforms[from], result->platforms[on],
                             result->models[m], result->ratio[from][on][m]);
        }
      }
    }
    if (!csv) return absl::UnavailableError(absl::StrCat("cannot write ", flags.out_csv));
  }
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  CLI::App app{"psched-bench: compare schedulers on ONNX models or a JSON task graph"};
  Flags flags;
  app.add_option("--models", flags.models, "ONNX files and/or folders of them");
  app.add_option("--taskgraph", flags.taskgraph, "JSON task graph (docs/taskgraph-format.md)");
  app.add_option("--platform", flags.platform,
                 "platform profile; measured ones predict with GBDT models trained on phone data, "
                 "the others are synthetic:\n" + predictor::DescribeProfiles())
      ->capture_default_str();
  app.add_option("--methods", flags.methods, "comma-separated scheduler names (default: every baseline)");
  app.add_option("--out", flags.out_csv, "write the results as CSV to this file");
  app.add_option("-o,--output", flags.format, "stdout format")->check(CLI::IsMember({"table", "json"}))->capture_default_str();
  app.add_option("--seed", flags.seed, "seed of randomised methods")->capture_default_str();
  app.add_option("--gantt", flags.gantt_dir, "write one Gantt chart SVG per model x method into this folder");
  app.add_option("--param", flags.params,
                 "method option KEY=VALUE, or PREFIX.KEY=VALUE for methods named PREFIX* "
                 "(e.g. iterative.rho=0.5, exact.stage_time_limit_s=2); repeatable");
  app.add_option("--stage-timeout-ms", flags.stage_timeout_ms, "per-stage search budget (0: none)");
  app.add_option("--splits", flags.splits, "max subtasks per op K (0: number of devices)");
  app.add_option("--alignment", flags.alignment, "work units per partition step")->check(CLI::PositiveNumber);
  app.add_flag("--predict-all", flags.predict_all,
               "predict every candidate configuration in one batch before planning");
  app.add_flag("--planning-time", flags.planning_time, "measure the iterative search's planning cost");
  app.add_option("--repeat", flags.repeat, "cold runs per model for --planning-time")->capture_default_str();
  app.add_option("--cross-platforms", flags.cross_platforms,
                 "comma-separated platforms with the same devices: plan every model on each with the one "
                 "--methods (default iterative) and run each plan on each (the paper's cross-platform table)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (flags.models.empty() == flags.taskgraph.empty()) {
    fmt::print(stderr, "psched-bench: give exactly one of --models or --taskgraph\n");
    return 2;
  }
  if ((flags.planning_time || !flags.cross_platforms.empty()) && flags.models.empty()) {
    fmt::print(stderr, "psched-bench: --planning-time and --cross-platforms need --models\n");
    return 2;
  }
  if (!flags.gantt_dir.empty()) {
    std::error_code ec;
    fs::create_directories(flags.gantt_dir, ec);
    if (ec) {
      fmt::print(stderr, "psched-bench: cannot create {}: {}\n", flags.gantt_dir, std::string(ec.message()));
      return 2;
    }
  }
  std::string method_list = flags.methods;
  if (method_list.empty()) {
    method_list = flags.planning_time || !flags.cross_platforms.empty() ? "iterative" : kDefaultMethods;
  }
  std::vector<std::string> methods = absl::StrSplit(method_list, ',', absl::SkipWhitespace());
  for (const std::string& m : methods) {
    if (absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> s = scheduler::MakeScheduler(m); !s.ok()) {
      fmt::print(stderr, "psched-bench: --methods: {}\n", std::string(s.status().message()));
      return 2;
    }
  }
  const absl::Status status = !flags.cross_platforms.empty() ? RunCrossPlatform(flags, methods)
                              : flags.planning_time            ? RunPlanningTime(flags, methods)
                              : flags.taskgraph.empty()        ? RunModels(flags, methods)
                                                               : RunTaskGraph(flags, methods);
  if (!status.ok()) {
    fmt::print(stderr, "psched-bench: {}\n", std::string(status.message()));
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace psched::bench

int main(int argc, char** argv) { return psched::bench::Main(argc, argv); }
