// daemon::SimulatedBackend: pschedd on a simulated platform (`platform = NAME`, a predictor
// profile such as a phone's). Plans target that profile; inference ignores them and runs the
// whole graph with XNNPACK (executor/cpu/) on the cores of the profile's first CPU device,
// compiled once per model at load (executor "cpu"), its timings reported under that
// device's name. It has nothing to calibrate: the profile is not
// this machine.
//
// Thread-safety: as GraphBackend; Run is called by inference queue jobs, one at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "daemon/backends/graph_backend.h"

namespace psched::daemon {

class SimulatedBackend final : public GraphBackend {
 public:
  explicit SimulatedBackend(predictor::Profile profile);

  std::string executor_name() const override { return "cpu"; }
  bool RunUsesPlan() const override { return false; }
  // The whole graph's arena with ops one at a time (the executor compiled at load).
  absl::StatusOr<PlanMemory> MemoryOf(const LoadedModel& model, const PlanOutput* plan) override;
  absl::StatusOr<RunOutput> Run(const LoadedModel& model, const PlanOutput* plan,
                                const std::vector<HostTensor>& inputs) override;
  // UNIMPLEMENTED: only the host calibrates.
  absl::StatusOr<CalibrationOutput> Calibrate(
      const std::vector<std::shared_ptr<const LoadedModel>>& models, double budget_s,
      const CalibrationProgressFn& progress) override;
  // INVALID_ARGUMENT: no calibration describes a simulated platform.
  absl::Status UseCalibration(const nlohmann::json& params) override;

 private:
  absl::StatusOr<std::shared_ptr<GraphHandle>> PrepareModel(model::Graph graph) override;

  // The profile's first CPU device.
  std::string run_device_;
  std::vector<int> run_cores_;
};

}  // namespace psched::daemon
