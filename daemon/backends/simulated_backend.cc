#include "daemon/backends/simulated_backend.h"

#include <chrono>
#include <utility>

#include "absl/strings/str_cat.h"
#include "executor/common/arena_plan.h"
#include "executor/cpu/cpu_graph_executor.h"
#include "model/op_validation.h"

namespace psched::daemon {
namespace {

// The graph compiled once for XNNPACK; null executor for a model without weights.
class CpuGraphHandle final : public GraphHandle {
 public:
  explicit CpuGraphHandle(model::Graph g) : GraphHandle(std::move(g)) {}
  int64_t CompiledBytes() const override { return compiled_bytes; }
  std::unique_ptr<executor::cpu::CpuGraphExecutor> executor;
  // The executor's arena and packed weights; set before the handle is shared.
  int64_t compiled_bytes = 0;
};

}  // namespace

SimulatedBackend::SimulatedBackend(predictor::Profile profile)
    : GraphBackend(std::move(profile), DiscoveryInfo{}, "") {
  for (const platform::DeviceSpec& spec : target().devices) {
    if (spec.kind == platform::DeviceKind::kCpu) {
      run_device_ = spec.name;
      run_cores_ = spec.cpu_cores;
      break;
    }
  }
}

absl::StatusOr<std::shared_ptr<GraphHandle>> SimulatedBackend::PrepareModel(model::Graph graph) {
  auto handle = std::make_shared<CpuGraphHandle>(std::move(graph));
  if (handle->graph.has_weights) {
    executor::cpu::CpuExecutorOptions options;
    options.cores = run_cores_;
    absl::StatusOr<std::unique_ptr<executor::cpu::CpuGraphExecutor>> compiled =
        executor::cpu::CpuGraphExecutor::Create(handle->graph, options);
    if (!compiled.ok()) return compiled.status();
    handle->executor = std::move(*compiled);
    const PlanMemory memory = MemoryWith(handle->graph, executor::PlanArena(handle->graph).size);
    handle->compiled_bytes = memory.activation_bytes + memory.weight_bytes / 2;
  }
  return handle;
}

absl::StatusOr<PlanMemory> SimulatedBackend::MemoryOf(const LoadedModel& model,
                                                const PlanOutput* /*plan*/) {
  const model::Graph& graph = GraphOf(model);
  for (model::OpId id = 0; id < static_cast<model::OpId>(graph.ops.size()); ++id) {
    if (absl::Status valid = model::ValidateOp(graph, id); !valid.ok()) return valid;
  }
  return MemoryWith(graph, executor::PlanArena(graph).size);
}

absl::StatusOr<RunOutput> SimulatedBackend::Run(const LoadedModel& model, const PlanOutput* /*plan*/,
                                          const std::vector<HostTensor>& inputs) {
  const auto& handle = static_cast<const CpuGraphHandle&>(*model.handle);
  const model::Graph& graph = handle.graph;
  absl::StatusOr<std::vector<std::vector<float>>> nhwc = InputsNhwc(graph, inputs);
  if (!nhwc.ok()) return nhwc.status();
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<std::vector<std::vector<float>>> outputs = handle.executor->Run(*nhwc);
  double execute_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
  if (!outputs.ok()) return outputs.status();
  RunOutput out;
  out.execute_us = execute_us;
  out.outputs = OutputsNchw(graph, *outputs);
  const auto& timings = handle.executor->last_op_timings();
  for (size_t op = 0; op < timings.size() && op < graph.ops.size(); ++op) {
    out.trace.push_back({graph.ops[op].name, run_device_,
                         static_cast<double>(timings[op].start_ns) / 1e3,
                         static_cast<double>(timings[op].end_ns) / 1e3});
  }
  return out;
}

absl::StatusOr<CalibrationOutput> SimulatedBackend::Calibrate(
    const std::vector<std::shared_ptr<const LoadedModel>>& /*models*/, double /*budget_s*/,
    const CalibrationProgressFn& /*progress*/) {
  return absl::UnimplementedError(
      absl::StrCat("platform '", target().name, "' is simulated; only the host calibrates"));
}

absl::Status SimulatedBackend::UseCalibration(const nlohmann::json& /*params*/) {
  return absl::InvalidArgumentError(absl::StrCat(
      "platform '", target().name, "' is simulated; a calibration describes the host's devices"));
}

}  // namespace psched::daemon
