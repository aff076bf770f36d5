// cache::Store: pschedd's persistent state in one SQLite database under the state dir.
//
// It holds registered models (their ONNX bytes, in chunks, and a JSON graph summary), computed
// plans keyed by (model hash, platform fingerprint, predictor version, scheduler config) with the
// schedule as JSON, per-model usage statistics and plan hit/miss counters. The database runs
// in WAL mode with a busy timeout, is checked with `PRAGMA integrity_check` when opened and
// migrated to the current schema (cache/schema.h). Errors carry the database path and
// SQLite's reason; a full disk is RESOURCE_EXHAUSTED, a read-only location
// FAILED_PRECONDITION, a corrupt file DATA_LOSS.
//
// Thread-safety: all methods are thread-safe (one connection behind a mutex). Ownership: the
// Store owns its connection; records are returned by value.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cache/sqlite.h"
#include "sync/mutex.h"

namespace psched::cache {

struct StoreOptions {
  // Milliseconds a writer waits for another process holding the database lock before
  // failing with UNAVAILABLE. Long enough for a concurrent pschedctl-side reader.
  int busy_timeout_ms = 5000;
  // Upper bound of the database size in bytes (a model takes its full size, so a few large
  // models fill it quickly). 0: only the disk limits it.
  int64_t max_db_bytes = 0;
  // Model bytes are stored as rows of at most this many bytes, because SQLite keeps one blob
  // whole and no longer than its length limit (SQLITE_MAX_LENGTH, a compile-time setting). A
  // chunk is copied once in memory while it is written, so smaller chunks cost less memory
  // and larger ones fewer rows. In [1, SQLite's length limit]; changing it leaves stored
  // models readable.
  int64_t model_chunk_bytes = int64_t{64} << 20;
};

struct ModelRecord {
  std::string id;  // model::ModelId(onnx, input_shapes)
  std::string name;
  std::string onnx;  // the file's bytes; empty in listings (see ListModels)
  int64_t size_bytes = 0;
  std::string summary_json;  // the daemon's graph summary
  bool synthesize_weights = false;
  // The input shapes given at registration as the daemon's canonical JSON text
  // ({"name": [dims], ...}); empty when none were given.
  std::string input_shapes;
  // Who registered it first (the daemon stores the caller's uid); empty: nobody's (stored
  // before owners were recorded, or by an owner exempt from quotas). ModelQuota counts it.
  std::string owner;
  int64_t created_unix_s = 0;
};

struct PlanKey {
  std::string model_id;
  std::string platform_fingerprint;
  std::string predictor_version;
  // Canonical scheduler name + options (e.g. "iterative;seed=1"); equal configs must give
  // equal strings.
  std::string scheduler_config;
  bool operator==(const PlanKey&) const = default;
  // The four fields joined with '|': a map key that sorts a model's plans together.
  std::string Joined() const;
};

struct PlanRecord {
  PlanKey key;
  std::string scheduler;  // resolved scheduler name
  std::string schedule_json;
  double makespan_us = 0;
  double planning_ms = 0;
  int64_t hits = 0;
  int64_t created_unix_s = 0;
  bool imported = false;  // stored by a plan bundle's import, not planned here
};

struct UsageRecord {
  std::string model_id;
  int64_t inferences = 0;
  double total_latency_us = 0;
  int64_t last_unix_s = 0;
};

// A fitted latency model of one platform (calibration), as the backend serialises it.
struct CalibrationRecord {
  // The devices it was measured on (names, kinds, cores, OpenCL selector).
  std::string platform_key;
  std::string predictor_version;  // Version() of the fitted model
  std::string params_json;
  std::string report_json;  // held-out error report
  int64_t created_unix_s = 0;
};

struct CacheStats {
  int64_t models = 0;
  int64_t plans = 0;
  int64_t db_bytes = 0;  // main file + WAL
  int64_t hits = 0;
  int64_t misses = 0;
  std::string path;
};

// Statistics gathered in memory and written in one transaction (Store::RecordUsage).
struct UsageBatch {
  struct PlanHits {
    PlanKey key;
    int64_t hits = 0;
  };
  std::vector<PlanHits> plan_hits;
  std::vector<UsageRecord> models;  // counts to add; last_unix_s replaces an older one
  bool empty() const { return plan_hits.empty() && models.empty(); }
};

// The models stored under one owner.
struct OwnerUsage {
  int64_t models = 0;
  int64_t bytes = 0;
};

// How much one owner may store (Store::PutModelWithin).
struct ModelQuota {
  int64_t max_models = 0;
  int64_t max_bytes = 0;
};

struct PutModelResult {
  bool inserted = false;  // false: already stored, or over the quota
  // The model would have taken its owner past the quota: nothing was written.
  bool over_quota = false;
  OwnerUsage usage;  // the owner's models before this one (with a quota only)
};

struct PurgeResult {
  int64_t plans_removed = 0;
  int64_t models_removed = 0;
};

class Store {
 public:
  // Opens or creates `<state_dir>/psched.db`. The directory must exist and be writable.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& state_dir,
                                                     const StoreOptions& options = {});
  // The database file name inside the state dir.
  static constexpr const char* kFileName = "psched.db";

  // Inserts the model with its bytes in one transaction: a crash leaves either all of it or
  // nothing. Returns false (and changes nothing) when its id is already stored.
  absl::StatusOr<bool> PutModel(const ModelRecord& model);
  // As PutModel, counting the model against `quota` for model.owner when `quota` is given:
  // in the same transaction, the owner's stored models plus this one must stay within it,
  // or nothing is written and the result is over_quota with the owner's usage. A model
  // already stored passes (it takes no more room).
  absl::StatusOr<PutModelResult> PutModelWithin(const ModelRecord& model, const ModelQuota* quota);
  // The models stored under `owner`.
  absl::StatusOr<OwnerUsage> UsageOf(const std::string& owner);
  // Overwrites the stored bytes of model `id` (a stored copy damaged on disk, repaired by
  // re-adding the original) in one transaction. NOT_FOUND when absent.
  // REQUIRES: ModelId(onnx, the model's input_shapes) == id (the caller checked).
  absl::Status RepairModelBytes(const std::string& id, const std::string& onnx);
  // The model with its bytes, assembled into one buffer of the recorded size. NOT_FOUND when
  // absent; DATA_LOSS naming the model when a chunk is missing or the chunks do not add up to
  // the recorded size.
  absl::StatusOr<ModelRecord> GetModel(const std::string& id);
  // The model without its bytes (as in ListModels). NOT_FOUND when absent.
  absl::StatusOr<ModelRecord> GetModelInfo(const std::string& id);
  // Every model, oldest first, without their ONNX bytes.
  absl::StatusOr<std::vector<ModelRecord>> ListModels();
  // Full id for a full id or a unique prefix of at least 8 hex characters. NOT_FOUND when
  // none matches, INVALID_ARGUMENT when the prefix is short or ambiguous.
  absl::StatusOr<std::string> ResolveModelId(const std::string& id_or_prefix);
  // Removes the model with its plans and usage; returns the number of plans removed.
  absl::StatusOr<int64_t> RemoveModel(const std::string& id);

  // The cached plan for `key`, counting a hit (plan and global counter) or a miss.
  absl::StatusOr<std::optional<PlanRecord>> LookupPlan(const PlanKey& key);
  // Inserts or replaces the plan for `record.key`. The model must be stored.
  absl::Status PutPlan(const PlanRecord& record);
  // Cached plans, newest first; all models when `model_id` is empty.
  absl::StatusOr<std::vector<PlanRecord>> ListPlans(const std::string& model_id = "");

  // Adds one inference of `latency_us` to the model's usage statistics.
  absl::Status RecordInference(const std::string& model_id, double latency_us);
  // NOT_FOUND when the model has never run.
  // Adds a batch of plan hits and inferences in one transaction. Plans and models removed
  // since the batch was gathered are skipped, not errors.
  absl::Status RecordUsage(const UsageBatch& batch);
  absl::StatusOr<UsageRecord> GetUsage(const std::string& model_id);

  // Inserts or replaces the calibration of `record.platform_key`.
  absl::Status PutCalibration(const CalibrationRecord& record);
  // The calibration stored for `platform_key`, if any.
  absl::StatusOr<std::optional<CalibrationRecord>> LookupCalibration(
      const std::string& platform_key);

  absl::StatusOr<CacheStats> Stats();
  // Removes every plan, and every model too when `include_models`.
  absl::StatusOr<PurgeResult> Purge(bool include_models);

  const std::string& path() const { return path_; }

 private:
  Store(Connection db, std::string path, int64_t model_chunk_bytes)
      : db_(std::move(db)), path_(std::move(path)), model_chunk_bytes_(model_chunk_bytes) {}
  absl::Status Annotate(const absl::Status& status) const;
  // Inserts `onnx` as the chunks of model `id`. REQUIRES: inside a write transaction.
  absl::Status WriteChunks(const std::string& id, absl::string_view onnx)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The chunks of model `id` joined, checked to be contiguous and `size_bytes` long.
  // REQUIRES: inside a transaction.
  absl::StatusOr<std::string> ReadChunks(const std::string& id, int64_t size_bytes)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The model's row without its bytes; NOT_FOUND when absent.
  absl::StatusOr<ModelRecord> ReadModelRow(const std::string& id)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status BumpCounter(const char* name) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::StatusOr<OwnerUsage> ReadOwnerUsage(const std::string& owner)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Rolls back the open transaction and returns `status` annotated.
  absl::Status Rollback(const absl::Status& status) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  sync::Mutex mu_;
  Connection db_ ABSL_GUARDED_BY(mu_);
  const std::string path_;
  const int64_t model_chunk_bytes_;
};

}  // namespace psched::cache
