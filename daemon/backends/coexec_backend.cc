#include "daemon/backends/coexec_backend.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "calibration/pipeline.h"
#include "daemon/backends/plan_json.h"
#include "model/split.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {

namespace rt = executor::runtime;

// A plan compiled onto the runtime devices: kernels created and weights packed once, reused
// by every Infer that executes the same schedule.
struct CoExecBackend::CompiledPlan {
  std::string key;  // PlanOutput::id
  // Its arena and packed weights (PlanOutput::memory, less the graph's own constants).
  int64_t bytes = 0;
  double makespan_us = 0;
  std::unique_ptr<rt::CoExecutionRuntime> runtime;
  // Predicted [start, end] per (device, op, work begin), for the timings Run reports.
  std::map<std::tuple<int, model::OpId, int64_t>, std::pair<double, double>> predicted;
};

class CoExecBackend::CoExecHandle final : public GraphHandle {
 public:
  CoExecHandle(model::Graph g, std::shared_ptr<rt::PlatformDevices> d)
      : GraphHandle(std::move(g)), devices(std::move(d)) {}
  // Declared before `compiled` so the runtimes go first: they must not outlive the devices.
  const std::shared_ptr<rt::PlatformDevices> devices;
  // Touched by Run and Warm only, which inference queue jobs call one at a time.
  mutable std::vector<std::shared_ptr<CompiledPlan>> compiled;
  // The bytes of `compiled`, for any thread.
  mutable std::atomic<int64_t> compiled_bytes{0};
  int64_t CompiledBytes() const override { return compiled_bytes.load(); }
};

namespace {

// Names the devices a calibration was measured on: names, kinds, cores, OpenCL selectors.
std::string CalibrationKey(const platform::Platform& platform) {
  std::vector<std::string> keys;
  for (const platform::DeviceSpec& spec : platform.devices) {
    keys.push_back(absl::StrCat(spec.name, ":", std::string(platform::DeviceKindName(spec.kind)),
                                ":", absl::StrJoin(spec.cpu_cores, ","), ":", spec.opencl_device));
  }
  return absl::StrJoin(keys, ";");
}

}  // namespace

CoExecBackend::CoExecBackend(predictor::Profile profile,
                             std::shared_ptr<rt::PlatformDevices> devices,
                             std::vector<predictor::AnalyticDeviceParams> priors,
                             DiscoveryInfo discovery)
    : GraphBackend(profile, std::move(discovery), CalibrationKey(profile.platform)),
      devices_(std::move(devices)),
      device_names_(devices_->names()),
      priors_(std::move(priors)) {}

absl::StatusOr<std::shared_ptr<GraphHandle>> CoExecBackend::PrepareModel(model::Graph graph) {
  return std::make_shared<CoExecHandle>(std::move(graph), devices_);
}

absl::StatusOr<std::shared_ptr<CoExecBackend::CompiledPlan>> CoExecBackend::Compiled(
    const CoExecHandle& handle, const PlanOutput& plan) {
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
  absl::StatusOr<std::unique_ptr<rt::CoExecutionRuntime>> runtime = rt::CoExecutionRuntime::Create(
      handle.graph, devices_->devices(), std::move(*steps), devices_->runtime_options());
  if (!runtime.ok()) return runtime.status();
  auto compiled = std::make_shared<CompiledPlan>();
  compiled->key = plan.id;
  compiled->makespan_us = plan.makespan_us;
  compiled->runtime = std::move(*runtime);
  for (const scheduler::ScheduledSubtask& s : schedule->subtasks()) {
    compiled->predicted[{s.device, s.op, s.begin}] = {s.start_us, s.end_us};
  }
  spdlog::info(
      "compiled the {} plan of '{}' ({} subtasks) in {:.1f} ms", plan.scheduler, handle.graph.name,
      schedule->subtasks().size(),
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  compiled->bytes = plan.memory.activation_bytes + plan.memory.weight_bytes / 2;
  if (cache.size() >= kCompiledPlansPerModel) {
    handle.compiled_bytes -= cache.front()->bytes;
    cache.erase(cache.begin());
  }
  cache.push_back(compiled);
  handle.compiled_bytes += compiled->bytes;
  return compiled;
}

absl::Status CoExecBackend::Warm(const LoadedModel& model, const PlanOutput& plan) {
  const auto& handle = static_cast<const CoExecHandle&>(*model.handle);
  if (!handle.graph.has_weights) return absl::OkStatus();  // never runs
  const auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::shared_ptr<CompiledPlan>> compiled = Compiled(handle, plan);
  if (!compiled.ok()) return compiled.status();
  std::vector<std::vector<float>> zeros;
  for (const model::GraphIO& input : handle.graph.inputs) {
    zeros.emplace_back(handle.graph.tensor(input.tensor).shape.Elements(), 0.0f);
  }
  absl::StatusOr<std::vector<std::vector<float>>> outputs = (*compiled)->runtime->Run(zeros);
  if (!outputs.ok()) return outputs.status();
  spdlog::debug(
      "warmed the {} plan of '{}' in {:.1f} ms", plan.scheduler, handle.graph.name,
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  return absl::OkStatus();
}

absl::StatusOr<PlanMemory> CoExecBackend::MemoryOf(const LoadedModel& model,
                                                   const PlanOutput* plan) {
  if (plan == nullptr) return absl::InternalError("co-execution needs a plan");
  const auto& handle = static_cast<const CoExecHandle&>(*model.handle);
  absl::StatusOr<scheduler::Schedule> schedule =
      ScheduleFromJson(handle.graph, device_names_, plan->schedule);
  if (!schedule.ok()) return absl::DataLossError(std::string(schedule.status().message()));
  absl::StatusOr<rt::ExecutionPlan> steps = rt::PlanFromSchedule(handle.graph, *schedule);
  if (!steps.ok()) return steps.status();
  absl::StatusOr<rt::ArenaSize> arena = rt::CoExecutionRuntime::ArenaSizeOf(
      handle.graph, devices_->devices(), std::move(*steps), devices_->runtime_options());
  if (!arena.ok()) return arena.status();
  return MemoryWith(handle.graph, arena->floats);
}

absl::StatusOr<RunOutput> CoExecBackend::Run(const LoadedModel& model, const PlanOutput* plan,
                                             const std::vector<HostTensor>& inputs) {
  const auto& handle = static_cast<const CoExecHandle&>(*model.handle);
  absl::StatusOr<std::vector<std::vector<float>>> nhwc = InputsNhwc(handle.graph, inputs);
  if (!nhwc.ok()) return nhwc.status();
  if (plan == nullptr) return absl::InternalError("co-execution needs a plan");
  absl::StatusOr<std::shared_ptr<CompiledPlan>> compiled = Compiled(handle, *plan);
  if (!compiled.ok()) return compiled.status();
  rt::CoExecutionRuntime& runtime = *(*compiled)->runtime;
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::vector<float>>> outputs = runtime.Run(*nhwc);
  double execute_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (!outputs.ok()) return outputs.status();
  RunOutput out;
  out.execute_us = execute_us;
  out.predicted_makespan_us = (*compiled)->makespan_us;
  out.outputs = OutputsNchw(handle.graph, *outputs);
  for (const rt::SubtaskTiming& t : runtime.last_timings()) {
    if (t.fused_away && !out.trace.empty()) {
      // The add ran inside its conv, the step before: that row predicts both ops, so the
      // feedback compares like with like.
      auto it = (*compiled)->predicted.find({t.device, t.step.op, t.step.slice.begin});
      if (it != (*compiled)->predicted.end()) out.trace.back().predicted_end_us = it->second.second;
      continue;
    }
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

absl::StatusOr<CalibrationOutput> CoExecBackend::Calibrate(
    const std::vector<std::shared_ptr<const LoadedModel>>& models, double budget_s,
    const CalibrationProgressFn& progress) {
  // The served models are the priority models (PipelineOptions::priority_models empty): their
  // ops are timed first, and their plans are probed for the run costs. The probes run at least
  // as long as the op budget, up to the default: a quick calibration stays quick.
  std::vector<model::Graph> graphs;
  for (const auto& loaded : models) graphs.push_back(GraphOf(*loaded));
  calibration::PipelineOptions options;
  options.budget_s = budget_s;
  options.run_min_s = std::min(calibration::kHostRunCostMinSeconds, budget_s);
  options.progress = [&](const calibration::PipelineProgress& p) {
    if (p.timing == nullptr) return;
    progress({p.timing->device, p.timing->cases_done, p.timing->cases_skipped, p.timing->elapsed_s,
              p.timing->budget_s, p.timing->finished});
  };
  absl::StatusOr<calibration::PipelineResult> run =
      calibration::RunPipeline(target(), priors_, graphs, options);
  if (!run.ok()) return run.status();
  CalibrationOutput out;
  out.predictor_version = run->training.model->Version();
  out.params = run->training.params;
  out.report = calibration::HostTrainingReportToJson(run->training);
  out.error_table = calibration::FormatHostTraining(run->training);
  out.samples = static_cast<int>(run->samples.samples.size());
  for (const calibration::DeviceOutcome& o : run->devices) {
    if (o.skipped) out.skipped_devices.push_back(absl::StrCat(o.device, ": ", o.reason));
  }
  return out;
}

absl::StatusOr<std::shared_ptr<const predictor::LatencyModel>> CoExecBackend::CalibratedModel(
    const nlohmann::json& json) const {
  absl::StatusOr<calibration::LoadedHostModel> loaded = calibration::HostModelFromJson(json);
  if (!loaded.ok()) return loaded.status();
  const std::vector<std::string>& names = loaded->device_names;
  if (names != device_names_) {
    return absl::InvalidArgumentError(
        absl::StrCat("calibration is for devices [", absl::StrJoin(names, ", "),
                     "], the platform has [", absl::StrJoin(device_names_, ", "), "]"));
  }
  return loaded->model;
}

absl::Status CoExecBackend::UseCalibration(const nlohmann::json& json) {
  absl::StatusOr<std::shared_ptr<const predictor::LatencyModel>> model = CalibratedModel(json);
  if (!model.ok()) return model.status();
  SetLatencyModel(*model);
  return absl::OkStatus();
}

}  // namespace psched::daemon
