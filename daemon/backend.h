// daemon::Backend: the engine pieces pschedd serves — model import, planning and execution —
// behind one small interface, so the daemon's own logic (cache, queue, single-flight,
// lifecycle) is written and tested once, independent of which executor runs the plans.
//
// HostBackend (daemon/host_backend.h) is the real one over model/, predictor/, scheduler/
// and executor/; tests substitute fakes. Implementations must be thread-safe: Load and Plan
// are called concurrently from request threads; Run is called from the inference queue's
// single worker only. Nothing here includes gRPC.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "nlohmann/json.hpp"

namespace psched::daemon {

// A dense f32 tensor in the layout the model declares (NCHW for images).
struct HostTensor {
  std::string name;
  std::vector<int64_t> dims;
  std::vector<float> data;
};

struct TensorSpec {
  std::string name;
  std::vector<int64_t> dims;
  int64_t Elements() const;
};

struct DeviceInfo {
  std::string name;
  std::string kind;  // "cpu" or "gpu"
  std::vector<int> cores;
  std::string opencl_device;
};

struct PlatformInfo {
  std::string name;
  std::string fingerprint;        // part of the plan cache key
  std::string predictor_version;  // part of the plan cache key
  std::vector<DeviceInfo> devices;
};

// Backend-specific state of a loaded model (the imported graph, compiled kernels, ...).
class ModelHandle {
 public:
  virtual ~ModelHandle() = default;
};

// What the daemon needs to know about an imported model.
struct LoadedModel {
  // model::InspectJson shape: at least "ops", "op_counts", "flops", "params".
  nlohmann::json summary;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  bool has_weights = false;
  std::shared_ptr<ModelHandle> handle;
};

// A computed schedule. `schedule` has the DESIGN.md plan shape: "makespan_us", "scheduler",
// "subtasks": [{"op", "op_id", "device", "strategy", "work": [b, e], "start_us",
// "end_us"}].
struct PlanOutput {
  std::string scheduler;  // resolved name
  double makespan_us = 0;
  nlohmann::json schedule;
};

struct PlanProgressEvent {
  std::string stage;
  double best_makespan_us = 0;
};

struct SubtaskTimingInfo {
  std::string op;
  std::string device;
  double start_us = 0;
  double end_us = 0;
};

struct RunOutput {
  std::vector<HostTensor> outputs;  // model order, declared shapes
  double execute_us = 0;
  std::vector<SubtaskTimingInfo> trace;
};

using ProgressFn = std::function<void(const PlanProgressEvent&)>;
// Returns true once the work is no longer wanted; implementations poll it between steps.
using CancelledFn = std::function<bool()>;

class Backend {
 public:
  virtual ~Backend() = default;

  virtual const PlatformInfo& platform() const = 0;
  // "cpu" (whole graph on one core) or "coexec" (executes the plan across devices).
  virtual std::string executor_name() const = 0;
  // Whether Run needs a plan (false: the executor ignores it and Infer skips planning).
  virtual bool RunUsesPlan() const = 0;

  // Imports ONNX bytes. INVALID_ARGUMENT / UNIMPLEMENTED for models it cannot use, with the
  // importer's message.
  virtual absl::StatusOr<LoadedModel> Load(std::string_view onnx, const std::string& name,
                                           bool synthesize_weights) = 0;
  // INVALID_ARGUMENT for an unknown scheduler name or a bad option.
  virtual absl::Status CheckScheduler(const std::string& scheduler,
                                      const std::map<std::string, std::string>& options) = 0;
  virtual absl::StatusOr<PlanOutput> Plan(const LoadedModel& model, const std::string& scheduler,
                                          const std::map<std::string, std::string>& options,
                                          const ProgressFn& progress,
                                          const CancelledFn& cancelled) = 0;
  // REQUIRES: inputs match model.inputs (the engine validates them); plan is null when
  // !RunUsesPlan().
  virtual absl::StatusOr<RunOutput> Run(const LoadedModel& model, const PlanOutput* plan,
                                        const std::vector<HostTensor>& inputs) = 0;
};

}  // namespace psched::daemon
