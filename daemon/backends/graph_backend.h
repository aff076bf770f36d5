// daemon::GraphBackend: what every backend over psched's own graph and planner shares -
// importing ONNX into a model::Graph (model/), checking scheduler names and options, planning
// with predictor/ + scheduler/ for one platform profile, and checking stored plans against
// it. Subclasses add how a model is prepared for and run on this machine: SimulatedBackend
// (daemon/backends/simulated_backend.h) and CoExecBackend (daemon/backends/coexec_backend.h).
//
// GraphHandle is the ModelHandle of a GraphBackend's models; subclasses derive their own
// handle from it and create it in PrepareModel.
//
// Thread-safety: as Backend's thread contract (daemon/engine/backend.h): every method but
// Run, Warm and Calibrate is thread-safe. The latency model may be swapped (SetLatencyModel,
// UseCalibration) while plans are being computed or checked: each uses the model in place
// when it started.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "daemon/engine/backend.h"
#include "model/graph.h"
#include "predictor/latency_model.h"
#include "predictor/profiles.h"
#include "scheduler/problem.h"

namespace psched::daemon {

class GraphHandle : public ModelHandle {
 public:
  explicit GraphHandle(model::Graph g);
  // Bytes compiled for this graph (executors, arenas, packed weights); thread-safe.
  virtual int64_t CompiledBytes() const { return 0; }
  const model::Graph graph;
  const int64_t constant_bytes;  // the graph's constants
};

// REQUIRES: `model` was loaded by a GraphBackend.
const model::Graph& GraphOf(const LoadedModel& model);

class GraphBackend : public Backend {
 public:
  // `calibration_key` is PlatformInfo::calibration_key (empty: the platform cannot be
  // calibrated).
  GraphBackend(predictor::Profile profile, DiscoveryInfo discovery, std::string calibration_key);

  PlatformInfo platform() const override;
  absl::StatusOr<LoadedModel> Load(std::string_view onnx, const std::string& name,
                                   const LoadOptions& load) final;
  absl::Status CheckScheduler(const std::string& scheduler,
                              const std::map<std::string, std::string>& options) final;
  absl::StatusOr<PlanOutput> Plan(const LoadedModel& model, const std::string& scheduler,
                                  const std::map<std::string, std::string>& options,
                                  const ProgressFn& progress, const CancelledFn& cancelled) final;
  absl::Status CheckPlan(const LoadedModel& model, const nlohmann::json& schedule,
                         const nlohmann::json* calibration) final;
  // The graph's constants and the handle's CompiledBytes().
  int64_t ResidentBytes(const LoadedModel& model) const final;
  // Wraps the latency model in use in a predictor::ResidualCorrectedModel.
  absl::StatusOr<std::shared_ptr<const LatencyCorrection>> Correct(
      const LoadedModel& model, const LatencyCorrection* previous,
      const std::vector<MeasuredSubtask>& measured) final;
  absl::StatusOr<PlanOutput> PlanCorrected(const LoadedModel& model, const std::string& scheduler,
                                           const std::map<std::string, std::string>& options,
                                           const LatencyCorrection& correction,
                                           const CancelledFn& cancelled) final;

 protected:
  // The backend's handle for a freshly imported graph, with whatever it compiles ahead.
  virtual absl::StatusOr<std::shared_ptr<GraphHandle>> PrepareModel(model::Graph graph) = 0;

  // The platform planned for; fixed at construction.
  const platform::Platform& target() const { return profile_.platform; }
  // Plans from now on use `model` (its Version() becomes the predictor version).
  void SetLatencyModel(std::shared_ptr<const predictor::LatencyModel> model);
  // The latency model a calibration document describes, checked against this platform's
  // devices; UNIMPLEMENTED for a backend that cannot be calibrated.
  virtual absl::StatusOr<std::shared_ptr<const predictor::LatencyModel>> CalibratedModel(
      const nlohmann::json& calibration) const;

  // The PlanMemory of running `graph` with an activation arena of `arena_floats` floats laid
  // out as `layout`: the model's constants twice (the graph's copy and the kernels' packed
  // one; devices running slices of one op pack their parts of it), the request's inputs and
  // outputs twice (as sent and in the executors' layout).
  static PlanMemory MemoryWith(const model::Graph& graph, int64_t arena_floats);

  // `inputs` (model order, NCHW) in the executors' NHWC layout; FAILED_PRECONDITION for a
  // model without weights.
  static absl::StatusOr<std::vector<std::vector<float>>> InputsNhwc(
      const model::Graph& graph, const std::vector<HostTensor>& inputs);
  // The executors' NHWC outputs as the model declares them.
  static std::vector<HostTensor> OutputsNchw(const model::Graph& graph,
                                             const std::vector<std::vector<float>>& nhwc);

 private:
  // The latency model in use now.
  std::shared_ptr<const predictor::LatencyModel> latency_model() const;
  // The scheduling instance of `graph` under the latency model in use now.
  absl::StatusOr<scheduler::Problem> ProblemOf(const model::Graph& graph) const;
  absl::StatusOr<scheduler::Problem> ProblemOf(const model::Graph& graph,
                                               const predictor::LatencyModel& model) const;
  // Plan with `latency_model`.
  absl::StatusOr<PlanOutput> PlanWith(const LoadedModel& model, const std::string& scheduler,
                                      const std::map<std::string, std::string>& options,
                                      const ProgressFn& progress, const CancelledFn& cancelled,
                                      const predictor::LatencyModel& latency_model);

  mutable std::mutex mu_;
  // profile_.model and platform_.predictor_version change on SetLatencyModel (under mu_).
  predictor::Profile profile_;
  PlatformInfo platform_;
};

}  // namespace psched::daemon
