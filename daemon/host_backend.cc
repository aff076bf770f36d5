#include "daemon/host_backend.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "daemon/plan_json.h"
#include "executor/calibration/calibrate.h"
#include "executor/calibration/calibration_cases.h"
#include "executor/calibration/host_training.h"
#include "executor/cpu/cpu_graph_executor.h"
#include "executor/layout.h"
#include "executor/runtime/coexecution_runtime.h"
#include "executor/runtime/plan_from_schedule.h"
#include "model/graph.h"
#include "model/inspect.h"
#include "model/onnx_import.h"
#include "model/split.h"
#include "platform/cpu_topology.h"
#include "platform/sysfs_cpu.h"
#include "predictor/analytic_model.h"
#include "predictor/profiles.h"
#include "scheduler/problem.h"
#include "scheduler/registry/registry.h"
#include "scheduler/schedule.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

namespace rt = executor::runtime;

// A plan compiled onto the runtime devices: kernels created and weights packed once, reused
// by every Infer that executes the same schedule.
struct CompiledPlan {
  std::string key;  // PlanOutput::id
  double makespan_us = 0;
  std::unique_ptr<rt::CoExecutionRuntime> runtime;
  // Predicted [start, end] per (device, op, work begin), for the timings Run reports.
  std::map<std::tuple<int, model::OpId, int64_t>, std::pair<double, double>> predicted;
};

// Plans of one model compiled at once; more distinct plans than this evict the oldest.
constexpr size_t kCompiledPlansPerModel = 4;

class GraphHandle final : public ModelHandle {
 public:
  GraphHandle(model::Graph g, std::shared_ptr<rt::PlatformDevices> d)
      : graph(std::move(g)), devices(std::move(d)) {}
  const model::Graph graph;
  // Declared before `compiled` so the runtimes go first: they must not outlive the devices.
  const std::shared_ptr<rt::PlatformDevices> devices;
  // CPU mode: compiled once per model (kernels created, weights packed); null without
  // weights or in co-execution mode.
  std::unique_ptr<executor::cpu::CpuGraphExecutor> executor;
  // Co-execution mode: touched by Run only, which the inference queue's one worker calls.
  mutable std::vector<std::shared_ptr<CompiledPlan>> compiled;
};

const GraphHandle& HandleOf(const LoadedModel& model) {
  return static_cast<const GraphHandle&>(*model.handle);
}

const model::Graph& GraphOf(const LoadedModel& model) { return HandleOf(model).graph; }

// Options every scheduler understands; the rest are passed through as method params.
absl::StatusOr<scheduler::SchedulerOptions> ParseOptions(
    const std::map<std::string, std::string>& options) {
  scheduler::SchedulerOptions parsed;
  for (const auto& [key, value] : options) {
    if (key == "seed") {
      if (!absl::SimpleAtoi(value, &parsed.seed)) {
        return absl::InvalidArgumentError(
            absl::StrCat("option seed='", value, "' is not a non-negative integer"));
      }
    } else if (key == "timeout_ms") {
      int64_t ms = 0;
      if (!absl::SimpleAtoi(value, &ms) || ms <= 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("option timeout_ms='", value, "' is not a positive integer"));
      }
      parsed.timeout = absl::Milliseconds(ms);
    } else {
      parsed.params[key] = value;
    }
  }
  return parsed;
}

// The first `n` devices of another latency model: the host profile without its GPU.
class DevicePrefixModel final : public predictor::LatencyModel {
 public:
  DevicePrefixModel(std::shared_ptr<const predictor::LatencyModel> inner, int n)
      : inner_(std::move(inner)), n_(n) {}
  int num_devices() const override { return n_; }
  double PredictUs(const predictor::OpConfig& config, int device_index) const override {
    return inner_->PredictUs(config, device_index);
  }
  std::string Version() const override { return absl::StrCat(inner_->Version(), ";first=", n_); }

 private:
  std::shared_ptr<const predictor::LatencyModel> inner_;
  int n_;
};

// The `host` profile for these devices: the CPU devices' names and core sets, the GPU last.
// `priors` (when given) receives each device's analytic parameters, calibration's start.
predictor::Profile HostPlatformProfile(
    const std::vector<predictor::HostCpu>& cpus, const std::optional<DeviceConfig>& gpu,
    const predictor::ProfileOptions& options = {},
    std::vector<predictor::AnalyticDeviceParams>* priors = nullptr) {
  predictor::Profile profile =
      predictor::HostProfile(cpus, gpu.has_value() ? gpu->opencl_device : "", options);
  if (gpu.has_value()) profile.platform.devices.back().name = gpu->name;
  if (priors != nullptr) {
    const auto* analytic = dynamic_cast<const predictor::AnalyticModel*>(profile.model.get());
    for (int d = 0; d < profile.platform.num_devices(); ++d) {
      if (!gpu.has_value() && d == profile.platform.num_devices() - 1) break;
      predictor::AnalyticDeviceParams params;
      if (analytic != nullptr) params = analytic->device(d);
      params.name = profile.platform.devices[static_cast<size_t>(d)].name;
      priors->push_back(std::move(params));
    }
  }
  if (!gpu.has_value()) {
    profile.platform.devices.pop_back();
    profile.model = std::make_shared<DevicePrefixModel>(
        profile.model, static_cast<int>(profile.platform.devices.size()));
  }
  return profile;
}

// A core's speed against the fastest core discovery saw (cpu_capacity / the largest one),
// averaged over `cores`; 1 when the topology does not know their capacity.
double RelativeSpeed(const std::optional<platform::CpuTopology>& topology,
                     const std::vector<int>& cores) {
  if (!topology.has_value()) return 1.0;
  int64_t fastest = 0;
  std::map<int, int64_t> capacity;
  for (const platform::CpuCore& core : topology->cores) {
    if (!core.capacity.has_value() || *core.capacity <= 0) continue;
    capacity[core.cpu] = *core.capacity;
    fastest = std::max(fastest, *core.capacity);
  }
  double sum = 0;
  for (int core : cores) {
    auto it = capacity.find(core);
    if (it == capacity.end()) return 1.0;
    sum += static_cast<double>(it->second) / static_cast<double>(fastest);
  }
  return cores.empty() ? 1.0 : sum / static_cast<double>(cores.size());
}

// The host's CPU devices: the config's when it lists any, else one per discovered cluster,
// else (discovery failed) one device on every core this process may use.
std::vector<predictor::HostCpu> HostCpus(const DaemonConfig& config, DiscoveryInfo& discovery) {
  platform::TopologyOptions options;
  options.sysfs_cpu_root = config.cpu_topology_root;
  // libcpuinfo describes this machine: its names must not be put on another tree's cores.
  options.live_names = config.cpu_topology_root == platform::TopologyOptions().sysfs_cpu_root;
  options.allowed_cpus = platform::ProcessAffinityCpus();
  absl::StatusOr<platform::CpuTopology> topology = platform::DiscoverCpuTopology(options);
  if (topology.ok()) {
    discovery.topology = std::move(*topology);
  } else {
    discovery.error = std::string(topology.status().message());
  }

  std::vector<predictor::HostCpu> cpus;
  for (const DeviceConfig& device : config.devices) {
    if (device.kind == "cpu") {
      cpus.push_back({device.name, device.cores, RelativeSpeed(discovery.topology, device.cores)});
    }
  }
  if (!cpus.empty()) {
    discovery.cpu_devices_from = "config";
  } else if (discovery.topology.has_value()) {
    discovery.cpu_devices_from = "discovered";
    for (const platform::DeviceSpec& device : platform::ClusterDevices(*discovery.topology)) {
      cpus.push_back(
          {device.name, device.cpu_cores, RelativeSpeed(discovery.topology, device.cpu_cores)});
    }
  } else {
    discovery.cpu_devices_from = "fallback";
    std::vector<int> cores = options.allowed_cpus.value_or(std::vector<int>{0});
    spdlog::warn("CPU topology discovery failed ({}); one device 'cpu' on cores {}",
                 discovery.error, absl::StrJoin(cores, ","));
    cpus.push_back({"cpu", std::move(cores), 1.0});
  }
  return cpus;
}

class HostBackend final : public Backend {
 public:
  // `devices` null: CPU mode (the whole graph on the first CPU device); else co-execution
  // of the plan on these devices, which are the profile's platform in order.
  HostBackend(predictor::Profile profile, std::shared_ptr<rt::PlatformDevices> devices,
              std::vector<predictor::AnalyticDeviceParams> priors = {},
              DiscoveryInfo discovery = {})
      : profile_(std::move(profile)), devices_(std::move(devices)), priors_(std::move(priors)) {
    platform_.discovery = std::move(discovery);
    if (devices_ != nullptr) {
      device_names_ = devices_->names();
      std::vector<std::string> keys;
      for (const platform::DeviceSpec& spec : profile_.platform.devices) {
        keys.push_back(absl::StrCat(spec.name, ":",
                                    std::string(platform::DeviceKindName(spec.kind)), ":",
                                    absl::StrJoin(spec.cpu_cores, ","), ":", spec.opencl_device));
      }
      platform_.calibration_key = absl::StrJoin(keys, ";");
    }
    platform_.name = profile_.platform.name;
    platform_.fingerprint = profile_.platform.Fingerprint();
    platform_.predictor_version = profile_.model->Version();
    for (const platform::DeviceSpec& spec : profile_.platform.devices) {
      platform_.devices.push_back(DeviceInfo{spec.name,
                                             std::string(platform::DeviceKindName(spec.kind)),
                                             spec.cpu_cores, spec.opencl_device});
      if (run_device_.empty() && spec.kind == platform::DeviceKind::kCpu) {
        run_device_ = spec.name;
        run_cores_ = spec.cpu_cores;
      }
    }
  }

  PlatformInfo platform() const override {
    std::lock_guard lock(mu_);
    return platform_;
  }
  std::string executor_name() const override { return devices_ != nullptr ? "coexec" : "cpu"; }
  bool RunUsesPlan() const override { return devices_ != nullptr; }

  absl::StatusOr<LoadedModel> Load(std::string_view onnx, const std::string& name,
                                   bool synthesize_weights) override {
    model::ImportOptions options;
    options.synthesize_weights = synthesize_weights;
    options.name = name;
    absl::StatusOr<model::Graph> graph = model::ImportOnnx(onnx, options);
    if (!graph.ok()) return graph.status();
    LoadedModel loaded;
    loaded.summary = model::InspectJson(*graph);
    loaded.has_weights = graph->has_weights;
    for (const model::GraphIO& io : graph->inputs) loaded.inputs.push_back({io.name, io.onnx_dims});
    for (const model::GraphIO& io : graph->outputs) {
      loaded.outputs.push_back({io.name, io.onnx_dims});
    }
    auto handle = std::make_shared<GraphHandle>(std::move(*graph), devices_);
    if (handle->graph.has_weights && devices_ == nullptr) {
      executor::cpu::CpuExecutorOptions executor_options;
      executor_options.cores = run_cores_;
      absl::StatusOr<std::unique_ptr<executor::cpu::CpuGraphExecutor>> compiled =
          executor::cpu::CpuGraphExecutor::Create(handle->graph, executor_options);
      if (!compiled.ok()) return compiled.status();
      handle->executor = std::move(*compiled);
    }
    loaded.handle = std::move(handle);
    return loaded;
  }

  absl::Status CheckScheduler(const std::string& name,
                              const std::map<std::string, std::string>& options) override {
    absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> made = scheduler::MakeScheduler(name);
    if (!made.ok()) {
      return absl::InvalidArgumentError(std::string(made.status().message()));
    }
    return ParseOptions(options).status();
  }

  absl::StatusOr<PlanOutput> Plan(const LoadedModel& model, const std::string& name,
                                  const std::map<std::string, std::string>& options,
                                  const ProgressFn& progress,
                                  const CancelledFn& cancelled) override {
    absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> method = scheduler::MakeScheduler(name);
    if (!method.ok()) return absl::InvalidArgumentError(std::string(method.status().message()));
    absl::StatusOr<scheduler::SchedulerOptions> parsed = ParseOptions(options);
    if (!parsed.ok()) return parsed.status();
    const model::Graph& graph = GraphOf(model);
    progress({"building problem", 0});
    absl::StatusOr<scheduler::Problem> problem = ProblemOf(graph);
    if (!problem.ok()) return problem.status();
    if (cancelled()) return absl::CancelledError("planning abandoned by every requester");
    progress({"scheduling", 0});
    absl::StatusOr<scheduler::Schedule> schedule = (*method)->Plan(*problem, *parsed);
    if (!schedule.ok()) return schedule.status();
    if (absl::Status valid = scheduler::ValidateSchedule(*problem, *schedule); !valid.ok()) {
      return absl::InternalError(
          absl::StrCat((*method)->name(), " returned an invalid schedule: ", valid.message()));
    }

    PlanOutput out;
    out.scheduler = (*method)->name();
    out.makespan_us = schedule->makespan_us();
    nlohmann::json subtasks = nlohmann::json::array();
    std::vector<scheduler::ScheduledSubtask> ordered(schedule->subtasks().begin(),
                                                     schedule->subtasks().end());
    std::stable_sort(ordered.begin(), ordered.end(),
                     [](const auto& a, const auto& b) { return a.start_us < b.start_us; });
    for (const scheduler::ScheduledSubtask& s : ordered) {
      subtasks.push_back({{"op", graph.op(s.op).name},
                          {"op_id", s.op},
                          {"device", profile_.platform.devices[static_cast<size_t>(s.device)].name},
                          {"strategy", std::string(model::SplitAxisName(s.axis))},
                          {"work", {s.begin, s.end}},
                          {"start_us", s.start_us},
                          {"end_us", s.end_us}});
    }
    out.schedule = {{"scheduler", out.scheduler},
                    {"makespan_us", out.makespan_us},
                    {"platform", profile_.platform.name},
                    {"devices", nlohmann::json::array()},
                    {"subtasks", std::move(subtasks)}};
    for (const DeviceInfo& device : platform_.devices) {
      out.schedule["devices"].push_back(device.name);
    }
    return out;
  }

  absl::Status CheckPlan(const LoadedModel& model, const nlohmann::json& schedule) override {
    const model::Graph& graph = GraphOf(model);
    std::vector<std::string> names;
    for (const platform::DeviceSpec& spec : profile_.platform.devices) names.push_back(spec.name);
    absl::StatusOr<scheduler::Schedule> parsed = ScheduleFromJson(graph, names, schedule);
    if (!parsed.ok()) return absl::DataLossError(std::string(parsed.status().message()));
    absl::StatusOr<scheduler::Problem> problem = ProblemOf(graph);
    if (!problem.ok()) return problem.status();
    if (absl::Status valid = scheduler::ValidateSchedule(*problem, *parsed); !valid.ok()) {
      return absl::DataLossError(std::string(valid.message()));
    }
    return absl::OkStatus();
  }

  absl::StatusOr<RunOutput> Run(const LoadedModel& model, const PlanOutput* plan,
                                const std::vector<HostTensor>& inputs) override {
    const GraphHandle& handle = HandleOf(model);
    const model::Graph& graph = handle.graph;
    if (!graph.has_weights) return absl::FailedPreconditionError("model has no weights to run");
    std::vector<std::vector<float>> nhwc;
    for (size_t i = 0; i < graph.inputs.size(); ++i) {
      const model::Shape& shape = graph.tensor(graph.inputs[i].tensor).shape;
      nhwc.push_back(executor::NchwToNhwc(shape, inputs[i].data));
    }
    if (devices_ != nullptr) {
      if (plan == nullptr) return absl::InternalError("co-execution needs a plan");
      return RunPlan(handle, *plan, nhwc);
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<std::vector<float>>> outputs = handle.executor->Run(nhwc);
    double execute_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!outputs.ok()) return outputs.status();
    RunOutput out;
    out.execute_us = execute_us;
    out.outputs = ToHost(graph, *outputs);
    const auto& timings = handle.executor->last_op_timings();
    for (size_t op = 0; op < timings.size() && op < graph.ops.size(); ++op) {
      out.trace.push_back({graph.ops[op].name, run_device_,
                           static_cast<double>(timings[op].start_ns) / 1e3,
                           static_cast<double>(timings[op].end_ns) / 1e3});
    }
    return out;
  }

  absl::StatusOr<CalibrationOutput> Calibrate(
      const std::vector<std::shared_ptr<const LoadedModel>>& models, double budget_s,
      const CalibrationProgressFn& progress) override {
    if (devices_ == nullptr) {
      return absl::UnimplementedError(absl::StrCat("platform '", profile_.platform.name,
                                                   "' is simulated; only the host calibrates"));
    }
    std::vector<model::Graph> graphs;
    // The served models' own ops (and every slice size of them) are timed first.
    executor::calibration::CaseOptions case_options;
    for (const auto& loaded : models) {
      graphs.push_back(GraphOf(*loaded));
      case_options.priority_models.push_back(graphs.back().name);
    }
    const std::vector<executor::calibration::CalibrationCase> cases =
        executor::calibration::BuildCases(graphs, case_options);
    executor::calibration::CalibrationOptions options;
    options.budget_s = budget_s;
    options.prior = std::make_shared<predictor::AnalyticModel>("prior", priors_);
    options.progress = [&](const executor::calibration::CalibrationProgress& p) {
      progress({p.device, p.cases_done, p.cases_skipped, p.elapsed_s, p.budget_s, p.finished});
    };
    absl::StatusOr<executor::calibration::CalibrationRun> run =
        executor::calibration::Calibrate(profile_.platform.devices, cases, options);
    if (!run.ok()) return run.status();
    absl::StatusOr<executor::calibration::HostTraining> trained =
        executor::calibration::TrainHostModel(profile_.platform.name, run->samples,
                                              {.priors = priors_});
    if (!trained.ok()) return trained.status();
    CalibrationOutput out;
    out.predictor_version = trained->model->Version();
    out.params = trained->params;
    out.report = executor::calibration::HostTrainingReportToJson(*trained);
    out.error_table = executor::calibration::FormatHostTraining(*trained);
    out.samples = static_cast<int>(run->samples.samples.size());
    for (const executor::calibration::DeviceOutcome& o : run->devices) {
      if (o.skipped) out.skipped_devices.push_back(absl::StrCat(o.device, ": ", o.reason));
    }
    return out;
  }

  absl::Status UseCalibration(const nlohmann::json& json) override {
    absl::StatusOr<executor::calibration::LoadedHostModel> loaded =
        executor::calibration::HostModelFromJson(json);
    if (!loaded.ok()) return loaded.status();
    const std::vector<std::string>& names = loaded->device_names;
    if (devices_ == nullptr || names != device_names_) {
      return absl::InvalidArgumentError(
          absl::StrCat("calibration is for devices [", absl::StrJoin(names, ", "),
                       "], the platform has [", absl::StrJoin(device_names_, ", "), "]"));
    }
    std::shared_ptr<const predictor::LatencyModel> model = loaded->model;
    std::lock_guard lock(mu_);
    profile_.model = std::move(model);
    platform_.predictor_version = profile_.model->Version();
    return absl::OkStatus();
  }

 private:
  static std::vector<HostTensor> ToHost(const model::Graph& graph,
                                        const std::vector<std::vector<float>>& nhwc) {
    std::vector<HostTensor> host;
    for (size_t i = 0; i < graph.outputs.size(); ++i) {
      const model::Shape& shape = graph.tensor(graph.outputs[i].tensor).shape;
      host.push_back(HostTensor{graph.outputs[i].name, graph.outputs[i].onnx_dims,
                                executor::NhwcToNchw(shape, nhwc[i])});
    }
    return host;
  }

  // The scheduling instance of `graph` under the latency model in use now.
  absl::StatusOr<scheduler::Problem> ProblemOf(const model::Graph& graph) const {
    std::shared_ptr<const predictor::LatencyModel> latency_model;
    {
      std::lock_guard lock(mu_);
      latency_model = profile_.model;
    }
    return scheduler::Problem::FromGraph(graph, profile_.platform, *latency_model);
  }

  // The runtime for `plan`, compiled on first use.
  absl::StatusOr<std::shared_ptr<CompiledPlan>> Compiled(const GraphHandle& handle,
                                                         const PlanOutput& plan) {
    if (!plan.schedule.contains("subtasks")) {
      return absl::InternalError("malformed cached plan: no subtasks");
    }
    if (plan.id.empty()) return absl::InternalError("a plan to run has no id");
    auto& cache = handle.compiled;
    for (auto it = cache.begin(); it != cache.end(); ++it) {
      if ((*it)->key == plan.id) {
        std::shared_ptr<CompiledPlan> hit = *it;
        cache.erase(it);
        cache.push_back(hit);
        return hit;
      }
    }
    absl::StatusOr<scheduler::Schedule> schedule =
        ScheduleFromJson(handle.graph, device_names_, plan.schedule);
    if (!schedule.ok()) return schedule.status();
    absl::StatusOr<rt::ExecutionPlan> steps = rt::PlanFromSchedule(handle.graph, *schedule);
    if (!steps.ok()) return steps.status();
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::unique_ptr<rt::CoExecutionRuntime>> runtime =
        rt::CoExecutionRuntime::Create(handle.graph, devices_->devices(), std::move(*steps),
                                       devices_->runtime_options());
    if (!runtime.ok()) return runtime.status();
    auto compiled = std::make_shared<CompiledPlan>();
    compiled->key = plan.id;
    compiled->makespan_us = plan.makespan_us;
    compiled->runtime = std::move(*runtime);
    for (const scheduler::ScheduledSubtask& s : schedule->subtasks()) {
      compiled->predicted[{s.device, s.op, s.begin}] = {s.start_us, s.end_us};
    }
    spdlog::info("compiled the {} plan of '{}' ({} subtasks) in {:.1f} ms", plan.scheduler,
                 handle.graph.name, schedule->subtasks().size(),
                 std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
                     .count());
    if (cache.size() >= kCompiledPlansPerModel) cache.erase(cache.begin());
    cache.push_back(compiled);
    return compiled;
  }

  absl::StatusOr<RunOutput> RunPlan(const GraphHandle& handle, const PlanOutput& plan,
                                    const std::vector<std::vector<float>>& nhwc) {
    absl::StatusOr<std::shared_ptr<CompiledPlan>> compiled = Compiled(handle, plan);
    if (!compiled.ok()) return compiled.status();
    rt::CoExecutionRuntime& runtime = *(*compiled)->runtime;
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<std::vector<float>>> outputs = runtime.Run(nhwc);
    double execute_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    if (!outputs.ok()) return outputs.status();
    RunOutput out;
    out.execute_us = execute_us;
    out.predicted_makespan_us = (*compiled)->makespan_us;
    out.outputs = ToHost(handle.graph, *outputs);
    for (const rt::SubtaskTiming& t : runtime.last_timings()) {
      SubtaskTimingInfo info{handle.graph.op(t.step.op).name,
                             device_names_[static_cast<size_t>(t.device)],
                             static_cast<double>(t.start_ns) / 1e3,
                             static_cast<double>(t.end_ns) / 1e3,
                             std::string(model::SplitAxisName(t.step.slice.axis)),
                             t.step.slice.begin,
                             t.step.slice.end};
      auto it = (*compiled)->predicted.find({t.device, t.step.op, t.step.slice.begin});
      if (it != (*compiled)->predicted.end()) {
        info.predicted_start_us = it->second.first;
        info.predicted_end_us = it->second.second;
      }
      info.device_us = t.device_us;
      out.trace.push_back(std::move(info));
    }
    return out;
  }

  mutable std::mutex mu_;
  // profile_.model and platform_.predictor_version change on UseCalibration (under mu_).
  predictor::Profile profile_;
  // Co-execution devices in platform order; null in CPU mode.
  std::shared_ptr<rt::PlatformDevices> devices_;
  std::vector<std::string> device_names_;
  // The host profile's parameters of each device: calibration's starting point.
  std::vector<predictor::AnalyticDeviceParams> priors_;
  PlatformInfo platform_;
  // The CPU device inference runs on (the platform's first).
  std::string run_device_;
  std::vector<int> run_cores_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> MakeHostBackend(const DaemonConfig& config) {
  if (config.platform != "host") {
    absl::StatusOr<predictor::Profile> profile = predictor::LoadProfile(config.platform);
    if (!profile.ok()) return profile.status();
    if (!config.devices.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "[[devices]] only applies to platform = \"host\", not '", config.platform, "'"));
    }
    return std::make_unique<HostBackend>(std::move(*profile), nullptr);
  }

  DiscoveryInfo discovery;
  const std::vector<predictor::HostCpu> cpus = HostCpus(config, discovery);
  std::optional<DeviceConfig> gpu;
  if (config.devices.empty()) gpu = DeviceConfig{"gpu", "gpu", {}, ""};
  for (const DeviceConfig& device : config.devices) {
    if (device.kind == "cpu") continue;
    if (gpu.has_value()) {
      return absl::InvalidArgumentError("the host platform supports at most one GPU device");
    }
    gpu = device;
  }
  for (const predictor::HostCpu& cpu : cpus) {
    if (gpu.has_value() && cpu.name == gpu->name) {
      return absl::InvalidArgumentError(
          absl::StrCat("the GPU device's name '", gpu->name, "' is a CPU device's name"));
    }
  }

  rt::PlatformDeviceOptions device_options;
  if (gpu.has_value() && !gpu->cores.empty()) device_options.gpu_core = gpu->cores.front();
  absl::StatusOr<std::unique_ptr<rt::PlatformDevices>> devices = absl::UnknownError("");
  if (gpu.has_value()) {
    devices = rt::PlatformDevices::Create(HostPlatformProfile(cpus, gpu).platform, device_options);
    if (!devices.ok()) {
      spdlog::warn("GPU '{}' (OpenCL selector '{}') is not used: {}; running on the CPUs only",
                   gpu->name, gpu->opencl_device, std::string(devices.status().message()));
      gpu.reset();
    }
  }
  if (!gpu.has_value()) {
    devices = rt::PlatformDevices::Create(HostPlatformProfile(cpus, gpu).platform, device_options);
    if (!devices.ok()) return devices.status();
  }
  predictor::ProfileOptions profile_options;
  if (std::optional<double> overhead = (*devices)->gpu_dispatch_overhead_us()) {
    profile_options.gpu_dispatch_us = *overhead;
    spdlog::info("GPU dispatch + sync overhead measured at {:.1f} us; planning with it", *overhead);
  }
  std::vector<predictor::AnalyticDeviceParams> priors;
  predictor::Profile profile = HostPlatformProfile(cpus, gpu, profile_options, &priors);
  std::shared_ptr<rt::PlatformDevices> shared(std::move(*devices));
  std::vector<std::string> described;
  for (const platform::DeviceSpec& spec : profile.platform.devices) {
    described.push_back(
        spec.kind == platform::DeviceKind::kCpu
            ? absl::StrCat(spec.name, " (cores ", platform::FormatCpuList(spec.cpu_cores), ")")
            : spec.name);
  }
  spdlog::info("co-execution on {}; CPU devices {}", absl::StrJoin(described, ", "),
               discovery.cpu_devices_from);
  return std::make_unique<HostBackend>(std::move(profile), std::move(shared), std::move(priors),
                                       std::move(discovery));
}

}  // namespace psched::daemon
