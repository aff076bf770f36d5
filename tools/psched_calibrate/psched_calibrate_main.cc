// psched-calibrate: the calibration pipeline (calibration/pipeline.h) from the command line.
// It measures op latencies on this machine's devices (alone, and under co-run load from the
// other devices), trains the host's latency model on them (per device and op family a GBDT
// model or the analytic fit), then runs real plans of the priority models made with it on the
// CPU devices and fits the model's run costs (in-run factors, sync between devices), and prints
// the held-out error table of both models side by side, the co-run slowdowns and the run
// costs. Progress goes to stderr.
//
//   psched-calibrate --budget-s 5 --out calibration.json     (pschedd's devices: clusters + gpu)
//   psched-calibrate --devices cpu.0,cpu.1,gpu --budget-s 5 --out calibration.json
//   psched-calibrate --models a.onnx b.onnx c.onnx --priority-models a,b --out calibration.json
//   psched-calibrate --samples calibration.json --out refit.json   (fit only, no timing)
//
// The priority models are the graph names --priority-models lists, or every model --models
// loads when it lists none: their ops are timed first, and they alone are timed in-graph,
// planned and probed for the run costs, so the probes take longer the more models there are.
//
// Devices: by default pschedd's (one per CPU cluster found in sysfs, plus gpu); `cpu.N` is a
// single-core CPU device pinned to core N (one thread), NAME=C+C a cluster;
// `gpu` is the OpenCL device (--opencl-device, default: a GPU, else the first device; PoCL
// on development machines, kept to one thread unless POCL_MAX_PTHREAD_COUNT is set). The
// output file holds the samples, the fitted parameters, the error report and what happened
// per device; its "params" are what the daemon stores. Exit status: 0 on success, 1 with a
// one-line reason otherwise.

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "calibration/pipeline.h"
#include "calibration/run_costs/run_costs.h"
#include "calibration/training/analytic_fit.h"
#include "calibration/training/host_training.h"
#include "calibration/training/trace_samples.h"
#include "model/onnx_import.h"
#include "model/split.h"
#include "platform/cpu_topology.h"
#include "predictor/analytic_model.h"
#include "predictor/host_model/calibration_samples.h"
#include "predictor/profiles.h"
#include "spdlog/spdlog.h"

namespace psched {
namespace {

namespace fs = std::filesystem;

struct Flags {
  std::string devices;  // empty: the daemon's default devices (DiscoveredDevices)
  std::vector<std::string> models;
  std::string out;
  std::string samples_in;
  std::string opencl_device;
  std::string log_level = "warn";
  std::vector<std::string> check_traces;
  bool run_rounds_given = false;  // --run-rounds on the command line
  bool no_anchors = false;
  calibration::PipelineOptions pipeline;
};

// cpu.N -> core N; NAME=C+C+... -> a core cluster (one pinned thread per core); gpu -> the
// OpenCL device.
absl::StatusOr<std::vector<platform::DeviceSpec>> ParseDevices(const std::string& text,
                                                               const std::string& opencl) {
  std::vector<platform::DeviceSpec> out;
  const std::vector<std::string> parts = absl::StrSplit(text, ',', absl::SkipWhitespace());
  auto parse_core = [](std::string_view digits) -> std::optional<int> {
    int core = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), core);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() || core < 0) {
      return std::nullopt;
    }
    return core;
  };
  for (const std::string& part : parts) {
    const std::string_view name = part;
    platform::DeviceSpec spec;
    spec.name = std::string(name);
    const size_t eq = name.find('=');
    if (name == "gpu") {
      spec.kind = platform::DeviceKind::kGpu;
      spec.opencl_device = opencl;
    } else if (eq != std::string_view::npos && eq > 0) {
      spec.name = std::string(name.substr(0, eq));
      for (const std::string& digits :
           std::vector<std::string>(absl::StrSplit(std::string(name.substr(eq + 1)), '+'))) {
        const std::optional<int> core = parse_core(digits);
        if (!core.has_value() || std::find(spec.cpu_cores.begin(), spec.cpu_cores.end(), *core) !=
                                     spec.cpu_cores.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "--devices: '", part, "' must list distinct core ids after '=', e.g. cpu=0+1"));
        }
        spec.cpu_cores.push_back(*core);
      }
    } else {
      const std::optional<int> core =
          name.starts_with("cpu.") ? parse_core(name.substr(4)) : std::nullopt;
      if (!core.has_value()) {
        return absl::InvalidArgumentError(
            absl::StrCat("--devices: '", part,
                         "' is neither cpu.N (N a core id), NAME=C+C (a cluster) nor gpu"));
      }
      spec.cpu_cores = {*core};
    }
    out.push_back(std::move(spec));
  }
  if (out.empty()) return absl::InvalidArgumentError("--devices lists no device");
  return out;
}

// What pschedd uses when its config lists no CPU device: one device per CPU cluster found in
// sysfs (cpu.big, cpu.mid, ...; `cpu` for one cluster), plus the gpu.
absl::StatusOr<std::vector<platform::DeviceSpec>> DiscoveredDevices(const std::string& opencl) {
  platform::TopologyOptions options;
  options.allowed_cpus = platform::ProcessAffinityCpus();
  absl::StatusOr<platform::CpuTopology> topology = platform::DiscoverCpuTopology(options);
  if (!topology.ok()) {
    return absl::FailedPreconditionError(
        absl::StrCat("CPU topology discovery failed (", topology.status().message(),
                     "); list the devices with --devices, e.g. cpu=0+1,gpu"));
  }
  std::vector<platform::DeviceSpec> devices = platform::ClusterDevices(*topology);
  platform::DeviceSpec gpu;
  gpu.name = "gpu";
  gpu.kind = platform::DeviceKind::kGpu;
  gpu.opencl_device = opencl;
  devices.push_back(std::move(gpu));
  return devices;
}

// The host profile's parameters for each device: the fit's starting point and fallback.
std::vector<predictor::AnalyticDeviceParams> Priors(
    const std::vector<platform::DeviceSpec>& devices) {
  int cores = 1;
  for (const platform::DeviceSpec& d : devices) {
    for (int c : d.cpu_cores) cores = std::max(cores, c + 1);
  }
  const predictor::Profile host = predictor::HostProfile(cores);
  const auto* model = dynamic_cast<const predictor::AnalyticModel*>(host.model.get());
  std::vector<predictor::AnalyticDeviceParams> priors;
  for (const platform::DeviceSpec& d : devices) {
    predictor::AnalyticDeviceParams p;
    p.name = d.name;
    p.gpu = d.kind == platform::DeviceKind::kGpu;
    if (model != nullptr) {
      // A cluster starts from its first core's parameters; the fit finds its own rates.
      const std::string host_name =
          p.gpu ? "gpu"
                : (host.platform.DeviceIndex(d.name).has_value() || d.cpu_cores.empty()
                       ? d.name
                       : absl::StrCat("cpu.", d.cpu_cores.front()));
      const std::optional<int> index = host.platform.DeviceIndex(host_name);
      if (index.has_value()) p = model->device(*index);
      p.name = d.name;
    }
    priors.push_back(std::move(p));
  }
  return priors;
}

absl::StatusOr<std::vector<model::Graph>> LoadModels(std::vector<std::string> paths) {
  if (paths.empty()) {
    const char* shared = std::getenv("PSCHED_SHARED_DIR");
    paths.push_back(
        (fs::path(shared != nullptr ? shared : "/work/shared") / "models/graph-only").string());
  }
  std::vector<std::string> files;
  for (const std::string& p : paths) {
    std::error_code ec;
    if (fs::is_directory(p, ec)) {
      for (const fs::directory_entry& e : fs::directory_iterator(p, ec)) {
        if (e.path().extension() == ".onnx") files.push_back(e.path().string());
      }
    } else {
      files.push_back(p);
    }
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return absl::NotFoundError("no .onnx models found in --models");
  std::vector<model::Graph> graphs;
  for (const std::string& f : files) {
    absl::StatusOr<model::Graph> g = model::ImportOnnxFile(f, model::ImportOptions{});
    if (!g.ok())
      return absl::Status(g.status().code(), absl::StrCat(f, ": ", g.status().message()));
    graphs.push_back(std::move(*g));
  }
  return graphs;
}

absl::StatusOr<nlohmann::json> ReadJson(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(path, ": not valid JSON"));
  return j;
}

// Prints how `model` predicts the measured subtasks of each co-execution trace (graphs
// found among `models` by the trace's graph name): the error table over the trace's
// devices that the model has, and predicted / measured time summed per device.
absl::Status CheckTraces(const std::vector<std::string>& paths,
                         const std::vector<model::Graph>& models,
                         const predictor::AnalyticModel& model,
                         const std::vector<std::string>& names) {
  for (const std::string& path : paths) {
    absl::StatusOr<nlohmann::json> trace = ReadJson(path);
    if (!trace.ok()) return trace.status();
    const std::string graph_name =
        trace->value("otherData", nlohmann::json::object()).value("graph", std::string());
    const auto graph = std::find_if(models.begin(), models.end(),
                                    [&](const model::Graph& g) { return g.name == graph_name; });
    if (graph == models.end()) {
      return absl::NotFoundError(
          absl::StrCat(path, ": graph '", graph_name, "' is not among the --models"));
    }
    absl::StatusOr<std::vector<predictor::host_model::CalibrationSample>> samples =
        calibration::SamplesFromTrace(*trace, *graph);
    if (!samples.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", samples.status().message()));
    }
    std::printf(
        "\n%s: %zu measured subtasks\n%s", path.c_str(), samples->size(),
        calibration::FormatErrorTable(calibration::EvaluateErrors(model, names, *samples)).c_str());
    // Sums per device and split axis (the axis is in the sample's source, "... cin[0,8) trace").
    for (size_t d = 0; d < names.size(); ++d) {
      for (model::SplitAxis axis : model::kAllSplitAxes) {
        const std::string tag = absl::StrCat(" ", std::string(model::SplitAxisName(axis)), "[");
        double measured = 0, predicted = 0;
        for (const auto& s : *samples) {
          if (s.device != names[d] || s.source.find(tag) == std::string::npos) continue;
          measured += s.measured_us;
          predicted += model.PredictUs(s.config, static_cast<int>(d)) -
                       model.device(static_cast<int>(d)).dispatch_us;
        }
        if (measured > 0) {
          std::printf("%-8s %-8s sum predicted / measured %.2f (%.0f / %.0f us)\n",
                      names[d].c_str(), std::string(model::SplitAxisName(axis)).c_str(),
                      predicted / measured, predicted, measured);
        }
      }
    }
  }
  return absl::OkStatus();
}

// The host profile's platform properties (its cache line) with these devices.
platform::Platform HostPlatform(const std::vector<platform::DeviceSpec>& devices) {
  platform::Platform platform = predictor::HostProfile(1).platform;
  platform.devices = devices;
  return platform;
}

// Progress on stderr: each step's start and end, the op timing at most once a second.
std::function<void(const calibration::PipelineProgress&)> PrintProgress(const Flags& flags) {
  auto last_print = std::make_shared<double>(-1.0);
  return [&flags, last_print](const calibration::PipelineProgress& p) {
    using calibration::PipelineStep;
    const char* step = p.step == PipelineStep::kOpTiming       ? "op timing"
                       : p.step == PipelineStep::kInGraph      ? "in-graph"
                       : p.step == PipelineStep::kPlannedCases ? "planned"
                                                               : "run costs";
    if (p.timing == nullptr) {
      if (p.finished) {
        std::fprintf(stderr, "[%s] done in %.1f s\n", step, p.elapsed_s);
      } else if (p.step == PipelineStep::kOpTiming) {
        std::fprintf(stderr, "[%s] %d models, %d distinct op configurations and slices\n", step,
                     p.models, p.cases);
      } else if (p.step == PipelineStep::kPlannedCases) {
        std::fprintf(stderr,
                     "[%s] up to %d rounds: plan %d models, time what the plans use and no "
                     "sample has (%.0f s per device and round), train again\n",
                     step, flags.pipeline.plan_rounds, p.models, flags.pipeline.plan_budget_s);
      } else if (p.step == PipelineStep::kRunCosts) {
        std::fprintf(stderr,
                     "[%s] plans of %d models on the CPU devices, then a GPU beside the first, "
                     "%d rounds and at least %g s each\n",
                     step, p.models, flags.pipeline.run_rounds, flags.pipeline.run_min_s);
      } else {
        std::fprintf(stderr, "[%s] every op of %d models inside whole-model runs\n", step,
                     p.models);
      }
      return;
    }
    const calibration::CalibrationProgress& t = *p.timing;
    if (t.sample != nullptr && t.elapsed_s - *last_print < 1.0) return;
    *last_print = t.sample != nullptr ? t.elapsed_s : -1.0;
    const std::string device = t.co_running ? t.device + " co-run" : t.device;
    if (t.finished) {
      std::fprintf(stderr, "[%s] done: %d samples, %d skipped in %.1f s\n", device.c_str(),
                   t.cases_done, t.cases_skipped, t.elapsed_s);
    } else if (t.sample == nullptr) {
      std::fprintf(stderr, "[%s] calibrating for %.1f s\n", device.c_str(), t.budget_s);
    } else {
      std::fprintf(stderr, "[%s] %5.1f/%.1f s  %4d samples  last %-16s %10.1f us  %s\n",
                   device.c_str(), t.elapsed_s, t.budget_s, t.cases_done,
                   std::string(model::OpKindName(t.sample->config.kind)).c_str(),
                   t.sample->measured_us, t.sample->source.c_str());
    }
  };
}

// What --samples refits from: the samples of the platform's devices and, unless --run-rounds
// asks to measure them again, the run costs stored with them.
absl::StatusOr<calibration::StoredCalibration> ReadStored(const Flags& flags,
                                                          const std::vector<std::string>& names) {
  absl::StatusOr<nlohmann::json> file = ReadJson(flags.samples_in);
  if (!file.ok()) return file.status();
  absl::StatusOr<predictor::host_model::CalibrationSamples> samples =
      predictor::host_model::SamplesFromJson(*file);
  if (!samples.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(flags.samples_in, ": ", samples.status().message()));
  }
  calibration::StoredCalibration stored;
  stored.samples = std::move(*samples);
  std::erase_if(stored.samples.samples, [&](const auto& sample) {
    return std::find(names.begin(), names.end(), sample.device) == names.end();
  });
  const nlohmann::json report = file->value("report", nlohmann::json::object());
  if (!flags.run_rounds_given && report.is_object() && report.contains("run_costs")) {
    absl::StatusOr<calibration::RunCosts> costs =
        calibration::RunCostsFromJson(report["run_costs"]);
    if (!costs.ok()) {
      return absl::Status(costs.status().code(),
                          absl::StrCat(flags.samples_in, ": ", costs.status().message()));
    }
    stored.run_costs = std::move(*costs);
  }
  return stored;
}

// Prints what each step did, on stdout.
void PrintResult(const Flags& flags, const std::vector<std::string>& names,
                 const calibration::PipelineResult& result, bool refit) {
  for (const calibration::DeviceOutcome& o : result.devices) {
    if (o.skipped) std::printf("[%s] skipped: %s\n", o.device.c_str(), o.reason.c_str());
  }
  for (const calibration::InGraphTiming& t : result.in_graph) {
    std::printf("[%s] in-graph: %d ops of %d models in %.1f s\n", t.device.c_str(), t.ops, t.models,
                t.elapsed_s);
  }
  for (size_t r = 0; r < result.planned.size(); ++r) {
    std::string line;
    for (size_t d = 0; d < result.planned[r].planned.size(); ++d) {
      absl::StrAppend(&line, " ", names[d], " ", result.planned[r].timed[d], "/",
                      result.planned[r].planned[d]);
    }
    std::printf("planned cases, round %zu (timed/new configurations):%s\n", r + 1, line.c_str());
  }
  if (!result.run_costs_missing.empty()) {
    std::printf("run costs: not measured (%s)\n", result.run_costs_missing.c_str());
  } else if (refit && !flags.run_rounds_given && result.training.run_costs.has_value()) {
    std::printf("run costs from %zu in-run factors and %zu sync costs stored with the samples\n",
                result.training.run_costs->in_run.size(), result.training.run_costs->sync.size());
  }
  std::printf(
      "\nheld-out errors, %d-fold grouped by model (%d samples alone, %d co-run; trained in "
      "%.1f s):\n%s",
      flags.pipeline.folds, result.training.solo_samples, result.training.co_run_samples,
      result.training_s, calibration::FormatHostTraining(result.training).c_str());
  std::printf("model version %s (analytic fit %s)\n", result.training.model->Version().c_str(),
              result.training.model->analytic().Version().c_str());
}

absl::Status Run(Flags flags) {
  absl::StatusOr<std::vector<platform::DeviceSpec>> devices =
      flags.devices.empty() ? DiscoveredDevices(flags.opencl_device)
                            : ParseDevices(flags.devices, flags.opencl_device);
  if (!devices.ok()) return devices.status();
  const std::vector<predictor::AnalyticDeviceParams> priors = Priors(*devices);
  const platform::Platform platform = HostPlatform(*devices);
  std::vector<std::string> names;
  for (const platform::DeviceSpec& d : *devices) names.push_back(d.name);
  flags.pipeline.anchors = !flags.no_anchors;
  flags.pipeline.progress = PrintProgress(flags);

  const bool refit = !flags.samples_in.empty();
  std::optional<calibration::StoredCalibration> stored;
  if (refit) {
    absl::StatusOr<calibration::StoredCalibration> read = ReadStored(flags, names);
    if (!read.ok()) return read.status();
    stored = std::move(*read);
    // A refit keeps the stored run costs; it measures them only when --run-rounds asks to.
    if (!flags.run_rounds_given) flags.pipeline.run_rounds = 0;
    std::printf("loaded %zu samples from %s\n", stored->samples.samples.size(),
                flags.samples_in.c_str());
  }
  // The graphs: to time, and for planned cases, probes and traces.
  std::vector<model::Graph> models;
  if (!refit || flags.pipeline.plan_rounds > 0 || flags.pipeline.run_rounds > 0 ||
      !flags.check_traces.empty()) {
    absl::StatusOr<std::vector<model::Graph>> loaded = LoadModels(flags.models);
    if (!loaded.ok()) return loaded.status();
    models = std::move(*loaded);
  }
  absl::StatusOr<calibration::PipelineResult> result = calibration::RunPipeline(
      platform, priors, models, flags.pipeline, stored.has_value() ? &*stored : nullptr);
  if (!result.ok()) return result.status();
  PrintResult(flags, names, *result, refit);
  if (!flags.check_traces.empty()) {
    if (absl::Status s =
            CheckTraces(flags.check_traces, models, result->training.model->analytic(), names);
        !s.ok()) {
      return s;
    }
  }

  if (!flags.out.empty()) {
    nlohmann::json outcomes = nlohmann::json::array();
    for (const calibration::DeviceOutcome& o : result->devices) {
      outcomes.push_back({{"device", o.device},
                          {"skipped", o.skipped},
                          {"reason", o.reason},
                          {"samples", o.cases_done},
                          {"cases_skipped", o.cases_skipped},
                          {"co_run_samples", o.co_run_cases},
                          {"elapsed_s", o.elapsed_s}});
    }
    nlohmann::json out = predictor::host_model::SamplesToJson(result->samples);
    out["params"] = result->training.params;
    out["report"] = calibration::HostTrainingReportToJson(result->training);
    out["devices"] = std::move(outcomes);
    std::ofstream file(flags.out);
    file << out.dump(1) << "\n";
    if (!file) return absl::InternalError(absl::StrCat("cannot write ", flags.out));
    std::printf("wrote %s\n", flags.out.c_str());
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace psched

int main(int argc, char** argv) {
  psched::Flags flags;
  CLI::App app{
      "Measure op latencies on this machine's devices and train its latency models (GBDT and "
      "the analytic fit)."};
  app.add_option("--devices", flags.devices,
                 "comma-separated cpu.N (core N), NAME=C+C+... (a core cluster, one thread per "
                 "core, e.g. cpu=0+1) and gpu (default: pschedd's devices - one per CPU cluster "
                 "found in sysfs, plus gpu)");
  app.add_option("--budget-s", flags.pipeline.budget_s, "timing budget per device, seconds")
      ->capture_default_str()
      ->check(CLI::Range(1e-3, 86400.0));
  app.add_option("--models", flags.models,
                 "ONNX files or folders (default $PSCHED_SHARED_DIR/models/graph-only)");
  app.add_option("--out", flags.out, "write samples, parameters and report as JSON");
  app.add_option("--samples", flags.samples_in,
                 "fit samples from a previous --out file instead of measuring")
      ->check(CLI::ExistingFile);
  app.add_option("--opencl-device", flags.opencl_device,
                 "OpenCL device selector (platform:device:index); default a GPU, else the first");
  app.add_option("--seed", flags.pipeline.seed, "case order, inputs, weights, held-out split")
      ->capture_default_str();
  app.add_option("--runs", flags.pipeline.runs, "timed runs per case (median)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--fastest-run", flags.pipeline.fastest_run,
               "a sample is the fastest of the timed runs, not their median (a machine shared "
               "with other busy processes); always so on a core cluster")
      ->capture_default_str();
  app.add_option("--warmup", flags.pipeline.warmup_runs, "untimed runs per case")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--max-case-ms", flags.pipeline.max_case_ms,
                 "skip cases the host profile predicts slower than this (0: no limit)")
      ->capture_default_str();
  app.add_option(
         "--folds", flags.pipeline.folds,
         "folds of the held-out evaluation (grouped by model: no model's ops on both sides)")
      ->capture_default_str()
      ->check(CLI::Range(2, 50));
  app.add_option("--min-family-samples", flags.pipeline.min_family_samples,
                 "samples an op family needs on a device to be predicted by GBDT (else the "
                 "analytic fit)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_flag("--no-anchors", flags.no_anchors,
               "predict the configurations calibration timed, and cuts of the same ops, with "
               "the GBDT model or the fit like any other instead of from the times measured")
      ->capture_default_str();
  app.add_option("--co-run-share", flags.pipeline.co_run_share,
                 "share of each device's budget re-timing its cases while the other devices run "
                 "busy loops (co-run contention)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.9));
  app.add_option("--priority-models", flags.pipeline.priority_models,
                 "graph names of the models the host will schedule: their ops are timed first, "
                 "and only they are timed in-graph, planned and probed (default: every model "
                 "--models loads)")
      ->delimiter(',');
  app.add_flag("--in-graph", flags.pipeline.in_graph,
               "also time every op of the priority models inside whole-model runs on each CPU "
               "device (after the budget)")
      ->capture_default_str();
  app.add_option("--run-rounds", flags.pipeline.run_rounds,
                 "timed rounds of the run-cost probes - real plans of the priority models on the "
                 "CPU devices, made with the trained model (0: no run costs); with --samples, "
                 "measures them again instead of keeping the stored ones")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--run-min-s", flags.pipeline.run_min_s,
                 absl::StrCat("more run-cost rounds (up to ",
                              psched::calibration::ProbeOptions{}.max_rounds,
                              ") until they have taken this long, seconds: short probes, as on "
                              "one cluster device, otherwise see only a couple of seconds of the "
                              "machine"))
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--plan-rounds", flags.pipeline.plan_rounds,
                 "rounds of planned cases: plan the priority models with the trained model, time "
                 "the op configurations and slices those plans use that no sample has, train "
                 "again (0: none; docs/calibration.md, \"Planned cases\")")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app.add_option("--plan-budget-s", flags.pipeline.plan_budget_s,
                 "timing budget per device and round of planned cases, seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--probe-settle-ms", flags.pipeline.probe_settle_ms,
                 "idle pause before each timed probe run, as between requests (and as "
                 "psched_coexec_bench's --settle-ms): the cold start after it is fitted")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 10000.0));
  app.add_option("--check-traces", flags.check_traces,
                 "co-execution traces (Chrome JSON) to compare the fitted model with")
      ->check(CLI::ExistingFile);
  app.add_option("--log-level", flags.log_level, "trace|debug|info|warn|error")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  flags.run_rounds_given = app.count("--run-rounds") > 0;
  spdlog::set_level(spdlog::level::from_str(flags.log_level));
  // PoCL spreads a kernel over every core by default, which would run on the CPU devices'
  // cores too; calibrate the GPU device as the co-execution runtime uses it: one thread.
  setenv("POCL_MAX_PTHREAD_COUNT", "1", /*overwrite=*/0);
  const absl::Status status = psched::Run(flags);
  if (!status.ok()) {
    std::fprintf(stderr, "psched-calibrate: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
