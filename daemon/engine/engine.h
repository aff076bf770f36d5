// daemon::Engine: the core the gRPC services forward to. It implements the request semantics
// documented in docs/api.md: model registration by content hash, plan lookup or computation,
// inference admission through the bounded InferenceQueue, calibration, plan bundles and cache
// administration. It enforces the resource bounds of the config (docs/operations.md,
// "Resource bounds"): per-user model quotas and each plan's peak memory here; the bytes of
// loaded models and compiled plans in its ModelCatalog; planning slots and planning time in its
// PlanBook, which plans once per cache key however many clients ask at once. It never includes
// gRPC: callers pass a CallContext with their deadline, a cancellation probe and whether an
// admin asks.
//
// Ownership: the Engine owns everything it is given and the parts it composes: the
// cache::Store, the Backend (import / plan / run), the InferenceQueue, the ModelCatalog, the
// PlanBook, the PlanFeedback and the first-start calibration. Shutdown() must be called before
// destruction to let queued work finish; the destructor also waits for planner threads. A
// calibration stored in the cache for the backend's platform is installed at construction.
//
// Thread-safety: all public methods are thread-safe and may block (planning, inference). The
// Engine's own locks guard only its warm-up bookkeeping; the catalog, the plan book, the queue
// and the feedback lock their own state, and the Engine never holds one of its locks while
// calling into them.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cache/store.h"
#include "daemon/engine/backend.h"
#include "daemon/engine/call_context.h"
#include "daemon/engine/config.h"
#include "daemon/engine/first_start_calibration.h"
#include "daemon/engine/inference_queue.h"
#include "daemon/engine/model_catalog.h"
#include "daemon/engine/plan_book.h"
#include "daemon/engine/plan_feedback.h"
#include "daemon/engine/ready_plan.h"
#include "daemon/engine/usage_recorder.h"
#include "sync/mutex.h"

namespace psched::daemon {

struct ModelInfo {
  std::string id;
  std::string name;
  int64_t size_bytes = 0;
  int64_t registered_unix_s = 0;
  nlohmann::json summary;  // ops, op_counts, flops, params, has_weights, inputs, outputs
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
  bool has_weights = false;
  model::InputShapes input_shapes;  // given at registration
};

// What a registration asks for besides the bytes (the ModelHeader).
struct RegisterOptions {
  // Fill absent weights with seeded synthetic values so a graph-only model can run.
  bool synthesize_weights = false;
  // The upload leaves its weights out on purpose (external data not sent): plan only.
  bool graph_only = false;
  // Shapes binding the graph inputs' symbolic dimensions; part of the model id.
  model::InputShapes input_shapes;
  // Who registers it: the caller's uid (decimal), stored as the model's owner; empty: nobody.
  std::string owner;
  // The owner as a refusal names them ("uid 1000 (alice) ...").
  std::string owner_description;
  // Not counted against max_models_per_user / max_model_bytes_per_user (admins).
  bool quota_exempt = false;
};

struct PlanResult {
  std::string model_id;
  std::string scheduler;
  double makespan_us = 0;
  bool cached = false;
  // The plan came from a plan bundle (ImportPlans) and no planning ran for it here.
  bool imported = false;
  double planning_ms = 0;
  std::string platform_fingerprint;
  std::string predictor_version;
  // The plan answered with: its schedule (ready->output.schedule) and its answer formatted
  // once (ready->answer).
  std::shared_ptr<const ReadyPlan> ready;
  // What runs of this plan measured (PlanFeedback); unset before its first run.
  std::optional<PlanMeasurement> measured;
};

struct InferResult {
  std::vector<HostTensor> outputs;
  double queue_us = 0;
  double execute_us = 0;
  double latency_us = 0;
  std::string executor;
  std::vector<SubtaskTimingInfo> trace;
  // The plan that ran (coexec): its scheduler and predicted makespan; empty / 0 otherwise.
  std::string scheduler;
  double predicted_makespan_us = 0;
};

// What Engine::VerifyCache found.
struct CacheProblemInfo {
  std::string model_id;
  std::string scheduler_config;  // empty: the model's bytes
  std::string reason;
};

struct CacheVerification {
  int64_t models_checked = 0;
  int64_t plans_checked = 0;
  int64_t plans_skipped = 0;  // other platform or predictor, or the model is damaged
  std::vector<CacheProblemInfo> problems;
};

// One plan ImportPlans stored.
struct ImportedPlanInfo {
  std::string scheduler_config;
  std::string predictor_version;
  // Whether this daemon serves it now: it plans with the same predictor version. A plan of
  // another version is stored but never served until the daemon plans with that version.
  bool served = false;
};

struct ImportResult {
  std::string model_id;
  std::vector<ImportedPlanInfo> plans;
  // What became of the bundle's calibration: "" (it had none), "adopted", "already in use",
  // or "not adopted: <why>".
  std::string calibration;
};

// Usage against each resource bound (Engine::Status); bounds as configured (resolved).
struct ResourceUsage {
  int64_t cache_bytes = 0;
  int64_t cache_max_bytes = 0;
  cache::OwnerUsage caller;  // the asking user's registered models
  int64_t max_models_per_user = 0;
  int64_t max_model_bytes_per_user = 0;
  bool quota_exempt = false;
  int64_t loaded_models = 0;
  int64_t max_loaded_models = 0;
  int64_t loaded_bytes = 0;
  int64_t max_loaded_bytes = 0;
  int64_t max_plan_memory_bytes = 0;
  int64_t planning = 0;
  int64_t planning_queued = 0;
  int64_t max_concurrent_plans = 0;
  int64_t max_planning_s = 0;
};

struct EngineStatus {
  std::string version;
  double uptime_s = 0;
  PlatformInfo platform;
  std::string executor;
  std::string default_scheduler;
  int64_t models = 0;
  int64_t queue_depth = 0;
  int64_t queue_capacity = 0;
  int64_t inferences = 0;
  cache::CacheStats cache;
  // The first-start calibration (FirstStartCalibration::State).
  std::string calibration;
  ResourceUsage resources;
};

class Engine {
 public:
  // `config`'s resource bounds are taken as they are: ResolveBudgets (daemon/engine/budgets.h)
  // first turns those left at 0 into their defaults; a bound still 0 here is not enforced.
  Engine(const DaemonConfig& config, std::unique_ptr<cache::Store> store,
         std::unique_ptr<Backend> backend);
  ~Engine();

  // Stores the model (imported first, so unusable bytes are refused) under
  // model::ModelId(onnx, the given input shapes). Returns the model and whether it was
  // already registered. Unless `options` is graph-only or synthesizes weights, initializers
  // stored as external data are INVALID_ARGUMENT: uploads are self-contained. A new model
  // that would take a non-exempt owner past max_models_per_user or max_model_bytes_per_user
  // is RESOURCE_EXHAUSTED naming the quota and the owner's usage; nothing is removed for it.
  absl::StatusOr<std::pair<ModelInfo, bool>> RegisterModel(std::string onnx,
                                                           const std::string& name,
                                                           const RegisterOptions& options);
  absl::StatusOr<std::vector<ModelInfo>> ListModels();
  absl::StatusOr<ModelInfo> GetModel(const std::string& id_or_prefix);
  // Returns the full id and the number of plans removed.
  absl::StatusOr<std::pair<std::string, int64_t>> RemoveModel(const std::string& id_or_prefix);

  absl::StatusOr<PlanResult> GetPlan(const std::string& id_or_prefix, const std::string& scheduler,
                                     const std::map<std::string, std::string>& options,
                                     bool refresh, const CallContext& context,
                                     const ProgressFn& progress);

  absl::StatusOr<InferResult> Infer(const std::string& id_or_prefix, std::vector<HostTensor> inputs,
                                    const std::string& scheduler, const CallContext& context);

  // Times op configurations of the registered models on every device for `budget_s`
  // seconds each (no inference runs meanwhile), fits the host latency model, stores it in
  // the cache and plans with it from then on; plans cached under the previous predictor
  // version are no longer served. INVALID_ARGUMENT for a budget outside (0,
  // kMaxCalibrationBudgetS]; FAILED_PRECONDITION with no registered model; UNIMPLEMENTED
  // for a simulated platform. `progress` runs on the queue's worker thread.
  absl::StatusOr<CalibrationOutput> Calibrate(double budget_s,
                                              const CalibrationProgressFn& progress,
                                              const CallContext& context);
  // Per device: longer runs would trip the stuck-inference watchdog.
  static constexpr double kMaxCalibrationBudgetS = 15;

  // A plan bundle (daemon/engine/plan_bundle.h) of the cached plans of the model for this platform,
  // all predictor versions; only those of `scheduler`'s configs when it is not empty.
  // NOT_FOUND for an unknown model or when no plan is cached.
  // Returns the bundle's text and its number of plans.
  absl::StatusOr<std::pair<std::string, int>> ExportPlans(const std::string& id_or_prefix,
                                                          const std::string& scheduler);
  // Stores the plans of a bundle in the cache, all or none: INVALID_ARGUMENT for a malformed
  // or altered bundle or a plan that does not fit the model's graph (checked exactly as a
  // plan read from the cache), FAILED_PRECONDITION naming both fingerprints for another
  // platform's bundle, NOT_FOUND naming the model when it is not registered. A stored plan
  // replaces this daemon's plan under the same key and is served without planning. The
  // bundle's calibration is adopted when this board has none of its own, so the plans made
  // with it are served too.
  absl::StatusOr<ImportResult> ImportPlans(const std::string& bundle);

  // `owner`: the asking user (RegisterOptions::owner), whose quota usage it reports.
  EngineStatus Status(const std::string& owner = "", bool quota_exempt = false);
  // What the loaded models and their compiled plans hold (Backend::ResidentBytes).
  int64_t LoadedBytes();
  absl::StatusOr<cache::CacheStats> CacheStats();
  absl::StatusOr<std::vector<cache::PlanRecord>> ListCachedPlans(const std::string& id_or_prefix);
  absl::StatusOr<cache::PurgeResult> PurgeCache(bool include_models);
  // Hashes every stored model against its id (quarantining a damaged one, as loading it
  // would) and validates every cached plan of the current platform and predictor against
  // its model's graph (an invalid one is recomputed when next asked for).
  absl::StatusOr<CacheVerification> VerifyCache();
  PlatformInfo platform() const { return backend_->platform(); }
  InferenceQueue::ProgressInfo QueueProgress() const { return queue_.Progress(); }
  // Whether GetPlan would answer from memory: a plan for `model_id` (a full id; a prefix
  // needs the store) and the scheduler config is ready. Takes one lock, never plans.
  bool PlanReady(const std::string& model_id, const std::string& scheduler,
                 const std::map<std::string, std::string>& options) const;
  // Whether an Infer of `model_id` (a full id) would be answered at once: the plan it runs is
  // in memory and either the inference queue is full (the call is refused on the spot) or it
  // is idle and the plan's median measured makespan is at most the config's brief_infer_us
  // (the call runs briefly). A call poller answers such a call itself
  // (daemon/rpc/call_pollers.h). Not at once: a prefix, a plan not in memory or not run yet, a
  // platform that runs no plan, a queue neither idle nor full. Short locks, never plans.
  bool InferAnswersAtOnce(const std::string& model_id, const std::string& scheduler) const;

  // Refuses new inferences and waits until queued ones have run.
  void Shutdown();

  // "name" or "name;k=v;k2=v2" with keys sorted: equal requests give equal strings.
  static std::string SchedulerConfigKey(const std::string& scheduler,
                                        const std::map<std::string, std::string>& options);
  // The inverse: the scheduler name and its options. A part without '=' is ignored.
  struct SchedulerRequest {
    std::string scheduler;
    std::map<std::string, std::string> options;
  };
  static SchedulerRequest ParseSchedulerConfig(const std::string& config);

 private:
  struct PlanLookup {
    std::shared_ptr<const ReadyPlan> plan;
    bool cached = false;
  };

  // The scheduler and options a request is planned with: as asked, or for a request naming no
  // scheduler the configured default_scheduler with its options, the request's own options
  // taking precedence.
  SchedulerRequest Resolve(const std::string& requested,
                           const std::map<std::string, std::string>& options) const;
  // The key of `id`'s plan on this platform for the scheduler config.
  cache::PlanKey PlanKeyOf(const std::string& id, const std::string& scheduler,
                           const std::map<std::string, std::string>& options) const;
  // The plan of `id` for the scheduler config: from memory, else from the store (validated),
  // else planned now (one planning run per key however many ask). RESOURCE_EXHAUSTED when
  // its peak memory is over the budget (WithinMemoryBudget): nothing of it is allocated.
  absl::StatusOr<PlanLookup> PlanFor(const std::string& id, const std::string& requested_scheduler,
                                     const std::map<std::string, std::string>& options,
                                     bool refresh, const CallContext& context,
                                     const ProgressFn& progress);
  // PlanFor's lookup without the memory budget's check.
  absl::StatusOr<PlanLookup> FindOrPlan(const std::string& id,
                                        const std::string& requested_scheduler,
                                        const std::map<std::string, std::string>& requested_options,
                                        bool refresh, const CallContext& context,
                                        const ProgressFn& progress);
  // Plans `id` for the scheduler config in the plan book's flight for `key`; the plan is
  // stored and kept ready.
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> ComputePlan(
      const std::string& id, const cache::PlanKey& key, const std::string& scheduler,
      const std::map<std::string, std::string>& options, const CallContext& context,
      const ProgressFn& progress);
  // Sets plan.memory (Backend::MemoryOf) for model `id`.
  absl::Status MeasureMemory(const std::string& id, PlanOutput& plan);
  // RESOURCE_EXHAUSTED naming the peak, its parts, the largest tensors and the key when the
  // plan's peak memory is over config_.max_plan_memory_bytes.
  absl::Status WithinMemoryBudget(const ReadyPlan& plan) const;
  // Drops the in-memory plans of `model_id` ("" = every model) and what feedback measured
  // of them.
  void ForgetReadyPlans(const std::string& model_id);
  // PlanFeedback's Replanner: corrects the latency model by `measured` and plans `served`'s
  // request again with it, keeping the new plan in the store under its own key.
  absl::StatusOr<PlanFeedback::Candidate> Replan(const ReadyPlan& served,
                                                 const LatencyCorrection* correction,
                                                 const std::vector<MeasuredSubtask>& measured,
                                                 const CancelledFn& cancelled);
  // Checks a cached plan against its model and platform once per (key, plan bytes); with
  // `calibration`, its durations against that calibration's model (Backend::CheckPlan).
  absl::Status CheckCachedPlan(const std::string& id, const cache::PlanKey& key,
                               const std::string& schedule_json, const nlohmann::json& schedule,
                               const nlohmann::json* calibration = nullptr);

  // RESOURCE_EXHAUSTED naming the quota a registration of `size_bytes` would pass and the
  // owner's `usage`.
  absl::Status OverQuota(const RegisterOptions& options, const cache::OwnerUsage& usage,
                         int64_t size_bytes) const;
  ModelInfo Describe(const cache::ModelRecord& record, const LoadedModel* loaded) const;

  // Reads the calibration stored for the platform, if any, and starts or rules out the
  // first-start calibration.
  void InstallStoredCalibration();
  // Set once in the constructor, started there (a model is stored) or by RegisterModel.
  void StartFirstStartCalibration(const std::string& off_reason);
  // ImportPlans' step for the bundle's calibration: ImportResult::calibration, or an error
  // when it cannot be used here (nothing is stored then).
  // `params` is calibration.params_json, parsed.
  absl::StatusOr<std::string> AdoptBundleCalibration(const cache::CalibrationRecord& calibration,
                                                     const nlohmann::json& params);

  // Compiles `plan` of model `id` ahead and runs it once (Backend::Warm), as a job of the
  // inference queue, the first time GetPlan hands it out; its first Infer then runs warm.
  void WarmOnce(const std::string& id, std::shared_ptr<const ReadyPlan> plan);
  // At start, in the background: WarmOnce for the most used cached plan of each of the
  // kWarmAtStart most recently used models, so they answer warm after a restart.
  void WarmRecentPlans();
  static constexpr size_t kWarmAtStart = 4;

  const DaemonConfig config_;
  // config_.default_scheduler parsed once: Resolve runs on every Infer's call-poller check.
  const SchedulerRequest default_scheduler_ = ParseSchedulerConfig(config_.default_scheduler);
  std::unique_ptr<cache::Store> store_;
  std::unique_ptr<Backend> backend_;
  InferenceQueue queue_;
  const absl::Time started_ = absl::Now();
  ModelCatalog catalog_{store_.get(), backend_.get(), config_.max_loaded_models,
                        config_.max_loaded_bytes};
  PlanBook plans_{backend_->platform(), config_.max_concurrent_plans, config_.max_planning_s};
  UsageRecorder usage_{store_.get(), absl::Seconds(1)};
  std::unique_ptr<FirstStartCalibration> first_start_calibration_;

  std::thread warm_at_start_;  // joined by StopWarmingAtStart
  sync::Mutex warm_join_mu_;
  std::atomic<bool> stop_warm_at_start_{false};
  // Ends the start-up warm-up (after the model it is on) and joins it: at shutdown, and
  // before a purge, which it would otherwise undo by planning what was purged.
  void StopWarmingAtStart();
  sync::Mutex warm_mu_;
  std::set<std::string> warmed_ ABSL_GUARDED_BY(warm_mu_);  // "<model id>|<plan id>"
  std::atomic<int64_t> warmups_{0};  // queue jobs that were warm-ups, not inferences

  // Last: destroyed (its worker stopped) before everything its callbacks use.
  PlanFeedback feedback_;
};

}  // namespace psched::daemon
