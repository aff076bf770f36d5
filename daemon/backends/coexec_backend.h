// daemon::CoExecBackend: pschedd on this machine (`platform = "host"`). Plans target the
// host profile over the machine's runtime devices (CPU clusters and an optional OpenCL GPU,
// opened once by MakeHostBackend), and inference executes the plan across them with the
// co-execution runtime (executor "coexec"): each distinct plan of a model is compiled once
// (kernels created, weights packed) on first use and reused by later Infer calls, at most
// kCompiledPlansPerModel per model. Calibrate runs the calibration pipeline on these devices
// with the registered models as its priority models (calibration/pipeline.h: op timing, the
// host model's training, its run costs); UseCalibration switches planning to it.
//
// Thread-safety: as GraphBackend; Run and Calibrate are called by the inference queue's one
// worker.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/backends/graph_backend.h"
#include "executor/runtime/coexecution_runtime.h"
#include "executor/runtime/plan_from_schedule.h"
#include "predictor/analytic_model.h"

namespace psched::daemon {

class CoExecBackend final : public GraphBackend {
 public:
  // `devices` are the profile's platform in order; `priors` each device's analytic
  // parameters, calibration's starting point.
  CoExecBackend(predictor::Profile profile,
                std::shared_ptr<executor::runtime::PlatformDevices> devices,
                std::vector<predictor::AnalyticDeviceParams> priors, DiscoveryInfo discovery);

  std::string executor_name() const override { return "coexec"; }
  bool RunUsesPlan() const override { return true; }
  // The arena the runtime would lay out for `plan` (CoExecutionRuntime::ArenaSizeOf).
  // REQUIRES: plan != nullptr.
  absl::StatusOr<PlanMemory> MemoryOf(const LoadedModel& model, const PlanOutput* plan) override;
  // REQUIRES: plan != nullptr.
  absl::StatusOr<RunOutput> Run(const LoadedModel& model, const PlanOutput* plan,
                                const std::vector<HostTensor>& inputs) override;
  absl::StatusOr<CalibrationOutput> Calibrate(
      const std::vector<std::shared_ptr<const LoadedModel>>& models, double budget_s,
      const CalibrationProgressFn& progress) override;
  absl::Status UseCalibration(const nlohmann::json& params) override;
  absl::Status Warm(const LoadedModel& model, const PlanOutput& plan) override;
  absl::StatusOr<std::shared_ptr<const predictor::LatencyModel>> CalibratedModel(
      const nlohmann::json& calibration) const override;

  // Plans of one model compiled at once; more distinct plans than this evict the oldest.
  static constexpr size_t kCompiledPlansPerModel = 4;

 private:
  struct CompiledPlan;
  class CoExecHandle;

  absl::StatusOr<std::shared_ptr<GraphHandle>> PrepareModel(model::Graph graph) override;
  // The runtime for `plan`, compiled on first use.
  absl::StatusOr<std::shared_ptr<CompiledPlan>> Compiled(const CoExecHandle& handle,
                                                         const PlanOutput& plan);

  const std::shared_ptr<executor::runtime::PlatformDevices> devices_;
  const std::vector<std::string> device_names_;
  const std::vector<predictor::AnalyticDeviceParams> priors_;
};

}  // namespace psched::daemon
