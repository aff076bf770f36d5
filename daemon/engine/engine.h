// daemon::Engine: the core the gRPC services forward to. It owns the cache::Store, the
// Backend (import / plan / run) and the InferenceQueue, and implements the request semantics
// documented in docs/api.md: model registration by content hash, plan lookup or
// computation with one planning run per cache key however many clients ask at once, and
// inference admission through the bounded queue. It enforces the resource bounds of the
// config (docs/operations.md, "Resource bounds"): per-user model quotas, each plan's peak
// memory, the bytes of loaded models and compiled plans, planning slots and planning time. It
// never includes gRPC: callers pass a CallContext with their deadline, a cancellation probe
// and whether an admin asks.
//
// Thread-safety: all public methods are thread-safe and may block (planning, inference).
// Ownership: the Engine owns everything it is given; Shutdown() must be called before
// destruction to let queued work finish. A calibration stored in the cache for the
// backend's platform is installed at construction.
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
#include "daemon/engine/config.h"
#include "daemon/engine/first_start_calibration.h"
#include "daemon/engine/inference_queue.h"
#include "daemon/engine/plan_feedback.h"
#include "daemon/engine/ready_plan.h"
#include "daemon/engine/usage_recorder.h"
#include "sync/mutex.h"

namespace psched::daemon {

// Who is asking: the deadline and whether the caller went away.
struct CallContext {
  absl::Time deadline = absl::InfiniteFuture();
  CancelledFn cancelled = [] { return false; };
  // An admin's request: planning for it is not capped by max_planning_s.
  bool uncapped_planning = false;
};

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

 private:
  struct Flight;
  struct PlanLookup {
    std::shared_ptr<const ReadyPlan> plan;
    bool cached = false;
  };

  // `requested`, or the configured default when empty.
  const std::string& SchedulerOrDefault(const std::string& requested) const {
    return requested.empty() ? config_.default_scheduler : requested;
  }
  // The key of `id`'s plan on this platform for the scheduler config.
  cache::PlanKey PlanKeyOf(const std::string& id, const std::string& scheduler,
                           const std::map<std::string, std::string>& options) const;
  // The validated plan kept in memory under `key`, or null.
  std::shared_ptr<const ReadyPlan> FindReady(const cache::PlanKey& key) const;
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
                                        const std::map<std::string, std::string>& options,
                                        bool refresh, const CallContext& context,
                                        const ProgressFn& progress);
  // Sets plan.memory (Backend::MemoryOf) for model `id`.
  absl::Status MeasureMemory(const std::string& id, PlanOutput& plan);
  // RESOURCE_EXHAUSTED naming the peak, its parts, the largest tensors and the key when the
  // plan's peak memory is over config_.max_plan_memory_bytes.
  absl::Status WithinMemoryBudget(const ReadyPlan& plan) const;
  // Keeps `plan` in memory (bounded by kMaxReadyPlans) and returns the shared handle.
  std::shared_ptr<const ReadyPlan> KeepReady(ReadyPlan plan);
  // Drops the in-memory plans of `model_id` ("" = every model) and what feedback measured
  // of them.
  void ForgetReadyPlans(const std::string& model_id);
  // PlanFeedback's Replanner: corrects the latency model by `measured` and plans `served`'s
  // request again with it, keeping the new plan in the store under its own key.
  absl::StatusOr<PlanFeedback::Candidate> Replan(const ReadyPlan& served,
                                                 const LatencyCorrection* correction,
                                                 const std::vector<MeasuredSubtask>& measured,
                                                 const CancelledFn& cancelled);

  // The imported model for a full id, importing it from the stored bytes on first use.
  absl::StatusOr<std::shared_ptr<const LoadedModel>> Loaded(const std::string& id);
  absl::StatusOr<std::string> Resolve(const std::string& id_or_prefix);
  // RESOURCE_EXHAUSTED naming the quota a registration of `size_bytes` would pass and the
  // owner's `usage`.
  absl::Status OverQuota(const RegisterOptions& options, const cache::OwnerUsage& usage,
                         int64_t size_bytes) const;
  // The stored model with its bytes when they are complete and, with its input shapes, hash
  // to its id; otherwise quarantines the model (logged once) and returns DATA_LOSS naming it.
  absl::StatusOr<cache::ModelRecord> ReadIntactModel(const std::string& id);
  ModelInfo Describe(const cache::ModelRecord& record, const LoadedModel* loaded) const;
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> ComputePlan(
      const std::string& id, const cache::PlanKey& key, const std::string& scheduler,
      const std::map<std::string, std::string>& options, const CallContext& context,
      const ProgressFn& progress);

  // The cores this process may run on that no device of `platform` is pinned to.
  static std::vector<int> FreeCores(const PlatformInfo& platform);
  // Puts the calling planner thread at idle priority (SCHED_IDLE) and onto planning_cores_,
  // when there are any: planning then takes no time inference wants, even during a flood.
  void BecomeBackgroundPlanner() const;

  const DaemonConfig config_;
  std::unique_ptr<cache::Store> store_;
  std::unique_ptr<Backend> backend_;
  const std::vector<int> planning_cores_;  // FreeCores(backend_->platform())
  InferenceQueue queue_;
  const absl::Time started_ = absl::Now();

  // Compiles `plan` of model `id` ahead and runs it once (Backend::Warm), as a job of the
  // inference queue, the first time GetPlan hands it out; its first Infer then runs warm.
  void WarmOnce(const std::string& id, std::shared_ptr<const ReadyPlan> plan);
  // At start, in the background: WarmOnce for the most used cached plan of each of the
  // kWarmAtStart most recently used models, so they answer warm after a restart.
  void WarmRecentPlans();
  static constexpr size_t kWarmAtStart = 4;
  std::thread warm_at_start_;  // joined by Shutdown
  sync::Mutex warm_join_mu_;
  // Reads the calibration stored for the platform, if any, and starts or rules out the
  // first-start calibration.
  void InstallStoredCalibration();
  sync::Mutex warm_mu_;
  std::set<std::string> warmed_ ABSL_GUARDED_BY(warm_mu_);  // "<model id>|<plan id>"
  std::atomic<int64_t> warmups_{0};  // queue jobs that were warm-ups, not inferences

  // Set once in the constructor, started there (a model is stored) or by RegisterModel.
  void StartFirstStartCalibration(const std::string& off_reason);
  std::unique_ptr<FirstStartCalibration> first_start_calibration_;

  // Checks a cached plan against its model and platform once per (key, plan bytes); with
  // `calibration`, its durations against that calibration's model (Backend::CheckPlan).
  absl::Status CheckCachedPlan(const std::string& id, const cache::PlanKey& key,
                               const std::string& schedule_json, const nlohmann::json& schedule,
                               const nlohmann::json* calibration = nullptr);

  // Keeps `model` loaded as `id`, unloading the least recently used beyond the bounds
  // (UnloadBeyondBounds); returns the handle every caller shares (the first one kept when two
  // threads loaded it at once).
  std::shared_ptr<const LoadedModel> KeepLoaded(const std::string& id,
                                                std::shared_ptr<const LoadedModel> model)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(models_mu_);
  // Unloads the least recently used models but `keep` while more than
  // config_.max_loaded_models are loaded or they hold more than config_.max_loaded_bytes
  // (Backend::ResidentBytes: graphs, weights, compiled plans); returns how many. `keep`
  // alone may exceed the bytes: the request using it is served.
  int UnloadBeyondBounds(const std::string& keep) ABSL_EXCLUSIVE_LOCKS_REQUIRED(models_mu_);

  struct LoadedEntry {
    std::shared_ptr<const LoadedModel> model;
    uint64_t last_used = 0;
  };
  sync::Mutex models_mu_;
  // Imported models with their compiled plans, within max_loaded_models and max_loaded_bytes
  // (UnloadBeyondBounds); unloading
  // one frees it once the requests using it are done (they hold their own reference).
  std::map<std::string, LoadedEntry> loaded_ ABSL_GUARDED_BY(models_mu_);
  uint64_t use_clock_ ABSL_GUARDED_BY(models_mu_) = 0;
  // Models whose stored bytes no longer hash to their id: never served, logged once, until
  // the original is added again (RegisterModel repairs the row) or the model is removed.
  std::set<std::string> quarantined_ ABSL_GUARDED_BY(models_mu_);
  // Cached plans that passed Backend::CheckPlan: "<plan key>|<hash of the plan JSON>". A
  // memo only: a removed model's entries go with it, and past kMaxCheckedPlans it starts over.
  std::set<std::string> checked_plans_ ABSL_GUARDED_BY(models_mu_);
  // ImportPlans' step for the bundle's calibration: ImportResult::calibration, or an error
  // when it cannot be used here (nothing is stored then).
  // `params` is calibration.params_json, parsed.
  absl::StatusOr<std::string> AdoptBundleCalibration(const cache::CalibrationRecord& calibration,
                                                     const nlohmann::json& params);
  static constexpr size_t kMaxCheckedPlans = 4096;

  mutable sync::Mutex plans_mu_;
  // By PlanKey::Joined(); a model's plans sort together. Past kMaxReadyPlans it starts over
  // (the store still holds every plan).
  std::map<std::string, std::shared_ptr<const ReadyPlan>> ready_plans_ ABSL_GUARDED_BY(plans_mu_);
  static constexpr size_t kMaxReadyPlans = 256;

  UsageRecorder usage_{store_.get(), absl::Seconds(1)};

  // Waits for one of config_.max_concurrent_plans planning slots (0: unbounded), polling
  // `abandoned`; false, with no slot taken, once it says every requester has gone.
  bool TakePlanningSlot(const CancelledFn& abandoned) ABSL_LOCKS_EXCLUDED(flights_mu_);
  void ReturnPlanningSlot() ABSL_LOCKS_EXCLUDED(flights_mu_);
  bool PlanningSlotFree() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(flights_mu_);

  sync::Mutex flights_mu_;
  std::map<std::string, std::shared_ptr<Flight>> flights_ ABSL_GUARDED_BY(flights_mu_);
  int planners_ ABSL_GUARDED_BY(flights_mu_) = 0;  // planning threads still running
  int planning_ ABSL_GUARDED_BY(flights_mu_) = 0;          // of them, holding a slot
  int planning_waiting_ ABSL_GUARDED_BY(flights_mu_) = 0;  // of them, waiting for one

  // Last: destroyed (its worker stopped) before everything its callbacks use.
  PlanFeedback feedback_;
};

}  // namespace psched::daemon
