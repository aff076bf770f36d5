// psched-calibrate: measures op latencies on this machine's devices (alone, and under co-run
// load from the other devices), trains the host's latency model on them (per device and op
// family a GBDT model or the analytic fit, host_training.h), then runs real plans of the
// priority models made with it on the CPU devices and fits the model's run costs (in-run
// factors, sync between devices: calibration/run_costs/), and prints the held-out error
// table of both models side by side, the co-run slowdowns and the run costs. Progress goes to
// stderr.
//
//   psched-calibrate --budget-s 5 --out calibration.json     (pschedd's devices: clusters + gpu)
//   psched-calibrate --devices cpu.0,cpu.1,gpu --budget-s 5 --out calibration.json
//   psched-calibrate --samples calibration.json --out refit.json   (fit only, no timing)
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
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "calibration/op_timing/calibrate.h"
#include "calibration/op_timing/calibration_cases.h"
#include "calibration/op_timing/in_graph_timing.h"
#include "calibration/planned_cases.h"
#include "calibration/run_costs/run_cost_calibration.h"
#include "calibration/run_costs/run_costs.h"
#include "calibration/training/analytic_fit.h"
#include "calibration/training/host_training.h"
#include "calibration/training/trace_samples.h"
#include "model/onnx_import.h"
#include "model/split.h"
#include "platform/cpu_topology.h"
#include "predictor/analytic_model.h"
#include "predictor/host_model/analytic_params_json.h"
#include "predictor/host_model/calibration_samples.h"
#include "predictor/profiles.h"
#include "scheduler/registry/registry.h"
#include "spdlog/spdlog.h"

namespace psched {
namespace {

namespace fs = std::filesystem;
using predictor::host_model::CalibrationSamples;

struct Flags {
  std::string devices;  // empty: the daemon's default devices (DiscoveredDevices)
  double budget_s = 3.0;
  std::vector<std::string> models;
  std::string out;
  std::string samples_in;
  std::string opencl_device;
  uint64_t seed = 1;
  int runs = 5;
  bool fastest_run = false;
  int warmup = 1;
  double max_case_ms = 30.0;
  int folds = 5;
  int min_family_samples = 30;
  double co_run_share = 0.15;
  std::string log_level = "warn";
  bool in_graph = false;
  bool no_anchors = false;
  int run_rounds = calibration::ProbeOptions{}.rounds;
  double probe_settle_ms = 20;
  double run_min_s = calibration::kHostRunCostMinSeconds;
  bool run_rounds_given = false;  // --run-rounds on the command line
  int plan_rounds = 0;
  double plan_budget_s = 10;
  std::vector<std::string> check_traces;
  // The paper's workloads: timed first.
  std::vector<std::string> priority_models = {"squeezenet_v1_1", "peleenet", "inceptionv3",
                                              "hrnet_w18_small_v1"};
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

// Times every op of the priority models inside whole-model runs on each CPU device that
// calibrated (in_graph_timing.h) and appends the samples.
absl::Status AddInGraphSamples(const Flags& flags, const std::vector<platform::DeviceSpec>& devices,
                               const std::vector<calibration::DeviceOutcome>& outcomes,
                               const std::vector<model::Graph>& models,
                               CalibrationSamples& samples) {
  for (size_t d = 0; d < devices.size(); ++d) {
    if (devices[d].kind != platform::DeviceKind::kCpu || outcomes[d].skipped) continue;
    const auto start = std::chrono::steady_clock::now();
    size_t added = 0, timed_models = 0;
    for (const model::Graph& graph : models) {
      if (std::find(flags.priority_models.begin(), flags.priority_models.end(), graph.name) ==
          flags.priority_models.end()) {
        continue;
      }
      absl::StatusOr<std::vector<predictor::host_model::CalibrationSample>> timed =
          calibration::TimeOpsInGraph(
              devices[d], graph,
              {.warmup_runs = flags.warmup, .runs = flags.runs, .seed = flags.seed});
      if (!timed.ok()) {
        return absl::Status(timed.status().code(),
                            absl::StrCat("in-graph timing of ", graph.name, " on ", devices[d].name,
                                         ": ", timed.status().message()));
      }
      added += timed->size();
      ++timed_models;
      samples.samples.insert(samples.samples.end(), timed->begin(), timed->end());
    }
    std::printf("[%s] in-graph: %zu ops of %zu models in %.1f s\n", devices[d].name.c_str(), added,
                timed_models,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  return absl::OkStatus();
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

// How each case is timed, per-op budget and all, from the flags.
calibration::CalibrationOptions TimingOptions(
    const Flags& flags, const std::vector<predictor::AnalyticDeviceParams>& priors) {
  calibration::CalibrationOptions options;
  options.budget_s = flags.budget_s;
  options.runs = flags.runs;
  options.fastest_run = flags.fastest_run;
  options.warmup_runs = flags.warmup;
  options.max_case_ms = flags.max_case_ms;
  options.seed = flags.seed;
  options.prior = std::make_shared<predictor::AnalyticModel>("prior", priors);
  return options;
}

// The priority models among `models`.
std::vector<model::Graph> PriorityGraphs(const Flags& flags,
                                         const std::vector<model::Graph>& models) {
  std::vector<model::Graph> graphs;
  for (const model::Graph& g : models) {
    if (std::find(flags.priority_models.begin(), flags.priority_models.end(), g.name) !=
        flags.priority_models.end()) {
      graphs.push_back(g);
    }
  }
  return graphs;
}

// The host profile's platform properties (its cache line) with these devices.
platform::Platform HostPlatform(const std::vector<platform::DeviceSpec>& devices) {
  platform::Platform platform = predictor::HostProfile(1).platform;
  platform.devices = devices;
  return platform;
}

// Plans the priority models with the trained model, times the configurations those plans put
// on each device that no sample has, and trains again (calibration/planned_cases.h).
absl::Status AddPlannedCases(const Flags& flags, const std::vector<platform::DeviceSpec>& devices,
                             const std::vector<bool>& usable,
                             const std::vector<model::Graph>& models,
                             const calibration::HostTrainingOptions& training_options,
                             CalibrationSamples& samples, calibration::HostTraining& training) {
  const std::vector<model::Graph> graphs = PriorityGraphs(flags, models);
  if (graphs.empty()) return absl::OkStatus();
  calibration::PlannedSamplingOptions options;
  options.rounds = flags.plan_rounds;
  options.timing = TimingOptions(flags, training_options.priors);
  options.timing.budget_s = flags.plan_budget_s;
  options.training = training_options;
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr,
               "[planned] up to %d rounds: plan %zu models, time what the plans use and no "
               "sample has (%.0f s per device and round), train again\n",
               flags.plan_rounds, graphs.size(), flags.plan_budget_s);
  absl::StatusOr<std::vector<calibration::PlannedSamplingRound>> rounds =
      calibration::SamplePlannedCases(graphs, HostPlatform(devices), usable, scheduler::PlanWith,
                                      options, samples, training);
  if (!rounds.ok()) return rounds.status();
  for (size_t r = 0; r < rounds->size(); ++r) {
    std::string line;
    for (size_t d = 0; d < devices.size(); ++d) {
      absl::StrAppend(&line, " ", devices[d].name, " ", (*rounds)[r].timed[d], "/",
                      (*rounds)[r].planned[d]);
    }
    std::printf("planned cases, round %zu (timed/new configurations):%s\n", r + 1, line.c_str());
  }
  std::fprintf(stderr, "[planned] done in %.1f s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  return absl::OkStatus();
}

// Runs real plans of the priority models, made with the trained model, on the CPU devices that
// calibrated (`usable`), and puts the fitted run costs into `training`.
absl::Status AddRunCosts(const Flags& flags, const std::vector<platform::DeviceSpec>& devices,
                         const std::vector<bool>& usable, const std::vector<model::Graph>& models,
                         calibration::HostTraining& training) {
  const std::vector<model::Graph> graphs = PriorityGraphs(flags, models);
  if (graphs.empty()) {
    std::printf("run costs: not measured (no priority model among --models)\n");
    return absl::OkStatus();
  }
  const platform::Platform platform = HostPlatform(devices);
  const auto start = std::chrono::steady_clock::now();
  std::fprintf(stderr,
               "[run costs] plans of %zu models on the CPU devices, then a GPU beside the first, "
               "%d rounds and at least %g s each\n",
               graphs.size(), flags.run_rounds, flags.run_min_s);
  absl::StatusOr<calibration::RunCosts> costs = calibration::CalibrateHostRunCosts(
      graphs, platform, usable, training.model, scheduler::PlanWith,
      {.probe = {.warmup_runs = std::max(1, flags.warmup),
                 .rounds = flags.run_rounds,
                 .min_s = flags.run_min_s,
                 .settle_ms = flags.probe_settle_ms},
       .seed = flags.seed});
  if (!costs.ok()) return costs.status();
  std::fprintf(stderr, "[run costs] done in %.1f s\n",
               std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  if (costs->probes == 0) {
    std::printf("run costs: not measured (no CPU device calibrated)\n");
    return absl::OkStatus();
  }
  return calibration::ApplyRunCosts(*costs, training);
}

// The run costs stored in a psched-calibrate --out file, for the devices being refitted.
absl::Status ReapplyStoredRunCosts(const nlohmann::json& file,
                                   const std::vector<std::string>& names,
                                   calibration::HostTraining& training) {
  const nlohmann::json report = file.value("report", nlohmann::json::object());
  if (!report.is_object() || !report.contains("run_costs")) return absl::OkStatus();
  absl::StatusOr<calibration::RunCosts> costs = calibration::RunCostsFromJson(report["run_costs"]);
  if (!costs.ok()) return costs.status();
  auto known = [&](const std::string& n) {
    return std::find(names.begin(), names.end(), n) != names.end();
  };
  std::erase_if(costs->in_run, [&](const auto& r) { return !known(r.device); });
  std::erase_if(costs->sync, [&](const auto& s) { return !known(s.from) || !known(s.to); });
  std::printf("run costs from %zu in-run factors and %zu sync costs stored with the samples\n",
              costs->in_run.size(), costs->sync.size());
  return calibration::ApplyRunCosts(*costs, training);
}

absl::Status Run(const Flags& flags) {
  absl::StatusOr<std::vector<platform::DeviceSpec>> devices =
      flags.devices.empty() ? DiscoveredDevices(flags.opencl_device)
                            : ParseDevices(flags.devices, flags.opencl_device);
  if (!devices.ok()) return devices.status();
  const std::vector<predictor::AnalyticDeviceParams> priors = Priors(*devices);
  std::vector<std::string> names;
  for (const platform::DeviceSpec& d : *devices) names.push_back(d.name);

  CalibrationSamples samples;
  nlohmann::json samples_file;                      // --samples
  std::vector<bool> usable(devices->size(), true);  // calibrated, not skipped
  nlohmann::json outcomes = nlohmann::json::array();
  std::vector<model::Graph> models;  // loaded when timing or checking traces
  if (!flags.samples_in.empty()) {
    absl::StatusOr<nlohmann::json> j = ReadJson(flags.samples_in);
    if (!j.ok()) return j.status();
    samples_file = *j;
    absl::StatusOr<CalibrationSamples> s = predictor::host_model::SamplesFromJson(*j);
    if (!s.ok())
      return absl::InvalidArgumentError(absl::StrCat(flags.samples_in, ": ", s.status().message()));
    samples = std::move(*s);
    std::erase_if(samples.samples, [&](const auto& sample) {
      return std::find(names.begin(), names.end(), sample.device) == names.end();
    });
    std::printf("loaded %zu samples from %s\n", samples.samples.size(), flags.samples_in.c_str());
  } else {
    const auto load_start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<model::Graph>> loaded = LoadModels(flags.models);
    if (!loaded.ok()) return loaded.status();
    models = std::move(*loaded);
    const std::vector<calibration::CalibrationCase> cases = calibration::BuildCases(
        models,
        {.seed = flags.seed, .include_slices = true, .priority_models = flags.priority_models});
    std::printf(
        "%zu models, %zu distinct op configurations and slices (%.1f s)\n", models.size(),
        cases.size(),
        std::chrono::duration<double>(std::chrono::steady_clock::now() - load_start).count());
    calibration::CalibrationOptions options = TimingOptions(flags, priors);
    double last_print = -1.0;
    options.co_run_share = flags.co_run_share;
    options.progress = [&](const calibration::CalibrationProgress& p) {
      if (p.sample != nullptr && p.elapsed_s - last_print < 1.0) return;
      last_print = p.sample != nullptr ? p.elapsed_s : -1.0;
      const std::string device = p.co_running ? p.device + " co-run" : p.device;
      if (p.finished) {
        std::fprintf(stderr, "[%s] done: %d samples, %d skipped in %.1f s\n", device.c_str(),
                     p.cases_done, p.cases_skipped, p.elapsed_s);
      } else if (p.sample == nullptr) {
        std::fprintf(stderr, "[%s] calibrating for %.1f s\n", device.c_str(), p.budget_s);
      } else {
        std::fprintf(stderr, "[%s] %5.1f/%.1f s  %4d samples  last %-16s %10.1f us  %s\n",
                     device.c_str(), p.elapsed_s, p.budget_s, p.cases_done,
                     std::string(model::OpKindName(p.sample->config.kind)).c_str(),
                     p.sample->measured_us, p.sample->source.c_str());
      }
    };
    absl::StatusOr<calibration::CalibrationRun> run =
        calibration::Calibrate(*devices, cases, options);
    if (!run.ok()) return run.status();
    for (size_t d = 0; d < run->devices.size(); ++d) {
      const calibration::DeviceOutcome& o = run->devices[d];
      usable[d] = !o.skipped;
      if (o.skipped) std::printf("[%s] skipped: %s\n", o.device.c_str(), o.reason.c_str());
      outcomes.push_back({{"device", o.device},
                          {"skipped", o.skipped},
                          {"reason", o.reason},
                          {"samples", o.cases_done},
                          {"cases_skipped", o.cases_skipped},
                          {"co_run_samples", o.co_run_cases},
                          {"elapsed_s", o.elapsed_s}});
    }
    samples = std::move(run->samples);
    if (flags.in_graph) {
      absl::Status s = AddInGraphSamples(flags, *devices, run->devices, models, samples);
      if (!s.ok()) return s;
    }
  }

  calibration::HostTrainingOptions training_options;
  training_options.priors = priors;
  training_options.seed = flags.seed;
  training_options.folds = flags.folds;
  training_options.min_family_samples = flags.min_family_samples;
  training_options.anchors = !flags.no_anchors;
  const auto train_start = std::chrono::steady_clock::now();
  absl::StatusOr<calibration::HostTraining> training =
      calibration::TrainHostModel("host", samples, training_options);
  if (!training.ok()) return training.status();
  if (flags.plan_rounds > 0) {
    if (models.empty()) {  // --samples: the ops were not timed, the plans need the graphs
      absl::StatusOr<std::vector<model::Graph>> loaded = LoadModels(flags.models);
      if (!loaded.ok()) return loaded.status();
      models = std::move(*loaded);
    }
    if (absl::Status s =
            AddPlannedCases(flags, *devices, usable, models, training_options, samples, *training);
        !s.ok()) {
      return s;
    }
  }
  if (!flags.samples_in.empty() && !flags.run_rounds_given) {
    if (absl::Status s = ReapplyStoredRunCosts(samples_file, names, *training); !s.ok()) {
      return absl::Status(s.code(), absl::StrCat(flags.samples_in, ": ", s.message()));
    }
  } else if (flags.run_rounds > 0) {
    if (models.empty()) {  // --samples: the ops were not timed, the probes need the graphs
      absl::StatusOr<std::vector<model::Graph>> loaded = LoadModels(flags.models);
      if (!loaded.ok()) return loaded.status();
      models = std::move(*loaded);
    }
    if (absl::Status s = AddRunCosts(flags, *devices, usable, models, *training); !s.ok()) {
      return s;
    }
  }
  std::printf(
      "\nheld-out errors, %d-fold grouped by model (%d samples alone, %d co-run; trained in "
      "%.1f s):\n%s",
      flags.folds, training->solo_samples, training->co_run_samples,
      std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count(),
      calibration::FormatHostTraining(*training).c_str());
  std::printf("model version %s (analytic fit %s)\n", training->model->Version().c_str(),
              training->model->analytic().Version().c_str());
  if (!flags.check_traces.empty()) {
    if (models.empty()) {
      absl::StatusOr<std::vector<model::Graph>> loaded = LoadModels(flags.models);
      if (!loaded.ok()) return loaded.status();
      models = std::move(*loaded);
    }
    if (absl::Status s =
            CheckTraces(flags.check_traces, models, training->model->analytic(), names);
        !s.ok()) {
      return s;
    }
  }

  if (!flags.out.empty()) {
    nlohmann::json out = predictor::host_model::SamplesToJson(samples);
    out["params"] = training->params;
    out["report"] = calibration::HostTrainingReportToJson(*training);
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
  app.add_option("--budget-s", flags.budget_s, "timing budget per device, seconds")
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
  app.add_option("--seed", flags.seed, "case order, inputs, weights, held-out split")
      ->capture_default_str();
  app.add_option("--runs", flags.runs, "timed runs per case (median)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000));
  app.add_flag("--fastest-run", flags.fastest_run,
               "a sample is the fastest of the timed runs, not their median (a machine shared "
               "with other busy processes); always so on a core cluster")
      ->capture_default_str();
  app.add_option("--warmup", flags.warmup, "untimed runs per case")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--max-case-ms", flags.max_case_ms,
                 "skip cases the host profile predicts slower than this (0: no limit)")
      ->capture_default_str();
  app.add_option(
         "--folds", flags.folds,
         "folds of the held-out evaluation (grouped by model: no model's ops on both sides)")
      ->capture_default_str()
      ->check(CLI::Range(2, 50));
  app.add_option("--min-family-samples", flags.min_family_samples,
                 "samples an op family needs on a device to be predicted by GBDT (else the "
                 "analytic fit)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1000000));
  app.add_flag("--no-anchors", flags.no_anchors,
               "predict the configurations calibration timed, and cuts of the same ops, with "
               "the GBDT model or the fit like any other instead of from the times measured")
      ->capture_default_str();
  app.add_option("--co-run-share", flags.co_run_share,
                 "share of each device's budget re-timing its cases while the other devices run "
                 "busy loops (co-run contention)")
      ->capture_default_str()
      ->check(CLI::Range(0.0, 0.9));
  app.add_option("--priority-models", flags.priority_models,
                 "model names timed first (the paper's workloads)")
      ->capture_default_str();
  app.add_flag("--in-graph", flags.in_graph,
               "also time every op of the priority models inside whole-model runs on each CPU "
               "device (after the budget)")
      ->capture_default_str();
  app.add_option("--run-rounds", flags.run_rounds,
                 "timed rounds of the run-cost probes - real plans of the priority models on the "
                 "CPU devices, made with the trained model (0: no run costs); with --samples, "
                 "measures them again instead of keeping the stored ones")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000));
  app.add_option("--run-min-s", flags.run_min_s,
                 absl::StrCat("more run-cost rounds (up to ",
                              psched::calibration::ProbeOptions{}.max_rounds,
                              ") until they have taken this long, seconds: short probes, as on "
                              "one cluster device, otherwise see only a couple of seconds of the "
                              "machine"))
      ->capture_default_str()
      ->check(CLI::Range(0.0, 3600.0));
  app.add_option("--plan-rounds", flags.plan_rounds,
                 "rounds of planned cases: plan the priority models with the trained model, time "
                 "the op configurations and slices those plans use that no sample has, train "
                 "again (0: none; docs/calibration.md, \"Planned cases\")")
      ->capture_default_str()
      ->check(CLI::Range(0, 100));
  app.add_option("--plan-budget-s", flags.plan_budget_s,
                 "timing budget per device and round of planned cases, seconds")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_option("--probe-settle-ms", flags.probe_settle_ms,
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
