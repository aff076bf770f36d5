#include "daemon/engine/engine.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "daemon/engine/budgets.h"
#include "daemon/engine/plan_bundle.h"
#include "daemon/engine/status_context.h"
#include "model/model_hash.h"
#include "spdlog/spdlog.h"

namespace psched::daemon {
namespace {

std::string DimsString(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

nlohmann::json SpecsJson(const std::vector<TensorSpec>& specs) {
  nlohmann::json out = nlohmann::json::array();
  for (const TensorSpec& spec : specs) out.push_back({{"name", spec.name}, {"dims", spec.dims}});
  return out;
}

// REQUIRES: ValidSpecs(json).
std::vector<TensorSpec> SpecsFromJson(const nlohmann::json& json) {
  std::vector<TensorSpec> specs;
  for (const nlohmann::json& entry : json) {
    specs.push_back({entry["name"].get<std::string>(), entry["dims"].get<std::vector<int64_t>>()});
  }
  return specs;
}

bool ValidSpecs(const nlohmann::json& json) {
  if (!json.is_array()) return false;
  for (const nlohmann::json& entry : json) {
    if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
        !entry.contains("dims") || !entry["dims"].is_array()) {
      return false;
    }
    for (const nlohmann::json& d : entry["dims"]) {
      if (!d.is_number_integer()) return false;
    }
  }
  return true;
}

// A stored summary is read, not trusted: fields of the wrong type (edited or damaged rows)
// are left out and logged, so no reader downstream meets a type it does not expect.
nlohmann::json CheckedSummary(const std::string& text, const std::string& id) {
  nlohmann::json summary = nlohmann::json::parse(text, nullptr, false);
  std::vector<std::string> dropped;
  if (!summary.is_object()) {
    summary = nlohmann::json::object();
    dropped.push_back("all of it (not a JSON object)");
  }
  auto drop_unless = [&](const char* key, bool valid) {
    if (summary.contains(key) && !valid) {
      summary.erase(key);
      dropped.push_back(key);
    }
  };
  for (const char* key : {"ops", "flops", "params"}) {
    drop_unless(key, summary.contains(key) && summary[key].is_number());
  }
  drop_unless("has_weights",
              summary.contains("has_weights") && summary["has_weights"].is_boolean());
  drop_unless("op_counts", summary.contains("op_counts") && summary["op_counts"].is_object());
  for (const char* key : {"inputs", "outputs"}) {
    drop_unless(key, summary.contains(key) && ValidSpecs(summary[key]));
  }
  if (!dropped.empty()) {
    spdlog::warn("model {}: stored summary is damaged, left out: {}", id,
                 absl::StrJoin(dropped, ", "));
  }
  return summary;
}

// Hands memory freed in bulk (a removed model's graph, weights and compiled plans) back to
// the system: glibc keeps freed chunks in its arenas otherwise, and RSS would only grow.
void ReleaseFreedMemory() { malloc_trim(0); }

}  // namespace

int64_t TensorSpec::Elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Engine::Engine(const DaemonConfig& config, std::unique_ptr<cache::Store> store,
               std::unique_ptr<Backend> backend)
    : config_(config),
      store_(std::move(store)),
      backend_(std::move(backend)),
      queue_(config.queue_capacity),
      feedback_(
          FeedbackOptions{.window = config.feedback_window},
          [this](const ReadyPlan& served, const LatencyCorrection* correction,
                 const std::vector<MeasuredSubtask>& measured, const CancelledFn& cancelled) {
            return Replan(served, correction, measured, cancelled);
          },
          [this](const std::shared_ptr<const ReadyPlan>& plan) { plans_.Replace(plan); }) {
  InstallStoredCalibration();
  warm_at_start_ = std::thread([this] { WarmRecentPlans(); });
}

void Engine::InstallStoredCalibration() {
  const std::string key = backend_->platform().calibration_key;
  absl::StatusOr<std::optional<cache::CalibrationRecord>> stored =
      key.empty() ? std::optional<cache::CalibrationRecord>() : store_->LookupCalibration(key);
  if (!stored.ok()) {
    spdlog::warn("stored calibration not read: {}", std::string(stored.status().message()));
  }
  StartFirstStartCalibration(key.empty()             ? "the platform is simulated"
                             : !config_.auto_calibrate ? "auto_calibrate = false"
                             : !stored.ok()           ? "the stored calibration could not be read"
                             : stored->has_value()    ? "calibrated before"
                                                      : "");
  if (!stored.ok() || !stored->has_value()) return;
  nlohmann::json params = nlohmann::json::parse((*stored)->params_json, nullptr, false);
  absl::Status used = params.is_discarded()
                          ? absl::DataLossError("stored parameters are not valid JSON")
                          : backend_->UseCalibration(params);
  if (used.ok()) {
    spdlog::info("planning with the stored calibration {}", backend_->platform().predictor_version);
  } else {
    spdlog::warn("stored calibration not used: {}", std::string(used.message()));
  }
}

absl::StatusOr<CalibrationOutput> Engine::Calibrate(double budget_s,
                                                    const CalibrationProgressFn& progress,
                                                    const CallContext& context) {
  if (!(budget_s > 0) || budget_s > kMaxCalibrationBudgetS) {
    return absl::InvalidArgumentError(absl::StrCat("budget_s must be in (0, ",
                                                   kMaxCalibrationBudgetS,
                                                   "] seconds per device, not ", budget_s));
  }
  absl::StatusOr<std::vector<cache::ModelRecord>> records = store_->ListModels();
  if (!records.ok()) return records.status();
  std::vector<std::shared_ptr<const LoadedModel>> models;
  for (const cache::ModelRecord& record : *records) {
    absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(record.id);
    if (!loaded.ok()) return loaded.status();
    models.push_back(*loaded);
  }
  if (models.empty()) {
    return absl::FailedPreconditionError(
        "no model is registered; calibration times the ops of the registered models");
  }
  // Through the inference queue: calibration needs the devices to itself.
  struct Shared {
    absl::StatusOr<CalibrationOutput> output = absl::UnknownError("not run");
  };
  auto shared = std::make_shared<Shared>();
  auto work = [this, shared, models, budget_s, progress] {
    shared->output = backend_->Calibrate(models, budget_s, progress);
  };
  absl::StatusOr<std::shared_ptr<InferenceQueue::Job>> job =
      queue_.Submit(std::move(work), context.deadline);
  if (!job.ok()) return job.status();
  (*job)->WaitUntil(absl::InfiniteFuture());
  if (absl::Status outcome = (*job)->outcome(); !outcome.ok()) return outcome;
  if (!shared->output.ok()) return WithContext(shared->output.status(), "calibration failed");

  CalibrationOutput& output = *shared->output;
  const std::string key = backend_->platform().calibration_key;
  if (absl::Status used = backend_->UseCalibration(output.params); !used.ok()) {
    return WithContext(used, "the fitted model was not usable");
  }
  cache::CalibrationRecord record{key, output.predictor_version, output.params.dump(),
                                  output.report.dump(), 0};
  if (absl::Status stored = store_->PutCalibration(record); !stored.ok()) {
    spdlog::warn("calibration in use but not stored: {}", std::string(stored.message()));
  }
  ForgetReadyPlans("");  // planned with the previous predictor: no longer asked for
  spdlog::info("calibrated: {} samples, planning with {}", output.samples,
               output.predictor_version);
  return std::move(output);
}

Engine::~Engine() {
  Shutdown();
  // Planner threads call back into the Engine (ComputePlan's Planner) until they end.
  plans_.WaitForPlanners();
}

void Engine::StopWarmingAtStart() {
  stop_warm_at_start_ = true;
  sync::MutexLock lock(&warm_join_mu_);
  if (warm_at_start_.joinable()) warm_at_start_.join();
}

void Engine::Shutdown() {
  feedback_.Stop();
  StopWarmingAtStart();
  queue_.Drain();
  first_start_calibration_->Join();
}

void Engine::StartFirstStartCalibration(const std::string& off_reason) {
  const double budget_s = config_.auto_calibrate_budget_ms / 1000.0;
  first_start_calibration_ = std::make_unique<FirstStartCalibration>(
      off_reason, [this, budget_s](const CalibrationProgressFn& progress)
                      -> absl::StatusOr<std::string> {
        absl::StatusOr<CalibrationOutput> output = Calibrate(budget_s, progress, CallContext{});
        if (!output.ok()) return output.status();
        return output->predictor_version;
      });
  if (!off_reason.empty()) return;
  absl::StatusOr<cache::CacheStats> stats = store_->Stats();
  if (stats.ok() && stats->models > 0) first_start_calibration_->Start();
}

std::string Engine::SchedulerConfigKey(const std::string& scheduler,
                                       const std::map<std::string, std::string>& options) {
  std::string key = scheduler;
  for (const auto& [name, value] : options) absl::StrAppend(&key, ";", name, "=", value);
  return key;
}

Engine::SchedulerRequest Engine::ParseSchedulerConfig(const std::string& config) {
  const std::vector<std::string> parts = absl::StrSplit(config, ';');
  SchedulerRequest request{parts[0], {}};
  for (size_t i = 1; i < parts.size(); ++i) {
    const std::vector<std::string> kv = absl::StrSplit(parts[i], absl::MaxSplits('=', 1));
    if (kv.size() == 2) request.options[kv[0]] = kv[1];
  }
  return request;
}

Engine::SchedulerRequest Engine::Resolve(const std::string& requested,
                                         const std::map<std::string, std::string>& options) const {
  if (!requested.empty()) return {requested, options};
  SchedulerRequest request = default_scheduler_;
  for (const auto& [name, value] : options) request.options[name] = value;
  return request;
}

ModelInfo Engine::Describe(const cache::ModelRecord& record, const LoadedModel* loaded) const {
  ModelInfo info;
  info.id = record.id;
  info.name = record.name;
  info.size_bytes = record.size_bytes;
  info.registered_unix_s = record.created_unix_s;
  info.summary = CheckedSummary(record.summary_json, record.id);
  if (info.summary.contains("inputs")) info.inputs = SpecsFromJson(info.summary["inputs"]);
  if (info.summary.contains("outputs")) info.outputs = SpecsFromJson(info.summary["outputs"]);
  info.has_weights = info.summary.value("has_weights", false);
  // Checked against the id (ModelCatalog::ReadIntact) before the model is served; a listing shows
  // what it can read.
  if (absl::StatusOr<model::InputShapes> shapes = model::ParseInputShapesKey(record.input_shapes);
      shapes.ok()) {
    info.input_shapes = *std::move(shapes);
  }
  if (loaded != nullptr) {
    info.inputs = loaded->inputs;
    info.outputs = loaded->outputs;
    info.has_weights = loaded->has_weights;
  }
  return info;
}

absl::StatusOr<std::pair<ModelInfo, bool>> Engine::RegisterModel(std::string onnx,
                                                                 const std::string& name,
                                                                 const RegisterOptions& options) {
  const bool synthesize_weights = options.synthesize_weights;
  if (static_cast<int64_t>(onnx.size()) > config_.max_model_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "model is ", onnx.size(), " bytes; this daemon accepts at most ", config_.max_model_bytes));
  }
  if (onnx.empty()) return absl::InvalidArgumentError("model upload is empty");
  const std::string input_shapes = model::InputShapesKey(options.input_shapes);
  std::string id = model::ModelId(onnx, input_shapes);
  if (absl::StatusOr<cache::ModelRecord> existing = store_->GetModelInfo(id); existing.ok()) {
    if (synthesize_weights && !existing->synthesize_weights) {
      return absl::FailedPreconditionError(absl::StrCat(
          "model ", id,
          " is already registered without synthetic weights; remove it first to register it "
          "with them"));
    }
    bool intact = false;
    {
      absl::StatusOr<cache::ModelRecord> stored = store_->GetModel(id);
      if (!stored.ok() && stored.status().code() != absl::StatusCode::kDataLoss) {
        return stored.status();
      }
      intact = stored.ok() && model::ModelId(stored->onnx, stored->input_shapes) == id;
    }
    if (!intact) {
      // The caller holds the original bytes: they repair the damaged stored copy.
      if (absl::Status repaired = store_->RepairModelBytes(id, onnx); !repaired.ok()) {
        return repaired;
      }
      catalog_.Unquarantine(id);
      spdlog::warn(
          "model {}: damaged stored bytes replaced by the re-added original; "
          "released from quarantine",
          id);
    }
    absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(id);
    return std::make_pair(Describe(*existing, loaded.ok() ? loaded->get() : nullptr), true);
  }
  LoadOptions load;
  load.synthesize_weights = synthesize_weights;
  load.input_shapes = options.input_shapes;
  load.refuse_external_data = !options.graph_only && !synthesize_weights;
  absl::StatusOr<LoadedModel> loaded = backend_->Load(onnx, name, load);
  if (!loaded.ok()) return WithContext(loaded.status(), "cannot import model");

  cache::ModelRecord record;
  record.id = id;
  record.name = !name.empty() ? name : loaded->summary.value("name", std::string("model"));
  if (record.name.empty()) record.name = "model";
  nlohmann::json summary = loaded->summary;
  summary["has_weights"] = loaded->has_weights;
  summary["inputs"] = SpecsJson(loaded->inputs);
  summary["outputs"] = SpecsJson(loaded->outputs);
  record.summary_json = summary.dump();
  record.synthesize_weights = synthesize_weights;
  record.input_shapes = input_shapes;
  record.size_bytes = static_cast<int64_t>(onnx.size());
  record.onnx = std::move(onnx);
  record.owner = options.owner;
  const bool counted = !options.quota_exempt && !options.owner.empty();
  const cache::ModelQuota quota{config_.max_models_per_user,
                                config_.max_model_bytes_per_user > 0
                                    ? config_.max_model_bytes_per_user
                                    : std::numeric_limits<int64_t>::max()};
  absl::StatusOr<cache::PutModelResult> put =
      store_->PutModelWithin(record, counted ? &quota : nullptr);
  if (!put.ok()) return put.status();
  if (put->over_quota) return OverQuota(options, put->usage, record.size_bytes);
  const bool inserted = put->inserted;
  std::shared_ptr<const LoadedModel> shared =
      catalog_.Keep(id, std::make_shared<const LoadedModel>(std::move(*loaded)));
  absl::StatusOr<cache::ModelRecord> stored = store_->GetModelInfo(id);
  if (!stored.ok()) return stored.status();
  spdlog::info("registered model {} ({}, {} bytes)", id, record.name, record.size_bytes);
  first_start_calibration_->Start();  // something to time now
  return std::make_pair(Describe(*stored, shared.get()), !inserted);
}

absl::Status Engine::OverQuota(const RegisterOptions& options, const cache::OwnerUsage& usage,
                               int64_t size_bytes) const {
  const std::string has =
      absl::StrCat(options.owner_description, " has registered ", usage.models, " model",
                   usage.models == 1 ? "" : "s", " of ", FormatBytes(usage.bytes), " (",
                   usage.bytes, " bytes)");
  const std::string remedy =
      "; nothing else was removed. An admin may remove one of them (pschedctl model rm) or "
      "register the model";
  if (usage.models + 1 > config_.max_models_per_user) {
    return absl::ResourceExhaustedError(
        absl::StrCat("model not registered: over max_models_per_user = ",
                     config_.max_models_per_user, ": ", has, remedy));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "model not registered: over max_model_bytes_per_user = ", config_.max_model_bytes_per_user,
      " (", FormatBytes(config_.max_model_bytes_per_user), "): ", has, " and this one is ",
      size_bytes, " bytes", remedy));
}

int64_t Engine::LoadedBytes() { return catalog_.LoadedBytes(); }

absl::StatusOr<std::vector<ModelInfo>> Engine::ListModels() {
  absl::StatusOr<std::vector<cache::ModelRecord>> records = store_->ListModels();
  if (!records.ok()) return records.status();
  std::vector<ModelInfo> models;
  for (const cache::ModelRecord& record : *records) models.push_back(Describe(record, nullptr));
  return models;
}

absl::StatusOr<ModelInfo> Engine::GetModel(const std::string& id_or_prefix) {
  absl::StatusOr<std::string> id = catalog_.Resolve(id_or_prefix);
  if (!id.ok()) return id.status();
  absl::StatusOr<cache::ModelRecord> record = store_->GetModelInfo(*id);
  if (!record.ok()) return record.status();
  return Describe(*record, nullptr);
}

absl::StatusOr<std::pair<std::string, int64_t>> Engine::RemoveModel(
    const std::string& id_or_prefix) {
  absl::StatusOr<std::string> id = catalog_.Resolve(id_or_prefix);
  if (!id.ok()) return id.status();
  absl::StatusOr<int64_t> plans = store_->RemoveModel(*id);
  if (!plans.ok()) return plans.status();
  catalog_.Forget(*id);
  plans_.ForgetChecked(*id);
  ForgetReadyPlans(*id);
  ReleaseFreedMemory();
  spdlog::info("removed model {} and {} cached plan(s)", *id, *plans);
  return std::make_pair(*id, *plans);
}

absl::StatusOr<PlanResult> Engine::GetPlan(const std::string& id_or_prefix,
                                           const std::string& requested_scheduler,
                                           const std::map<std::string, std::string>& options,
                                           bool refresh, const CallContext& context,
                                           const ProgressFn& progress) {
  absl::StatusOr<std::string> id = catalog_.Resolve(id_or_prefix);
  if (!id.ok()) return id.status();
  absl::StatusOr<PlanLookup> found =
      PlanFor(*id, requested_scheduler, options, refresh, context, progress);
  if (!found.ok()) return found.status();
  const ReadyPlan& plan = *found->plan;
  PlanResult result;
  result.model_id = plan.key.model_id;
  result.scheduler = plan.output.scheduler;
  result.makespan_us = plan.output.makespan_us;
  result.cached = found->cached;
  result.imported = plan.imported;
  result.planning_ms = plan.planning_ms;
  result.platform_fingerprint = plan.key.platform_fingerprint;
  result.predictor_version = plan.key.predictor_version;
  result.ready = found->plan;
  result.measured = feedback_.Measured(plan);
  WarmOnce(*id, found->plan);
  return result;
}

void Engine::WarmRecentPlans() {
  if (!backend_->RunUsesPlan()) return;
  absl::StatusOr<std::vector<cache::ModelRecord>> models = store_->ListModels();
  if (!models.ok()) return;
  // The most recently used models first, those never used not at all.
  std::vector<std::pair<int64_t, std::string>> recent;
  for (const cache::ModelRecord& model : *models) {
    absl::StatusOr<cache::UsageRecord> usage = store_->GetUsage(model.id);
    if (usage.ok() && usage->inferences > 0) recent.emplace_back(usage->last_unix_s, model.id);
  }
  std::sort(recent.rbegin(), recent.rend());
  if (recent.size() > kWarmAtStart) recent.resize(kWarmAtStart);
  const PlatformInfo platform = backend_->platform();
  for (const auto& [last_used, id] : recent) {
    if (stop_warm_at_start_) return;
    // Its most used plan this daemon would serve.
    absl::StatusOr<std::vector<cache::PlanRecord>> plans = store_->ListPlans(id);
    if (!plans.ok()) continue;
    const cache::PlanRecord* best = nullptr;
    for (const cache::PlanRecord& plan : *plans) {
      if (plan.key.platform_fingerprint != platform.fingerprint ||
          plan.key.predictor_version != platform.predictor_version) {
        continue;
      }
      if (best == nullptr || plan.hits > best->hits) best = &plan;
    }
    if (best == nullptr) continue;
    // Only an intact plan: a damaged one is replanned when asked for, not at start.
    nlohmann::json schedule = nlohmann::json::parse(best->schedule_json, nullptr, false);
    if (schedule.is_discarded() ||
        !CheckCachedPlan(id, best->key, best->schedule_json, schedule).ok()) {
      continue;
    }
    const SchedulerRequest stored = ParseSchedulerConfig(best->key.scheduler_config);
    absl::StatusOr<PlanLookup> found = PlanFor(id, stored.scheduler, stored.options, false,
                                               CallContext{}, [](const PlanProgressEvent&) {});
    if (!found.ok()) {
      spdlog::debug("not warmed at start: {}: {}", id, std::string(found.status().message()));
      continue;
    }
    WarmOnce(id, found->plan);
  }
}

void Engine::WarmOnce(const std::string& id, std::shared_ptr<const ReadyPlan> plan) {
  if (!backend_->RunUsesPlan()) return;
  {
    sync::MutexLock lock(&warm_mu_);
    if (warmed_.size() >= PlanBook::kMaxReadyPlans) warmed_.clear();
    if (!warmed_.insert(absl::StrCat(id, "|", plan->output.id)).second) return;
  }
  absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(id);
  if (!loaded.ok()) return;
  auto work = [this, model = *loaded, plan] {
    if (absl::Status warmed = backend_->Warm(*model, plan->output); !warmed.ok()) {
      spdlog::warn("the {} plan of {} was not compiled ahead: {}", plan->output.scheduler,
                   plan->key.model_id, std::string(warmed.message()));
    }
    warmups_.fetch_add(1);
  };
  // A full queue has work enough: the plan then compiles on its first Infer.
  queue_.Submit(std::move(work), absl::InfiniteFuture()).IgnoreError();
}

cache::PlanKey Engine::PlanKeyOf(const std::string& id, const std::string& scheduler,
                                 const std::map<std::string, std::string>& options) const {
  const PlatformInfo platform = backend_->platform();
  return {id, platform.fingerprint, platform.predictor_version,
          SchedulerConfigKey(scheduler, options)};
}

bool Engine::PlanReady(const std::string& model_id, const std::string& scheduler,
                       const std::map<std::string, std::string>& options) const {
  const SchedulerRequest request = Resolve(scheduler, options);
  return plans_.Find(PlanKeyOf(model_id, request.scheduler, request.options)) != nullptr;
}

bool Engine::InferAnswersAtOnce(const std::string& model_id, const std::string& scheduler) const {
  if (!backend_->RunUsesPlan()) return false;
  const SchedulerRequest request = Resolve(scheduler, {});
  std::shared_ptr<const ReadyPlan> plan =
      plans_.Find(PlanKeyOf(model_id, request.scheduler, request.options));
  if (plan == nullptr) return false;
  const int64_t depth = queue_.Progress().depth;
  // Refused at once, and decided here: handed to a spare thread, a call could wait for one
  // behind other inferences instead of being refused (there are as many as the queue holds).
  if (depth >= queue_.capacity()) return true;
  if (depth != 0) return false;
  const std::optional<double> measured_us = feedback_.MedianMakespanUs(*plan);
  return measured_us.has_value() && *measured_us <= config_.brief_infer_us;
}

absl::StatusOr<Engine::PlanLookup> Engine::PlanFor(
    const std::string& id, const std::string& requested_scheduler,
    const std::map<std::string, std::string>& options, bool refresh, const CallContext& context,
    const ProgressFn& progress) {
  absl::StatusOr<PlanLookup> found =
      FindOrPlan(id, requested_scheduler, options, refresh, context, progress);
  if (!found.ok()) return found.status();
  if (absl::Status fits = WithinMemoryBudget(*found->plan); !fits.ok()) return fits;
  return found;
}

absl::Status Engine::MeasureMemory(const std::string& id, PlanOutput& plan) {
  absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(id);
  if (!loaded.ok()) return loaded.status();
  absl::StatusOr<PlanMemory> memory = backend_->MemoryOf(**loaded, &plan);
  if (!memory.ok()) return memory.status();
  plan.memory = *std::move(memory);
  return absl::OkStatus();
}

absl::Status Engine::WithinMemoryBudget(const ReadyPlan& plan) const {
  const PlanMemory& memory = plan.output.memory;
  if (config_.max_plan_memory_bytes <= 0 || memory.peak_bytes() <= config_.max_plan_memory_bytes) {
    return absl::OkStatus();
  }
  std::vector<std::string> largest;
  for (const TensorBytes& tensor : memory.largest_tensors) {
    largest.push_back(absl::StrCat("'", tensor.name, "' ", FormatBytes(tensor.bytes)));
  }
  return absl::ResourceExhaustedError(absl::StrCat(
      "the ", plan.key.scheduler_config, " plan of model ", plan.key.model_id, " needs ",
      FormatBytes(memory.peak_bytes()), " (", memory.peak_bytes(), " bytes) at its peak: ",
      FormatBytes(memory.activation_bytes), " of activations, ", FormatBytes(memory.weight_bytes),
      " of weights, ", FormatBytes(memory.io_bytes), " of inputs and outputs; largest tensors ",
      absl::StrJoin(largest, ", "), ". That is over max_plan_memory_bytes = ",
      config_.max_plan_memory_bytes, " (", FormatBytes(config_.max_plan_memory_bytes),
      "); nothing was allocated for it"));
}

absl::StatusOr<Engine::PlanLookup> Engine::FindOrPlan(
    const std::string& id, const std::string& requested_scheduler,
    const std::map<std::string, std::string>& requested_options, bool refresh,
    const CallContext& context, const ProgressFn& progress) {
  const SchedulerRequest resolved = Resolve(requested_scheduler, requested_options);
  const std::string& scheduler = resolved.scheduler;
  const std::map<std::string, std::string>& options = resolved.options;
  const cache::PlanKey key = PlanKeyOf(id, scheduler, options);
  if (!refresh) {
    if (std::shared_ptr<const ReadyPlan> ready = plans_.Find(key); ready != nullptr) {
      usage_.PlanHit(key);
      return PlanLookup{std::move(ready), true};
    }
  }
  if (absl::Status status = backend_->CheckScheduler(scheduler, options); !status.ok()) {
    return status;
  }
  if (!refresh) {
    absl::StatusOr<std::optional<cache::PlanRecord>> cached = store_->LookupPlan(key);
    if (!cached.ok()) return cached.status();
    if (cached->has_value()) {
      const cache::PlanRecord& record = **cached;
      nlohmann::json schedule = nlohmann::json::parse(record.schedule_json, nullptr, false);
      absl::Status usable = schedule.is_discarded()
                                ? absl::DataLossError("the stored plan is not valid JSON")
                                : CheckCachedPlan(id, key, record.schedule_json, schedule);
      if (usable.ok()) {
        PlanOutput output{record.scheduler, record.makespan_us, std::move(schedule),
                          model::ModelHash(record.schedule_json), {}};
        if (absl::Status sized = MeasureMemory(id, output); !sized.ok()) return sized;
        const bool imported = record.imported;
        if (imported) {
          spdlog::info("serving the imported {} plan for {} (makespan {:.1f} us); no planning",
                       record.key.scheduler_config, id, record.makespan_us);
        }
        return PlanLookup{
            plans_.Keep(
                {key, std::move(output), record.planning_ms, "", scheduler, options, {}, imported}),
            true};
      }
      if (usable.code() != absl::StatusCode::kDataLoss) return usable;
      spdlog::warn("cached {} plan for {} dropped and recomputed: {}", scheduler, id,
                   std::string(usable.message()));
    }
  }
  absl::StatusOr<std::shared_ptr<const ReadyPlan>> computed =
      ComputePlan(id, key, scheduler, options, context, progress);
  if (!computed.ok()) return computed.status();
  return PlanLookup{*std::move(computed), false};
}

void Engine::ForgetReadyPlans(const std::string& model_id) {
  // Feedback first: a replan it finishes after this is discarded, never served.
  feedback_.Forget(model_id);
  plans_.Forget(model_id);
}

absl::Status Engine::CheckCachedPlan(const std::string& id, const cache::PlanKey& key,
                                     const std::string& schedule_json,
                                     const nlohmann::json& schedule,
                                     const nlohmann::json* calibration) {
  if (plans_.Checked(key, schedule_json)) return absl::OkStatus();
  absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(id);
  if (!loaded.ok()) return loaded.status();
  if (absl::Status valid = backend_->CheckPlan(**loaded, schedule, calibration); !valid.ok()) {
    return valid;
  }
  plans_.MarkChecked(key, schedule_json);
  return absl::OkStatus();
}

absl::StatusOr<std::pair<std::string, int>> Engine::ExportPlans(const std::string& id_or_prefix,
                                                                const std::string& scheduler) {
  absl::StatusOr<std::string> id = catalog_.Resolve(id_or_prefix);
  if (!id.ok()) return id.status();
  absl::StatusOr<std::vector<cache::PlanRecord>> plans = store_->ListPlans(*id);
  if (!plans.ok()) return plans.status();
  const PlatformInfo platform = backend_->platform();
  PlanBundle bundle{platform.name, platform.fingerprint, *id, {}, std::nullopt};
  for (cache::PlanRecord& record : *plans) {
    if (record.key.platform_fingerprint != platform.fingerprint) continue;
    const std::string& config = record.key.scheduler_config;
    if (!scheduler.empty() && config != scheduler && !config.starts_with(scheduler + ";")) {
      continue;
    }
    // A damaged row is not shipped to other boards.
    if (nlohmann::json::parse(record.schedule_json, nullptr, false).is_discarded()) {
      spdlog::warn("cached {} plan of {} not exported: not valid JSON", config, *id);
      continue;
    }
    record.hits = 0;
    record.created_unix_s = 0;
    bundle.plans.push_back(std::move(record));
  }
  // The calibration the plans were made with travels with them.
  const std::string key = platform.calibration_key;
  if (!key.empty()) {
    absl::StatusOr<std::optional<cache::CalibrationRecord>> calibration =
        store_->LookupCalibration(key);
    if (!calibration.ok()) return calibration.status();
    const bool used = calibration->has_value() &&
                      std::any_of(bundle.plans.begin(), bundle.plans.end(), [&](const auto& plan) {
                        return plan.key.predictor_version == (*calibration)->predictor_version;
                      });
    if (used && !nlohmann::json::parse((*calibration)->params_json, nullptr, false).is_discarded()) {
      bundle.calibration = **calibration;
      bundle.calibration->report_json.clear();
      bundle.calibration->created_unix_s = 0;
    }
  }
  if (bundle.plans.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no cached plan of model ", *id, scheduler.empty() ? "" : " with scheduler ",
                     scheduler, " for this platform (fingerprint ", platform.fingerprint,
                     "); plan it first (pschedctl plan show)"));
  }
  std::string text = FormatBundle(bundle);
  if (text.size() > kMaxBundleBytes) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "the bundle of model ", *id, "'s ", bundle.plans.size(), " plans would take ",
        text.size() >> 20, " MiB, over the ", kMaxBundleBytes >> 20,
        " MiB a bundle may have; export one scheduler's plans at a time (--scheduler)"));
  }
  return std::make_pair(std::move(text), static_cast<int>(bundle.plans.size()));
}

absl::StatusOr<ImportResult> Engine::ImportPlans(const std::string& text) {
  absl::StatusOr<PlanBundle> bundle = ParseBundle(text);
  if (!bundle.ok()) return bundle.status();
  const PlatformInfo platform = backend_->platform();
  if (bundle->platform_fingerprint != platform.fingerprint) {
    return absl::FailedPreconditionError(
        absl::StrCat("plan bundle is for platform fingerprint ", bundle->platform_fingerprint, " (",
                     bundle->platform_name, "); this daemon's platform has fingerprint ",
                     platform.fingerprint, " (", platform.name, "): it plans for itself"));
  }
  if (absl::StatusOr<cache::ModelRecord> model = store_->GetModelInfo(bundle->model_id);
      !model.ok()) {
    if (model.status().code() != absl::StatusCode::kNotFound) return model.status();
    return absl::NotFoundError(absl::StrCat("plan bundle is for model ", bundle->model_id,
                                            ", which is not registered here; register the model "
                                            "first (pschedctl model add)"));
  }
  // A model that cannot be loaded (quarantined) is the model's problem, not the bundle's.
  if (absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(bundle->model_id);
      !loaded.ok()) {
    return loaded.status();
  }
  // A plan made with the bundle's calibration is checked against it, not the model in use.
  std::optional<nlohmann::json> calibration;
  if (bundle->calibration.has_value()) {
    if (bundle->calibration->platform_key != platform.calibration_key) {
      return absl::FailedPreconditionError(
          absl::StrCat("plan bundle: calibration is for devices '",
                       bundle->calibration->platform_key, "', this daemon's are '",
                       platform.calibration_key, "'"));
    }
    calibration = nlohmann::json::parse(bundle->calibration->params_json);
  }
  // All or none: every plan is checked before any is stored.
  for (size_t i = 0; i < bundle->plans.size(); ++i) {
    const cache::PlanRecord& record = bundle->plans[i];
    nlohmann::json schedule = nlohmann::json::parse(record.schedule_json);
    const bool calibrated = calibration.has_value() &&
                            record.key.predictor_version == bundle->calibration->predictor_version &&
                            record.key.predictor_version != platform.predictor_version;
    absl::Status valid = CheckCachedPlan(bundle->model_id, record.key, record.schedule_json,
                                         schedule, calibrated ? &*calibration : nullptr);
    if (!valid.ok()) {
      return absl::InvalidArgumentError(
          absl::StrCat("plan bundle: plans[", i, "] (", record.key.scheduler_config,
                       ") does not fit model ", bundle->model_id, ": ", valid.message()));
    }
  }
  ImportResult result;
  result.model_id = bundle->model_id;
  if (bundle->calibration.has_value()) {
    absl::StatusOr<std::string> adopted =
        AdoptBundleCalibration(*bundle->calibration, *calibration);
    if (!adopted.ok()) return adopted.status();
    result.calibration = *adopted;
  }
  const std::string predictor_version = backend_->platform().predictor_version;
  for (cache::PlanRecord& record : bundle->plans) {
    record.imported = true;
    if (absl::Status stored = store_->PutPlan(record); !stored.ok()) return stored;
    result.plans.push_back({record.key.scheduler_config, record.key.predictor_version,
                            record.key.predictor_version == predictor_version});
    spdlog::info("imported the {} plan for {} (predictor {}{})", record.key.scheduler_config,
                 result.model_id, record.key.predictor_version,
                 result.plans.back().served ? "" : ", not the one this daemon plans with");
  }
  // Served from the store from now on, in place of any plan kept in memory.
  ForgetReadyPlans(result.model_id);
  return result;
}

absl::StatusOr<std::string> Engine::AdoptBundleCalibration(
    const cache::CalibrationRecord& calibration, const nlohmann::json& params) {
  const PlatformInfo platform = backend_->platform();
  if (calibration.predictor_version == platform.predictor_version) return "already in use";
  absl::StatusOr<std::optional<cache::CalibrationRecord>> own =
      store_->LookupCalibration(platform.calibration_key);
  if (!own.ok()) return own.status();
  if (own->has_value()) {
    // Measured on this very board: better than any other board's, however alike.
    spdlog::info("kept this board's calibration {}; the bundle's {} was not adopted",
                 platform.predictor_version, calibration.predictor_version);
    return absl::StrCat("not adopted: this board has its own calibration (",
                        platform.predictor_version, ")");
  }
  absl::Status usable = backend_->UseCalibration(params);
  if (!usable.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("plan bundle: calibration: not usable here: ", usable.message()));
  }
  cache::CalibrationRecord record = calibration;
  record.report_json = "{}";
  if (absl::Status stored = store_->PutCalibration(record); !stored.ok()) {
    spdlog::warn("the bundle's calibration is in use but not stored: {}",
                 std::string(stored.message()));
  }
  ForgetReadyPlans("");  // planned with the previous predictor: no longer asked for
  spdlog::info("adopted the bundle's calibration: planning with {}",
               backend_->platform().predictor_version);
  return "adopted";
}

absl::StatusOr<PlanFeedback::Candidate> Engine::Replan(const ReadyPlan& served,
                                                       const LatencyCorrection* correction,
                                                       const std::vector<MeasuredSubtask>& measured,
                                                       const CancelledFn& cancelled) {
  absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(served.key.model_id);
  if (!loaded.ok()) return loaded.status();
  const std::string version = backend_->platform().predictor_version;
  if (correction == nullptr && served.key.predictor_version != version) {
    return absl::FailedPreconditionError("the plan was made with a latency model no longer used");
  }
  absl::StatusOr<std::shared_ptr<const LatencyCorrection>> corrected =
      backend_->Correct(**loaded, correction, measured);
  if (!corrected.ok()) return corrected.status();
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<PlanOutput> plan = backend_->PlanCorrected(**loaded, served.requested_scheduler,
                                                            served.options, **corrected, cancelled);
  if (!plan.ok()) return plan.status();
  const double planning_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  if (backend_->platform().predictor_version != version) {
    return absl::FailedPreconditionError("the latency model was recalibrated while replanning");
  }
  cache::PlanRecord record;
  record.key = served.key;
  record.key.predictor_version = (*corrected)->predictor_version();
  record.scheduler = plan->scheduler;
  record.schedule_json = plan->schedule.dump();
  record.makespan_us = plan->makespan_us;
  record.planning_ms = planning_ms;
  if (absl::Status stored = store_->PutPlan(record); !stored.ok()) {
    spdlog::warn("replanned plan for {} not cached: {}", record.key.model_id,
                 std::string(stored.message()));
  }
  plan->id = model::ModelHash(record.schedule_json);
  if (absl::Status sized = MeasureMemory(served.key.model_id, *plan); !sized.ok()) return sized;
  spdlog::info("replanned {} with measured latencies ({}): makespan {:.1f} us, was {:.1f} us",
               record.key.model_id, record.key.predictor_version, plan->makespan_us,
               served.output.makespan_us);
  std::shared_ptr<const ReadyPlan> ready = MakeReady({record.key,
                                                      *std::move(plan),
                                                      planning_ms,
                                                      served.slot,
                                                      served.requested_scheduler,
                                                      served.options,
                                                      {},
                                                      false});
  return PlanFeedback::Candidate{std::move(ready), *std::move(corrected)};
}

absl::StatusOr<std::shared_ptr<const ReadyPlan>> Engine::ComputePlan(
    const std::string& id, const cache::PlanKey& key, const std::string& scheduler,
    const std::map<std::string, std::string>& options, const CallContext& context,
    const ProgressFn& progress) {
  absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(id);
  if (!loaded.ok()) return loaded.status();
  std::shared_ptr<const LoadedModel> model = *loaded;
  // A capped request's search budget (timeout_ms: the exact solvers' and the iterative
  // search's stage limit) is at most the cap; the methods' own defaults are below it.
  std::map<std::string, std::string> planned_options = options;
  if (!context.uncapped_planning) {
    const int64_t cap_ms = int64_t{config_.max_planning_s} * 1000;
    int64_t asked_ms = 0;
    auto asked = planned_options.find("timeout_ms");
    if (asked != planned_options.end() && absl::SimpleAtoi(asked->second, &asked_ms) &&
        asked_ms > cap_ms) {
      asked->second = std::to_string(cap_ms);
    }
  }
  // Used only when this request starts the flight for `key`.
  PlanBook::Planner planner;
  planner.plan = [this, model, scheduler, planned_options](const ProgressFn& on_progress,
                                                           const CancelledFn& abandoned) {
    return backend_->Plan(*model, scheduler, planned_options, on_progress, abandoned);
  };
  planner.finish = [this, model, key, scheduler, options](
                       absl::StatusOr<PlanOutput> plan,
                       double planning_ms) -> absl::StatusOr<std::shared_ptr<const ReadyPlan>> {
    absl::StatusOr<PlanMemory> memory =
        plan.ok() ? backend_->MemoryOf(*model, &*plan) : plan.status();
    if (!memory.ok()) return memory.status();
    plan->memory = *std::move(memory);
    cache::PlanRecord record;
    record.key = key;
    record.scheduler = plan->scheduler;
    record.schedule_json = plan->schedule.dump();
    record.makespan_us = plan->makespan_us;
    record.planning_ms = planning_ms;
    // A plan that cannot be cached (disk full) is still a good answer.
    if (absl::Status stored = store_->PutPlan(record); !stored.ok()) {
      spdlog::warn("plan for {} not cached: {}", key.model_id, std::string(stored.message()));
    }
    spdlog::info("planned {} with {}: makespan {:.1f} us in {:.1f} ms", key.model_id,
                 plan->scheduler, plan->makespan_us, planning_ms);
    plan->id = model::ModelHash(record.schedule_json);
    return plans_.Keep({key, *std::move(plan), planning_ms, "", scheduler, options, {}, false});
  };
  return plans_.PlanOnce(key, context, progress, std::move(planner));
}

absl::StatusOr<InferResult> Engine::Infer(const std::string& id_or_prefix,
                                          std::vector<HostTensor> inputs,
                                          const std::string& scheduler,
                                          const CallContext& context) {
  const absl::Time arrived = absl::Now();
  absl::StatusOr<std::string> id = catalog_.Resolve(id_or_prefix);
  if (!id.ok()) return id.status();
  absl::StatusOr<std::shared_ptr<const LoadedModel>> loaded = catalog_.Loaded(*id);
  if (!loaded.ok()) return loaded.status();
  std::shared_ptr<const LoadedModel> model = *loaded;
  if (!model->has_weights) {
    return absl::FailedPreconditionError(absl::StrCat(
        "model ", *id, " has no weights; register it with --synthetic-weights to run it"));
  }

  const int64_t loaded_resident = backend_->ResidentBytes(*model);
  // The plan first: one over the memory budget is refused before the inputs take memory.
  std::shared_ptr<const ReadyPlan> plan;
  if (backend_->RunUsesPlan()) {
    absl::StatusOr<PlanLookup> planned = PlanFor(*id, scheduler, {}, false, context, nullptr);
    if (!planned.ok()) return planned.status();
    plan = std::move(planned->plan);
  }

  // Bring the inputs into model order, checking names and sizes.
  std::vector<HostTensor> ordered(model->inputs.size());
  if (inputs.empty()) {
    for (size_t i = 0; i < model->inputs.size(); ++i) {
      ordered[i].name = model->inputs[i].name;
      ordered[i].dims = model->inputs[i].dims;
      ordered[i].data.assign(static_cast<size_t>(model->inputs[i].Elements()), 0.0f);
    }
  } else {
    std::vector<bool> given(model->inputs.size(), false);
    for (HostTensor& tensor : inputs) {
      size_t index = model->inputs.size();
      if (tensor.name.empty() && model->inputs.size() == 1) index = 0;
      for (size_t i = 0; i < model->inputs.size() && index == model->inputs.size(); ++i) {
        if (model->inputs[i].name == tensor.name) index = i;
      }
      if (index == model->inputs.size()) {
        return absl::InvalidArgumentError(
            absl::StrCat("model ", *id, " has no input named '", tensor.name, "'"));
      }
      if (given[index]) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", model->inputs[index].name, "' given twice"));
      }
      const TensorSpec& spec = model->inputs[index];
      if (!tensor.dims.empty() && tensor.dims != spec.dims) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", spec.name, "' has dims ", DimsString(tensor.dims),
                         "; the model declares ", DimsString(spec.dims)));
      }
      if (static_cast<int64_t>(tensor.data.size()) != spec.Elements()) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", spec.name, "' has ", tensor.data.size(), " values; shape ",
                         DimsString(spec.dims), " needs ", spec.Elements()));
      }
      if (!config_.allow_non_finite_inputs) {
        auto bad = std::find_if(tensor.data.begin(), tensor.data.end(),
                                [](float v) { return !std::isfinite(v); });
        if (bad != tensor.data.end()) {
          return absl::InvalidArgumentError(absl::StrCat(
              "input '", spec.name, "' holds ", *bad, " at flat index ", bad - tensor.data.begin(),
              "; inputs must be finite (allow_non_finite_inputs in the config permits them)"));
        }
      }
      given[index] = true;
      tensor.name = spec.name;
      tensor.dims = spec.dims;
      ordered[index] = std::move(tensor);
    }
    for (size_t i = 0; i < given.size(); ++i) {
      if (!given[i]) {
        return absl::InvalidArgumentError(
            absl::StrCat("input '", model->inputs[i].name, "' is missing"));
      }
    }
  }

  struct Shared {
    absl::StatusOr<RunOutput> output = absl::UnknownError("not run");
  };
  auto shared = std::make_shared<Shared>();
  auto work = [this, shared, model, plan, inputs = std::move(ordered)] {
    shared->output = backend_->Run(*model, plan ? &plan->output : nullptr, inputs);
  };
  // An idle queue runs the inference right here on the request's thread (no hand-off).
  absl::StatusOr<std::shared_ptr<InferenceQueue::Job>> job =
      queue_.Submit(std::move(work), context.deadline, InferenceQueue::WhenIdle::kRunOnCaller);
  if (!job.ok()) return job.status();

  while (!(*job)->WaitUntil(std::min(context.deadline, absl::Now() + kPollInterval))) {
    if (absl::Now() >= context.deadline) {
      (*job)->Cancel();
      return absl::DeadlineExceededError(
          "deadline passed while the inference was queued or running");
    }
    if (context.cancelled()) {
      (*job)->Cancel();
      return absl::CancelledError("inference request cancelled");
    }
  }
  if (absl::Status outcome = (*job)->outcome(); !outcome.ok()) return outcome;
  if (!shared->output.ok()) {
    if (plan != nullptr) feedback_.RecordFailure(plan);
    return WithContext(shared->output.status(), "inference failed");
  }
  if (plan != nullptr) feedback_.Record(plan, *shared->output);
  // The run may have compiled the plan: what the model holds grew.
  if (const int64_t resident = backend_->ResidentBytes(*model); resident != loaded_resident) {
    if (catalog_.UnloadBeyondBounds(*id) > 0) ReleaseFreedMemory();
  }

  InferResult result;
  result.outputs = std::move(shared->output->outputs);
  result.execute_us = shared->output->execute_us;
  result.trace = std::move(shared->output->trace);
  result.predicted_makespan_us = shared->output->predicted_makespan_us;
  if (plan != nullptr) result.scheduler = plan->output.scheduler;
  result.queue_us = absl::ToDoubleMicroseconds((*job)->queued_for());
  result.latency_us = absl::ToDoubleMicroseconds(absl::Now() - arrived);
  result.executor = backend_->executor_name();
  usage_.Inference(*id, result.latency_us);
  return result;
}

EngineStatus Engine::Status(const std::string& owner, bool quota_exempt) {
  EngineStatus status;
  status.version = PSCHED_VERSION;
  status.uptime_s = absl::ToDoubleSeconds(absl::Now() - started_);
  status.platform = backend_->platform();
  status.executor = backend_->executor_name();
  status.default_scheduler = config_.default_scheduler;
  InferenceQueue::ProgressInfo progress = queue_.Progress();
  status.queue_depth = progress.depth;
  status.queue_capacity = queue_.capacity();
  status.inferences = progress.completed - warmups_.load();
  status.calibration = first_start_calibration_->State();
  usage_.Flush();
  if (absl::StatusOr<cache::CacheStats> stats = store_->Stats(); stats.ok()) {
    status.cache = *stats;
    status.models = stats->models;
  }
  ResourceUsage& resources = status.resources;
  resources.cache_bytes = status.cache.db_bytes;
  resources.cache_max_bytes = config_.cache_max_bytes;
  if (!owner.empty()) {
    if (absl::StatusOr<cache::OwnerUsage> usage = store_->UsageOf(owner); usage.ok()) {
      resources.caller = *usage;
    }
  }
  resources.max_models_per_user = config_.max_models_per_user;
  resources.max_model_bytes_per_user = config_.max_model_bytes_per_user;
  resources.quota_exempt = quota_exempt;
  resources.loaded_models = catalog_.LoadedCount();
  resources.loaded_bytes = catalog_.LoadedBytes();
  resources.max_loaded_models = config_.max_loaded_models;
  resources.max_loaded_bytes = config_.max_loaded_bytes;
  resources.max_plan_memory_bytes = config_.max_plan_memory_bytes;
  const PlanBook::PlanningLoad planning = plans_.Load();
  resources.planning = planning.planning;
  resources.planning_queued = planning.waiting;
  resources.max_concurrent_plans = config_.max_concurrent_plans;
  resources.max_planning_s = config_.max_planning_s;
  return status;
}

absl::StatusOr<cache::CacheStats> Engine::CacheStats() {
  usage_.Flush();
  return store_->Stats();
}

absl::StatusOr<std::vector<cache::PlanRecord>> Engine::ListCachedPlans(
    const std::string& id_or_prefix) {
  std::string id;
  if (!id_or_prefix.empty()) {
    absl::StatusOr<std::string> resolved = catalog_.Resolve(id_or_prefix);
    if (!resolved.ok()) return resolved.status();
    id = *resolved;
  }
  usage_.Flush();
  return store_->ListPlans(id);
}

absl::StatusOr<cache::PurgeResult> Engine::PurgeCache(bool include_models) {
  // A start-up warm-up still running would plan again what the purge removes.
  StopWarmingAtStart();
  usage_.Flush();
  absl::StatusOr<cache::PurgeResult> result = store_->Purge(include_models);
  if (result.ok()) {
    ForgetReadyPlans("");
    plans_.ForgetChecked("");
    if (include_models) catalog_.Clear();
  }
  if (include_models) ReleaseFreedMemory();
  return result;
}

absl::StatusOr<CacheVerification> Engine::VerifyCache() {
  absl::StatusOr<std::vector<cache::ModelRecord>> records = store_->ListModels();
  if (!records.ok()) return records.status();
  CacheVerification report;
  std::set<std::string> damaged;
  for (const cache::ModelRecord& listed : *records) {
    absl::StatusOr<cache::ModelRecord> record = catalog_.ReadIntact(listed.id);
    if (!record.ok() && record.status().code() != absl::StatusCode::kDataLoss) {
      return record.status();
    }
    ++report.models_checked;
    if (!record.ok()) {
      damaged.insert(listed.id);
      report.problems.push_back({listed.id, "", std::string(record.status().message())});
    }
  }
  absl::StatusOr<std::vector<cache::PlanRecord>> plans = store_->ListPlans();
  if (!plans.ok()) return plans.status();
  const PlatformInfo platform = backend_->platform();
  for (const cache::PlanRecord& plan : *plans) {
    if (plan.key.platform_fingerprint != platform.fingerprint ||
        plan.key.predictor_version != platform.predictor_version ||
        damaged.contains(plan.key.model_id)) {
      ++report.plans_skipped;
      continue;
    }
    ++report.plans_checked;
    nlohmann::json schedule = nlohmann::json::parse(plan.schedule_json, nullptr, false);
    absl::Status valid =
        schedule.is_discarded()
            ? absl::DataLossError("the stored plan is not valid JSON")
            : CheckCachedPlan(plan.key.model_id, plan.key, plan.schedule_json, schedule);
    if (!valid.ok()) {
      spdlog::warn("cached plan {} of {} is invalid (recomputed when next asked for): {}",
                   plan.key.scheduler_config, plan.key.model_id, std::string(valid.message()));
      report.problems.push_back(
          {plan.key.model_id, plan.key.scheduler_config, std::string(valid.message())});
      plans_.Drop(plan.key);
    }
  }
  spdlog::info("cache verified: {} models, {} plans checked ({} skipped), {} problems",
               report.models_checked, report.plans_checked, report.plans_skipped,
               report.problems.size());
  return report;
}

}  // namespace psched::daemon
