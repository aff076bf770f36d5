#include "daemon/backends/graph_backend.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "daemon/backends/plan_json.h"
#include "executor/layout.h"
#include "model/inspect.h"
#include "model/onnx_import.h"
#include "model/split.h"
#include "predictor/residual_corrected_model.h"
#include "scheduler/registry/registry.h"
#include "scheduler/retime.h"
#include "scheduler/schedule.h"

namespace psched::daemon {
namespace {

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

std::vector<std::string> DeviceNames(const platform::Platform& platform) {
  std::vector<std::string> names;
  for (const platform::DeviceSpec& spec : platform.devices) names.push_back(spec.name);
  return names;
}

// GraphBackend's correction: the corrected model itself.
class ResidualCorrection final : public LatencyCorrection {
 public:
  explicit ResidualCorrection(std::shared_ptr<const predictor::ResidualCorrectedModel> m)
      : model(std::move(m)) {}
  std::string predictor_version() const override { return model->Version(); }
  const std::shared_ptr<const predictor::ResidualCorrectedModel> model;
};

}  // namespace

const model::Graph& GraphOf(const LoadedModel& model) {
  return static_cast<const GraphHandle&>(*model.handle).graph;
}

GraphBackend::GraphBackend(predictor::Profile profile, DiscoveryInfo discovery,
                           std::string calibration_key)
    : profile_(std::move(profile)) {
  platform_.discovery = std::move(discovery);
  platform_.calibration_key = std::move(calibration_key);
  platform_.name = profile_.platform.name;
  platform_.fingerprint = profile_.platform.Fingerprint();
  platform_.predictor_version = profile_.model->Version();
  for (const platform::DeviceSpec& spec : profile_.platform.devices) {
    platform_.devices.push_back(PlatformDeviceInfo{spec.name,
                                           std::string(platform::DeviceKindName(spec.kind)),
                                           spec.cpu_cores, spec.opencl_device});
  }
}

PlatformInfo GraphBackend::platform() const {
  std::lock_guard lock(mu_);
  return platform_;
}

void GraphBackend::SetLatencyModel(std::shared_ptr<const predictor::LatencyModel> model) {
  std::lock_guard lock(mu_);
  profile_.model = std::move(model);
  platform_.predictor_version = profile_.model->Version();
}

absl::StatusOr<LoadedModel> GraphBackend::Load(std::string_view onnx, const std::string& name,
                                               const LoadOptions& load) {
  model::ImportOptions options;
  options.synthesize_weights = load.synthesize_weights;
  options.input_shapes = load.input_shapes;
  options.refuse_external_data = load.refuse_external_data;
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
  absl::StatusOr<std::shared_ptr<GraphHandle>> handle = PrepareModel(std::move(*graph));
  if (!handle.ok()) return handle.status();
  loaded.handle = std::move(*handle);
  return loaded;
}

absl::Status GraphBackend::CheckScheduler(const std::string& name,
                                          const std::map<std::string, std::string>& options) {
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> made = scheduler::MakeScheduler(name);
  if (!made.ok()) {
    return absl::InvalidArgumentError(std::string(made.status().message()));
  }
  return ParseOptions(options).status();
}

absl::StatusOr<PlanOutput> GraphBackend::Plan(const LoadedModel& model, const std::string& name,
                                              const std::map<std::string, std::string>& options,
                                              const ProgressFn& progress,
                                              const CancelledFn& cancelled) {
  return PlanWith(model, name, options, progress, cancelled, *latency_model());
}

absl::StatusOr<PlanOutput> GraphBackend::PlanCorrected(
    const LoadedModel& model, const std::string& name,
    const std::map<std::string, std::string>& options, const LatencyCorrection& correction,
    const CancelledFn& cancelled) {
  const auto* residual = dynamic_cast<const ResidualCorrection*>(&correction);
  if (residual == nullptr) return absl::InternalError("a correction this backend did not make");
  return PlanWith(
      model, name, options, [](const PlanProgressEvent&) {}, cancelled, *residual->model);
}

absl::StatusOr<std::shared_ptr<const LatencyCorrection>> GraphBackend::Correct(
    const LoadedModel& model, const LatencyCorrection* previous,
    const std::vector<MeasuredSubtask>& measured) {
  const model::Graph& graph = GraphOf(model);
  std::shared_ptr<const predictor::LatencyModel> base = latency_model();
  const predictor::ResidualCorrectedModel* refined = nullptr;
  if (previous != nullptr) {
    const auto* residual = dynamic_cast<const ResidualCorrection*>(previous);
    if (residual == nullptr) return absl::InternalError("a correction this backend did not make");
    if (residual->model->inner()->Version() != base->Version()) {
      return absl::FailedPreconditionError(
          absl::StrCat("the latency model changed to ", base->Version(),
                       " since the correction of ", residual->model->inner()->Version()));
    }
    refined = residual->model.get();
  }
  std::map<std::string, model::OpId> ops;
  for (size_t i = 0; i < graph.ops.size(); ++i)
    ops[graph.ops[i].name] = static_cast<model::OpId>(i);
  const std::vector<std::string> devices = DeviceNames(profile_.platform);
  const model::ConcatAliasing aliasing = model::AliasConcatInputs(graph);
  std::vector<predictor::ResidualSample> samples;
  for (const MeasuredSubtask& m : measured) {
    auto op = ops.find(m.op);
    auto device = std::find(devices.begin(), devices.end(), m.device);
    std::optional<model::SplitAxis> axis = model::SplitAxisFromName(m.strategy);
    if (op == ops.end() || device == devices.end() || !axis.has_value() || m.work_begin < 0 ||
        m.work_begin >= m.work_end || m.work_end > model::WorkSize(graph, op->second, *axis)) {
      continue;  // not a subtask of this model on this platform
    }
    samples.push_back(
        {predictor::SubtaskConfig(predictor::WholeOpConfig(graph, op->second, aliasing), *axis,
                                  m.work_begin, m.work_end),
         static_cast<int>(device - devices.begin()), m.measured_us, m.predicted_us});
  }
  absl::StatusOr<std::shared_ptr<const predictor::ResidualCorrectedModel>> corrected =
      predictor::ResidualCorrectedModel::Make(std::move(base), refined, samples);
  if (!corrected.ok()) return corrected.status();
  return std::make_shared<ResidualCorrection>(std::move(*corrected));
}

absl::StatusOr<PlanOutput> GraphBackend::PlanWith(const LoadedModel& model, const std::string& name,
                                                  const std::map<std::string, std::string>& options,
                                                  const ProgressFn& progress,
                                                  const CancelledFn& cancelled,
                                                  const predictor::LatencyModel& latency_model) {
  absl::StatusOr<std::unique_ptr<scheduler::Scheduler>> method = scheduler::MakeScheduler(name);
  if (!method.ok()) return absl::InvalidArgumentError(std::string(method.status().message()));
  absl::StatusOr<scheduler::SchedulerOptions> parsed = ParseOptions(options);
  if (!parsed.ok()) return parsed.status();
  const model::Graph& graph = GraphOf(model);
  progress({"building problem", 0});
  absl::StatusOr<scheduler::Problem> problem =
      scheduler::Problem::FromGraph(graph, profile_.platform, latency_model);
  if (!problem.ok()) return problem.status();
  if (cancelled()) return absl::CancelledError("planning abandoned by every requester");
  progress({"scheduling", 0});
  absl::StatusOr<scheduler::Schedule> schedule = (*method)->Plan(*problem, *parsed);
  if (!schedule.ok()) return schedule.status();
  if (absl::Status valid = scheduler::ValidateSchedule(*problem, *schedule); !valid.ok()) {
    return absl::InternalError(
        absl::StrCat((*method)->name(), " returned an invalid schedule: ", valid.message()));
  }
  // The prediction a run is held to: the plan retimed as it will run (hand-offs by how long
  // each waiter idles, kernels beside other devices' slower); the schedule stays the planner's.
  absl::StatusOr<scheduler::Schedule> run = scheduler::RetimeByWaits(*problem, *schedule);
  if (!run.ok()) return run.status();
  PlanOutput out;
  out.scheduler = (*method)->name();
  out.makespan_us = run->makespan_us();
  out.schedule = ScheduleToJson(graph, profile_.platform.name, DeviceNames(profile_.platform),
                                out.scheduler, *schedule, &latency_model);
  return out;
}

absl::Status GraphBackend::CheckPlan(const LoadedModel& model, const nlohmann::json& schedule,
                                     const nlohmann::json* calibration) {
  const model::Graph& graph = GraphOf(model);
  absl::StatusOr<scheduler::Schedule> parsed =
      ScheduleFromJson(graph, DeviceNames(profile_.platform), schedule);
  if (!parsed.ok()) return absl::DataLossError(std::string(parsed.status().message()));
  std::shared_ptr<const predictor::LatencyModel> latency = latency_model();
  if (calibration != nullptr) {
    absl::StatusOr<std::shared_ptr<const predictor::LatencyModel>> calibrated =
        CalibratedModel(*calibration);
    if (!calibrated.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("its calibration is not usable here: ", calibrated.status().message()));
    }
    latency = *calibrated;
  }
  absl::StatusOr<scheduler::Problem> problem = ProblemOf(graph, *latency);
  if (!problem.ok()) return problem.status();
  if (absl::Status valid = scheduler::ValidateSchedule(*problem, *parsed); !valid.ok()) {
    return absl::DataLossError(std::string(valid.message()));
  }
  return absl::OkStatus();
}

std::shared_ptr<const predictor::LatencyModel> GraphBackend::latency_model() const {
  std::lock_guard lock(mu_);
  return profile_.model;
}

absl::StatusOr<scheduler::Problem> GraphBackend::ProblemOf(const model::Graph& graph) const {
  return ProblemOf(graph, *latency_model());
}

absl::StatusOr<scheduler::Problem> GraphBackend::ProblemOf(
    const model::Graph& graph, const predictor::LatencyModel& model) const {
  return scheduler::Problem::FromGraph(graph, profile_.platform, model);
}

absl::StatusOr<std::shared_ptr<const predictor::LatencyModel>> GraphBackend::CalibratedModel(
    const nlohmann::json& /*calibration*/) const {
  return absl::UnimplementedError("this platform is simulated and cannot be calibrated");
}

namespace {

int64_t ConstantBytes(const model::Graph& graph) {
  int64_t bytes = 0;
  for (const model::Constant& constant : graph.constants) {
    bytes += static_cast<int64_t>(constant.data.size() * sizeof(float));
  }
  return bytes;
}

}  // namespace

GraphHandle::GraphHandle(model::Graph g) : graph(std::move(g)), constant_bytes(ConstantBytes(graph)) {}

int64_t GraphBackend::ResidentBytes(const LoadedModel& model) const {
  const auto& handle = static_cast<const GraphHandle&>(*model.handle);
  return handle.constant_bytes + handle.CompiledBytes();
}

PlanMemory GraphBackend::MemoryWith(const model::Graph& graph, int64_t arena_floats) {
  constexpr int64_t kFloat = sizeof(float);
  PlanMemory memory;
  memory.activation_bytes = arena_floats * kFloat;
  for (const model::Constant& constant : graph.constants) {
    memory.weight_bytes += 2 * constant.Elements() * kFloat;
  }
  for (const std::vector<model::GraphIO>* ios : {&graph.inputs, &graph.outputs}) {
    for (const model::GraphIO& io : *ios) {
      memory.io_bytes += 2 * graph.tensor(io.tensor).shape.Elements() * kFloat;
    }
  }
  std::vector<TensorBytes> activations;
  for (const model::Tensor& tensor : graph.tensors) {
    if (tensor.constant != model::kInvalidId) continue;
    activations.push_back({tensor.name, tensor.shape.Elements() * kFloat});
  }
  const size_t kept = std::min(activations.size(), PlanMemory::kLargestTensors);
  std::partial_sort(activations.begin(), activations.begin() + static_cast<ptrdiff_t>(kept),
                    activations.end(), [](const TensorBytes& a, const TensorBytes& b) {
                      return a.bytes != b.bytes ? a.bytes > b.bytes : a.name < b.name;
                    });
  activations.resize(kept);
  memory.largest_tensors = std::move(activations);
  return memory;
}

absl::StatusOr<std::vector<std::vector<float>>> GraphBackend::InputsNhwc(
    const model::Graph& graph, const std::vector<HostTensor>& inputs) {
  if (!graph.has_weights) return absl::FailedPreconditionError("model has no weights to run");
  std::vector<std::vector<float>> nhwc;
  for (size_t i = 0; i < graph.inputs.size(); ++i) {
    const model::Tensor& t = graph.tensor(graph.inputs[i].tensor);
    // Row-major tensors are stored in the ONNX order the client sends.
    nhwc.push_back(t.channels_last ? executor::NchwToNhwc(t.shape, inputs[i].data)
                                   : inputs[i].data);
  }
  return nhwc;
}

std::vector<HostTensor> GraphBackend::OutputsNchw(const model::Graph& graph,
                                                  const std::vector<std::vector<float>>& nhwc) {
  std::vector<HostTensor> host;
  for (size_t i = 0; i < graph.outputs.size(); ++i) {
    const model::Tensor& t = graph.tensor(graph.outputs[i].tensor);
    host.push_back(HostTensor{graph.outputs[i].name, graph.outputs[i].onnx_dims,
                              t.channels_last ? executor::NhwcToNchw(t.shape, nhwc[i]) : nhwc[i]});
  }
  return host;
}

}  // namespace psched::daemon
