// daemon::Backend: the engine pieces pschedd serves — model import, planning and execution —
// behind one small interface, so the daemon's own logic (cache, queue, single-flight,
// lifecycle) is written and tested once, independent of which executor runs the plans.
//
// MakeHostBackend (daemon/backends/host_backend.h) makes the real ones over model/, predictor/,
// scheduler/ and executor/ (daemon/backends/graph_backend.h); tests substitute fakes. Nothing
// here includes gRPC.
//
// Thread contract. Run, Warm and Calibrate are called by jobs of the inference queue, one at a
// time, never beside each other: Warm and Calibrate on the queue's worker, Run there or on the
// request thread that found the queue idle (InferenceQueue::WhenIdle::kRunOnCaller). Every
// other method may be called at any time, beside those jobs and beside itself, so
// implementations must make it thread-safe: Load, CheckScheduler and CheckPlan from request
// threads, the first-start calibration and the warm-up at start; MemoryOf from those and the
// planner threads (PlanBook); Plan from the planner threads, one per plan key; Load, MemoryOf,
// Correct and PlanCorrected from the plan feedback's worker; UseCalibration from the thread
// that finished a calibration or imported a plan bundle, while plans are being made and
// checked with the model it replaces; platform() and ResidentBytes from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "model/input_shapes.h"
#include "nlohmann/json.hpp"
#include "platform/cpu_topology.h"

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

// One device of the platform as the daemon reports it (Status, Devices).
struct PlatformDeviceInfo {
  std::string name;
  std::string kind;  // "cpu" or "gpu"
  std::vector<int> cores;
  std::string opencl_device;
};

// How the host platform's CPU devices were found (`pschedctl platform show`).
struct DiscoveryInfo {
  // "discovered", "config", "fallback" or "profile" (admin.proto's PlatformDiscovery).
  std::string cpu_devices_from = "profile";
  // Why discovery failed; empty when it worked or did not run.
  std::string error;
  // What discovery found; unset when it did not run or failed.
  std::optional<platform::CpuTopology> topology;
};

struct PlatformInfo {
  std::string name;
  std::string fingerprint;        // part of the plan cache key
  std::string predictor_version;  // part of the plan cache key
  std::vector<PlatformDeviceInfo> devices;
  // Names the devices a calibration was measured on (names, kinds, cores, OpenCL
  // selectors): a stored calibration applies to a platform with the same key.
  std::string calibration_key;
  DiscoveryInfo discovery;
};

// Backend-specific state of a loaded model (the imported graph, compiled kernels, ...).
class ModelHandle {
 public:
  virtual ~ModelHandle() = default;
};

// What the daemon needs to know about an imported model.
// How Backend::Load imports a model's bytes (the ModelHeader it was registered with).
struct LoadOptions {
  // Fill absent weights with seeded synthetic values so a graph-only model can run.
  bool synthesize_weights = false;
  // Shapes binding the graph inputs' symbolic dimensions (model::ImportOptions).
  model::InputShapes input_shapes;
  // Refuse initializers stored as external data (a new upload that is not graph-only).
  bool refuse_external_data = false;
};

struct LoadedModel {
  // model::InspectJson shape: at least "ops", "op_counts", "flops", "params".
  nlohmann::json summary;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  bool has_weights = false;
  std::shared_ptr<ModelHandle> handle;
};

// One tensor of a plan's memory, for messages and `plan show`.
struct TensorBytes {
  std::string name;
  int64_t bytes = 0;
};

// The memory running a plan takes, computed before any of it is allocated (Backend::MemoryOf).
struct PlanMemory {
  // The activation arena: every activation tensor where the plan's order lets tensors share
  // memory, the partial sums of input-channel splits, the kernels' read-past slack. The GPU
  // works in the same arena (shared virtual memory), so it needs no copy of it.
  int64_t activation_bytes = 0;
  // The model's constants and their copies packed for the kernels of each device that runs a
  // part of their op (XNNPACK and oneDNN filters, OpenCL buffers).
  int64_t weight_bytes = 0;
  // Input and output copies of a run (the request's NCHW tensors and their NHWC copies).
  int64_t io_bytes = 0;
  // The largest activation tensors, largest first (at most kLargestTensors).
  std::vector<TensorBytes> largest_tensors;
  static constexpr size_t kLargestTensors = 3;
  int64_t peak_bytes() const { return activation_bytes + weight_bytes + io_bytes; }
};

// A computed schedule. `schedule` has the plan shape of docs/api.md: "makespan_us", "scheduler",
// "subtasks": [{"op", "op_id", "device", "strategy", "work": [b, e], "start_us",
// "end_us"}].
struct PlanOutput {
  std::string scheduler;  // resolved name
  // The predicted makespan of a run (scheduler::RetimeByWaits); `schedule` keeps the planner's
  // own times, whose makespan may differ.
  double makespan_us = 0;
  nlohmann::json schedule;
  // SHA-256 of the schedule's JSON text, set by the engine: equal ids mean equal schedules,
  // so a backend may key what it compiles for a plan by it. Empty from Backend::Plan.
  std::string id;
  // What running it takes (Backend::MemoryOf), set by the engine before the plan is served.
  PlanMemory memory;
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
  // The slice of the op's work the subtask ran: axis name ("none", "cout", ...) and [b, e).
  std::string strategy = "none";
  int64_t work_begin = 0;
  int64_t work_end = 1;
  // The plan's prediction for this subtask; negative when there is no plan.
  double predicted_start_us = -1;
  double predicted_end_us = -1;
  // The device's own execution time (GPU event profiling); negative when it reports none.
  double device_us = -1;
};

struct RunOutput {
  std::vector<HostTensor> outputs;  // model order, declared shapes
  double execute_us = 0;
  std::vector<SubtaskTimingInfo> trace;
  // The executed plan's predicted makespan; 0 when the executor ignores plans.
  double predicted_makespan_us = 0;
};

// One subtask of a plan as measured over several runs, beside its predicted duration.
// measured_us is its share of its device's measured time (to the device's last subtask's
// end), in proportion to its median measured duration: what the plan left out (dispatch,
// waiting for another device) is charged to the subtasks of the device that paid for it.
struct MeasuredSubtask {
  std::string op;
  std::string device;
  std::string strategy = "none";
  int64_t work_begin = 0;
  int64_t work_end = 1;
  double measured_us = 0;
  double predicted_us = 0;
};

// The platform's latency model corrected by measured runs. Opaque to the daemon: the backend
// makes it (Backend::Correct) and plans with it (Backend::PlanCorrected).
class LatencyCorrection {
 public:
  virtual ~LatencyCorrection() = default;
  // The corrected model's version: the predictor version in the key of plans made with it.
  virtual std::string predictor_version() const = 0;
};

struct CalibrationProgressEvent {
  std::string device;
  int cases_done = 0;
  int cases_skipped = 0;
  double elapsed_s = 0;
  double budget_s = 0;
  bool finished = false;  // the device is done
};

// A fitted host latency model.
struct CalibrationOutput {
  std::string predictor_version;  // Version() of the fitted model
  nlohmann::json params;          // what UseCalibration takes back
  nlohmann::json report;          // held-out / training errors per device and op kind
  std::string error_table;        // the held-out errors as a text table
  int samples = 0;
  std::vector<std::string> skipped_devices;  // "name: reason"
};

using ProgressFn = std::function<void(const PlanProgressEvent&)>;
using CalibrationProgressFn = std::function<void(const CalibrationProgressEvent&)>;
// Returns true once the work is no longer wanted; implementations poll it between steps.
using CancelledFn = std::function<bool()>;

class Backend {
 public:
  virtual ~Backend() = default;

  // A snapshot: calibration changes predictor_version.
  virtual PlatformInfo platform() const = 0;
  // "cpu" (whole graph on one core) or "coexec" (executes the plan across devices).
  virtual std::string executor_name() const = 0;
  // Whether Run needs a plan (false: the executor ignores it and Infer skips planning).
  virtual bool RunUsesPlan() const = 0;

  // Imports ONNX bytes. INVALID_ARGUMENT / UNIMPLEMENTED for models it cannot use, with the
  // importer's message.
  virtual absl::StatusOr<LoadedModel> Load(std::string_view onnx, const std::string& name,
                                           const LoadOptions& options) = 0;
  // INVALID_ARGUMENT for an unknown scheduler name or a bad option.
  virtual absl::Status CheckScheduler(const std::string& scheduler,
                                      const std::map<std::string, std::string>& options) = 0;
  virtual absl::StatusOr<PlanOutput> Plan(const LoadedModel& model, const std::string& scheduler,
                                          const std::map<std::string, std::string>& options,
                                          const ProgressFn& progress,
                                          const CancelledFn& cancelled) = 0;
  // Checks a stored plan against the model's graph and this platform (known devices, one
  // plan per op tiling its work, durations as predicted, dependencies, no overlap).
  // DATA_LOSS naming the first violation; the engine then drops and recomputes the plan.
  // With `calibration` (a document UseCalibration takes), durations are checked against the
  // latency model it describes instead of the one in use: a plan made with another board's
  // calibration (INVALID_ARGUMENT when that cannot be loaded here).
  virtual absl::Status CheckPlan(const LoadedModel& model, const nlohmann::json& schedule,
                                 const nlohmann::json* calibration = nullptr) = 0;
  // Does ahead what the first Run of `plan` would do first (compile it: kernels created,
  // weights packed, OpenCL programs built) and runs it once on zeros, so the first inference
  // served runs as fast as the later ones. REQUIRES: called as Run is, from the inference
  // queue (never beside a Run).
  virtual absl::Status Warm(const LoadedModel& /*model*/, const PlanOutput& /*plan*/) {
    return absl::OkStatus();
  }
  // The memory running `plan` of `model` takes (PlanMemory), computed without allocating it:
  // cheap next to compiling the plan. `plan` is null when !RunUsesPlan(). Errors as CheckPlan.
  virtual absl::StatusOr<PlanMemory> MemoryOf(const LoadedModel& model,
                                              const PlanOutput* plan) = 0;
  // Bytes `model` holds in memory now: its graph and weights, and what it compiled to run
  // plans (arenas, packed weights). Thread-safe beside Run.
  virtual int64_t ResidentBytes(const LoadedModel& model) const = 0;
  // REQUIRES: inputs match model.inputs (the engine validates them); plan is null when
  // !RunUsesPlan().
  virtual absl::StatusOr<RunOutput> Run(const LoadedModel& model, const PlanOutput* plan,
                                        const std::vector<HostTensor>& inputs) = 0;

  // Times op configurations on the platform's devices for about `budget_s` seconds each and
  // fits a latency model to them; does not install it (UseCalibration does). Called from
  // the inference queue's worker, so no inference runs meanwhile. UNIMPLEMENTED for
  // platforms that are not this machine's.
  // The cases are the distinct op configurations (and their slices) of `models`.
  virtual absl::StatusOr<CalibrationOutput> Calibrate(
      const std::vector<std::shared_ptr<const LoadedModel>>& models, double budget_s,
      const CalibrationProgressFn& progress) = 0;
  // Plans from now on use the model `params` describe (CalibrationOutput::params).
  // INVALID_ARGUMENT when they do not describe this platform's devices.
  virtual absl::Status UseCalibration(const nlohmann::json& params) = 0;

  // The latency model in use, corrected by `measured`: subtasks of a plan of `model` made
  // with `previous` (null: with the model in use), whose factors the new ones refine.
  // INVALID_ARGUMENT when no measured subtask names an op, device and slice of the model;
  // FAILED_PRECONDITION when `previous` corrects a model no longer in use (recalibrated).
  // UNIMPLEMENTED (the default) for backends that do not plan with a latency model.
  virtual absl::StatusOr<std::shared_ptr<const LatencyCorrection>> Correct(
      const LoadedModel& /*model*/, const LatencyCorrection* /*previous*/,
      const std::vector<MeasuredSubtask>& /*measured*/) {
    return absl::UnimplementedError("this backend does not correct its latency model");
  }
  // As Plan, with `correction` in place of the latency model in use.
  virtual absl::StatusOr<PlanOutput> PlanCorrected(
      const LoadedModel& /*model*/, const std::string& /*scheduler*/,
      const std::map<std::string, std::string>& /*options*/,
      const LatencyCorrection& /*correction*/, const CancelledFn& /*cancelled*/) {
    return absl::UnimplementedError("this backend does not correct its latency model");
  }
};

}  // namespace psched::daemon
