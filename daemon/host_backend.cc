#include "daemon/host_backend.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "executor/layout.h"
#include "executor/cpu/cpu_graph_executor.h"
#include "model/graph.h"
#include "model/inspect.h"
#include "model/onnx_import.h"
#include "model/split.h"
#include "predictor/profiles.h"
#include "scheduler/problem.h"
#include "scheduler/registry.h"

namespace psched::daemon {
namespace {

class GraphHandle final : public ModelHandle {
 public:
  explicit GraphHandle(model::Graph g) : graph(std::move(g)) {}
  const model::Graph graph;
  // Compiled once per model (kernels created, weights packed); null without weights.
  std::unique_ptr<executor::cpu::CpuGraphExecutor> executor;
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
        return absl::InvalidArgumentError(absl::StrCat("option seed='", value,
                                                       "' is not a non-negative integer"));
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

class HostBackend final : public Backend {
 public:
  explicit HostBackend(predictor::Profile profile) : profile_(std::move(profile)) {
    platform_.name = profile_.platform.name;
    platform_.fingerprint = profile_.platform.Fingerprint();
    platform_.predictor_version = profile_.model->Version();
    for (const scheduler::DeviceSpec& spec : profile_.platform.devices) {
      platform_.devices.push_back(DeviceInfo{spec.name,
                                             std::string(scheduler::DeviceKindName(spec.kind)),
                                             spec.cpu_cores, spec.opencl_device});
      if (run_device_.empty() && spec.kind == scheduler::DeviceKind::kCpu) {
        run_device_ = spec.name;
        run_cores_ = spec.cpu_cores;
      }
    }
  }

  const PlatformInfo& platform() const override { return platform_; }
  // The whole graph on the first CPU device's cores with XNNPACK; the co-execution runtime
  // (executing the plan across devices) replaces it once wired in.
  std::string executor_name() const override { return "cpu"; }
  bool RunUsesPlan() const override { return false; }

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
    auto handle = std::make_shared<GraphHandle>(std::move(*graph));
    if (handle->graph.has_weights) {
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
                                  const ProgressFn& progress, const CancelledFn& cancelled) override {
    absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> method = scheduler::MakeScheduler(name);
    if (!method.ok()) return absl::InvalidArgumentError(std::string(method.status().message()));
    absl::StatusOr<scheduler::SchedulerOptions> parsed = ParseOptions(options);
    if (!parsed.ok()) return parsed.status();
    const model::Graph& graph = GraphOf(model);
    progress({"building problem", 0});
    absl::StatusOr<scheduler::Problem> problem =
        scheduler::Problem::FromGraph(graph, profile_.platform, *profile_.model);
    if (!problem.ok()) return problem.status();
    if (cancelled()) return absl::CancelledError("planning abandoned by every requester");
    progress({"scheduling", 0});
    absl::StatusOr<scheduler::Schedule> schedule = (*method)->Plan(*problem, *parsed);
    if (!schedule.ok()) return schedule.status();

    PlanOutput out;
    out.scheduler = (*method)->name();
    out.makespan_us = schedule->makespan_us();
    nlohmann::json subtasks = nlohmann::json::array();
    std::vector<scheduler::ScheduledSubtask> ordered(schedule->subtasks().begin(),
                                                     schedule->subtasks().end());
    std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
      return a.start_us < b.start_us;
    });
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

  absl::StatusOr<RunOutput> Run(const LoadedModel& model, const PlanOutput*,
                                const std::vector<HostTensor>& inputs) override {
    const GraphHandle& handle = HandleOf(model);
    const model::Graph& graph = handle.graph;
    if (handle.executor == nullptr) {
      return absl::FailedPreconditionError("model has no weights to run");
    }
    std::vector<std::vector<float>> nhwc;
    for (size_t i = 0; i < graph.inputs.size(); ++i) {
      const model::Shape& shape = graph.tensor(graph.inputs[i].tensor).shape;
      nhwc.push_back(executor::NchwToNhwc(shape, inputs[i].data));
    }
    auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<std::vector<float>>> outputs = handle.executor->Run(nhwc);
    double execute_us = std::chrono::duration<double, std::micro>(
                            std::chrono::steady_clock::now() - start)
                            .count();
    if (!outputs.ok()) return outputs.status();
    RunOutput out;
    out.execute_us = execute_us;
    for (size_t i = 0; i < graph.outputs.size(); ++i) {
      const model::Shape& shape = graph.tensor(graph.outputs[i].tensor).shape;
      out.outputs.push_back(HostTensor{graph.outputs[i].name, graph.outputs[i].onnx_dims,
                                       executor::NhwcToNchw(shape, (*outputs)[i])});
    }
    const auto& timings = handle.executor->last_op_timings();
    for (size_t op = 0; op < timings.size() && op < graph.ops.size(); ++op) {
      out.trace.push_back({graph.ops[op].name, run_device_,
                           static_cast<double>(timings[op].start_ns) / 1e3,
                           static_cast<double>(timings[op].end_ns) / 1e3});
    }
    return out;
  }

 private:
  predictor::Profile profile_;
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
    return std::make_unique<HostBackend>(std::move(*profile));
  }
  if (config.devices.empty()) return std::make_unique<HostBackend>(predictor::HostProfile());

  std::vector<const DeviceConfig*> cpus;
  const DeviceConfig* gpu = nullptr;
  for (const DeviceConfig& device : config.devices) {
    if (device.kind == "cpu") {
      cpus.push_back(&device);
    } else if (gpu != nullptr) {
      return absl::InvalidArgumentError("the host platform supports at most one GPU device");
    } else {
      gpu = &device;
    }
  }
  predictor::Profile profile = predictor::HostProfile(static_cast<int>(cpus.size()),
                                                      gpu != nullptr ? gpu->opencl_device : "");
  // HostProfile names its devices cpu.0.., gpu; the config's names and core sets win.
  for (size_t i = 0; i < cpus.size(); ++i) {
    profile.platform.devices[i].name = cpus[i]->name;
    profile.platform.devices[i].cpu_cores = cpus[i]->cores;
  }
  if (gpu != nullptr) {
    profile.platform.devices.back().name = gpu->name;
  } else {
    profile.platform.devices.pop_back();
    if (profile.platform.devices.empty()) {
      return absl::InvalidArgumentError("the config lists no usable device");
    }
    profile.model = std::make_shared<DevicePrefixModel>(
        profile.model, static_cast<int>(profile.platform.devices.size()));
  }
  return std::make_unique<HostBackend>(std::move(profile));
}

}  // namespace psched::daemon
