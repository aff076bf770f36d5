#include "cache/store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cache/schema.h"

namespace psched::cache {
namespace {

int64_t NowUnixSeconds() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Propagates a non-OK Status or binds the value of a StatusOr.
#define PSCHED_CACHE_RETURN_IF_ERROR(expr) \
  do {                                     \
    absl::Status status_ = (expr);         \
    if (!status_.ok()) return status_;     \
  } while (false)

#define PSCHED_CACHE_CONCAT_INNER(a, b) a##b
#define PSCHED_CACHE_CONCAT(a, b) PSCHED_CACHE_CONCAT_INNER(a, b)
#define PSCHED_CACHE_ASSIGN_OR_RETURN(lhs, expr)              \
  auto PSCHED_CACHE_CONCAT(statusor_, __LINE__) = (expr);     \
  if (!PSCHED_CACHE_CONCAT(statusor_, __LINE__).ok())         \
    return PSCHED_CACHE_CONCAT(statusor_, __LINE__).status(); \
  lhs = std::move(*PSCHED_CACHE_CONCAT(statusor_, __LINE__))

constexpr const char* kModelColumns =
    "id, name, size_bytes, summary_json, synthesize_weights, created_unix_s, input_shapes, owner";

ModelRecord ReadModel(const Statement& row) {
  ModelRecord model;
  model.id = row.ColumnText(0);
  model.name = row.ColumnText(1);
  model.size_bytes = row.ColumnInt(2);
  model.summary_json = row.ColumnText(3);
  model.synthesize_weights = row.ColumnInt(4) != 0;
  model.created_unix_s = row.ColumnInt(5);
  model.input_shapes = row.ColumnText(6);
  model.owner = row.ColumnText(7);
  return model;
}

constexpr const char* kPlanColumns =
    "model_id, platform_fingerprint, predictor_version, scheduler_config, scheduler, "
    "schedule_json, makespan_us, planning_ms, hits, created_unix_s, imported";

PlanRecord ReadPlan(const Statement& row) {
  PlanRecord plan;
  plan.key.model_id = row.ColumnText(0);
  plan.key.platform_fingerprint = row.ColumnText(1);
  plan.key.predictor_version = row.ColumnText(2);
  plan.key.scheduler_config = row.ColumnText(3);
  plan.scheduler = row.ColumnText(4);
  plan.schedule_json = row.ColumnText(5);
  plan.makespan_us = row.ColumnDouble(6);
  plan.planning_ms = row.ColumnDouble(7);
  plan.hits = row.ColumnInt(8);
  plan.created_unix_s = row.ColumnInt(9);
  plan.imported = row.ColumnInt(10) != 0;
  return plan;
}

absl::Status Prefixed(const absl::Status& status, absl::string_view prefix) {
  if (status.ok()) return status;
  return absl::Status(status.code(), absl::StrCat(prefix, status.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Store>> Store::Open(const std::string& state_dir,
                                                   const StoreOptions& options) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::is_directory(state_dir, ec)) {
    return absl::FailedPreconditionError(
        absl::StrCat("state dir ", state_dir, " does not exist or is not a directory"));
  }
  if (access(state_dir.c_str(), W_OK | X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("state dir ", state_dir, " is not writable by this user"));
  }
  std::string path = (fs::path(state_dir) / kFileName).string();
  std::string prefix = absl::StrCat("cache ", path, ": ");

  // A new database is created 0600 before SQLite opens it (SQLite would use 0644 & ~umask);
  // its -wal and -shm files take the database file's mode.
  if (!fs::exists(path, ec)) {
    const int created = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (created < 0 && errno != EEXIST) {
      return absl::FailedPreconditionError(
          absl::StrCat(prefix, "cannot create the database: ", std::strerror(errno)));
    }
    if (created >= 0) close(created);
  }
  absl::StatusOr<Connection> db = Connection::Open(path);
  if (!db.ok()) return Prefixed(db.status(), prefix);
  PSCHED_CACHE_RETURN_IF_ERROR(
      Prefixed(db->Exec(absl::StrCat("PRAGMA busy_timeout = ", options.busy_timeout_ms)), prefix));

  // integrity_check reads every page, so a garbage or truncated file is caught here rather
  // than by the first request that touches the damaged page.
  absl::StatusOr<std::string> integrity = db->QueryText("PRAGMA integrity_check");
  if (!integrity.ok() || *integrity != "ok") {
    std::string reason = integrity.ok() ? *integrity : std::string(integrity.status().message());
    return absl::DataLossError(
        absl::StrCat(prefix, "database is corrupt (", reason,
                     "); stop pschedd and move the file aside to start with an empty cache"));
  }
  absl::StatusOr<std::string> mode = db->QueryText("PRAGMA journal_mode = WAL");
  if (!mode.ok()) return Prefixed(mode.status(), prefix);
  if (*mode != "wal") {
    return absl::FailedPreconditionError(
        absl::StrCat(prefix, "cannot switch to WAL journal mode (got ", *mode, ")"));
  }
  PSCHED_CACHE_RETURN_IF_ERROR(Prefixed(db->Exec("PRAGMA foreign_keys = ON"), prefix));
  PSCHED_CACHE_RETURN_IF_ERROR(Prefixed(db->Exec("PRAGMA synchronous = NORMAL"), prefix));
  if (options.max_db_bytes > 0) {
    absl::StatusOr<int64_t> page_size = db->QueryInt("PRAGMA page_size");
    if (!page_size.ok()) return Prefixed(page_size.status(), prefix);
    int64_t pages = std::max<int64_t>(options.max_db_bytes / *page_size, 1);
    PSCHED_CACHE_RETURN_IF_ERROR(
        Prefixed(db->Exec(absl::StrCat("PRAGMA max_page_count = ", pages)), prefix));
  }
  const int64_t length_limit = sqlite3_limit(db->raw(), SQLITE_LIMIT_LENGTH, -1);
  if (options.model_chunk_bytes < 1 || options.model_chunk_bytes > length_limit) {
    return absl::InvalidArgumentError(
        absl::StrCat(prefix, "model chunk size ", options.model_chunk_bytes, " is outside [1, ",
                     length_limit, "] (SQLite's length limit for one blob)"));
  }
  PSCHED_CACHE_RETURN_IF_ERROR(Prefixed(Migrate(*db), prefix));
  PSCHED_CACHE_RETURN_IF_ERROR(Prefixed(CheckSchemaUsable(*db), prefix));
  return std::unique_ptr<Store>(
      new Store(std::move(*db), std::move(path), options.model_chunk_bytes));
}

absl::Status Store::Annotate(const absl::Status& status) const {
  return Prefixed(status, absl::StrCat("cache ", path_, ": "));
}

absl::Status Store::WriteChunks(const std::string& id, absl::string_view onnx) {
  absl::StatusOr<Statement> stmt =
      db_.Prepare("INSERT INTO model_chunks(model_id, seq, bytes) VALUES (?, ?, ?)");
  if (!stmt.ok()) return stmt.status();
  int64_t seq = 0;
  for (size_t offset = 0; offset < onnx.size(); offset += model_chunk_bytes_, ++seq) {
    stmt->Reset();
    stmt->Bind(1, id).Bind(2, seq).BindBlob(3, onnx.substr(offset, model_chunk_bytes_));
    PSCHED_CACHE_RETURN_IF_ERROR(stmt->Run());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> Store::ReadChunks(const std::string& id, int64_t size_bytes) {
  // First the chunk lengths only (SQLite answers length() without reading a blob's pages), so
  // a missing chunk or a wrong size is reported before anything is allocated.
  absl::StatusOr<Statement> lengths = db_.Prepare(
      "SELECT seq, typeof(bytes) = 'blob', length(bytes) FROM model_chunks "
      "WHERE model_id = ? ORDER BY seq");
  if (!lengths.ok()) return Annotate(lengths.status());
  lengths->Bind(1, id);
  int64_t chunks = 0;
  int64_t stored = 0;
  while (true) {
    absl::StatusOr<bool> row = lengths->Step();
    if (!row.ok()) return Annotate(row.status());
    if (!*row) break;
    if (const int64_t seq = lengths->ColumnInt(0); seq != chunks) {
      return absl::DataLossError(absl::StrCat("cache ", path_, ": model ", id, ": chunk ", chunks,
                                              " of its stored bytes is missing (the next is ", seq,
                                              "); the database was damaged or edited"));
    }
    // length() counts the characters of a text value: only a blob's length is its size.
    if (lengths->ColumnInt(1) == 0) {
      return absl::DataLossError(absl::StrCat("cache ", path_, ": model ", id, ": chunk ", chunks,
                                              " of its stored bytes is not a blob; the database "
                                              "was damaged or edited"));
    }
    stored += lengths->ColumnInt(2);
    ++chunks;
  }
  if (stored != size_bytes) {
    return absl::DataLossError(
        absl::StrCat("cache ", path_, ": model ", id, ": its ", chunks, " stored chunk(s) hold ",
                     stored, " bytes, not the ", size_bytes,
                     " it was registered with; the database was damaged or edited"));
  }
  // One buffer of the final size, filled straight from SQLite's copy of each chunk.
  std::string onnx;
  onnx.reserve(static_cast<size_t>(size_bytes));
  absl::StatusOr<Statement> bytes =
      db_.Prepare("SELECT bytes FROM model_chunks WHERE model_id = ? ORDER BY seq");
  if (!bytes.ok()) return Annotate(bytes.status());
  bytes->Bind(1, id);
  while (true) {
    absl::StatusOr<bool> row = bytes->Step();
    if (!row.ok()) return Annotate(row.status());
    if (!*row) break;
    const absl::string_view chunk = bytes->ColumnBlobView(0);
    onnx.append(chunk.data(), chunk.size());
  }
  // Inside one transaction both queries see the same rows; this guards the assumption.
  if (static_cast<int64_t>(onnx.size()) != size_bytes) {
    return absl::DataLossError(absl::StrCat("cache ", path_, ": model ", id,
                                            ": its stored chunks changed while being read"));
  }
  return onnx;
}

absl::StatusOr<bool> Store::PutModel(const ModelRecord& model) {
  absl::StatusOr<PutModelResult> put = PutModelWithin(model, nullptr);
  if (!put.ok()) return put.status();
  return put->inserted;
}

absl::StatusOr<PutModelResult> Store::PutModelWithin(const ModelRecord& model,
                                                     const ModelQuota* quota) {
  sync::MutexLock lock(&mu_);
  PSCHED_CACHE_RETURN_IF_ERROR(Annotate(db_.Exec("BEGIN IMMEDIATE")));
  PutModelResult result;
  if (quota != nullptr) {
    // In the write transaction: two uploads of one owner cannot both pass the same room.
    absl::StatusOr<OwnerUsage> usage = ReadOwnerUsage(model.owner);
    if (!usage.ok()) return Rollback(usage.status());
    absl::StatusOr<Statement> exists = db_.Prepare("SELECT count(*) FROM models WHERE id = ?");
    if (!exists.ok()) return Rollback(exists.status());
    exists->Bind(1, model.id);
    absl::StatusOr<bool> row = exists->Step();
    if (!row.ok()) return Rollback(row.status());
    const bool stored = *row && exists->ColumnInt(0) > 0;
    result.usage = *usage;
    if (!stored && (usage->models + 1 > quota->max_models ||
                    usage->bytes + static_cast<int64_t>(model.onnx.size()) > quota->max_bytes)) {
      db_.Exec("ROLLBACK").IgnoreError();
      result.over_quota = true;
      return result;
    }
  }
  absl::StatusOr<Statement> stmt = db_.Prepare(
      "INSERT OR IGNORE INTO models(id, name, size_bytes, summary_json, created_unix_s, "
      "synthesize_weights, input_shapes, owner) VALUES (?, ?, ?, ?, ?, ?, ?, ?)");
  if (!stmt.ok()) return Rollback(stmt.status());
  stmt->Bind(1, model.id)
      .Bind(2, model.name)
      .Bind(3, static_cast<int64_t>(model.onnx.size()))
      .Bind(4, model.summary_json)
      .Bind(5, model.created_unix_s != 0 ? model.created_unix_s : NowUnixSeconds())
      .Bind(6, static_cast<int64_t>(model.synthesize_weights))
      .Bind(7, model.input_shapes)
      .Bind(8, model.owner);
  if (absl::Status status = stmt->Run(); !status.ok()) return Rollback(status);
  if (db_.Changes() == 0) {
    db_.Exec("ROLLBACK").IgnoreError();
    return result;
  }
  if (absl::Status status = WriteChunks(model.id, model.onnx); !status.ok()) {
    return Rollback(status);
  }
  if (absl::Status status = db_.Exec("COMMIT"); !status.ok()) return Rollback(status);
  result.inserted = true;
  return result;
}

absl::StatusOr<OwnerUsage> Store::ReadOwnerUsage(const std::string& owner) {
  absl::StatusOr<Statement> stmt =
      db_.Prepare("SELECT count(*), coalesce(sum(size_bytes), 0) FROM models WHERE owner = ?");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, owner);
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  OwnerUsage usage;
  if (*row) {
    usage.models = stmt->ColumnInt(0);
    usage.bytes = stmt->ColumnInt(1);
  }
  return usage;
}

absl::StatusOr<OwnerUsage> Store::UsageOf(const std::string& owner) {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<OwnerUsage> usage = ReadOwnerUsage(owner);
  if (!usage.ok()) return Annotate(usage.status());
  return usage;
}

absl::Status Store::RepairModelBytes(const std::string& id, const std::string& onnx) {
  sync::MutexLock lock(&mu_);
  PSCHED_CACHE_RETURN_IF_ERROR(Annotate(db_.Exec("BEGIN IMMEDIATE")));
  absl::StatusOr<Statement> size = db_.Prepare("UPDATE models SET size_bytes = ? WHERE id = ?");
  if (!size.ok()) return Rollback(size.status());
  size->Bind(1, static_cast<int64_t>(onnx.size())).Bind(2, id);
  if (absl::Status status = size->Run(); !status.ok()) return Rollback(status);
  if (db_.Changes() == 0) {
    db_.Exec("ROLLBACK").IgnoreError();
    return absl::NotFoundError(absl::StrCat("no model with id ", id));
  }
  absl::StatusOr<Statement> erase = db_.Prepare("DELETE FROM model_chunks WHERE model_id = ?");
  if (!erase.ok()) return Rollback(erase.status());
  erase->Bind(1, id);
  if (absl::Status status = erase->Run(); !status.ok()) return Rollback(status);
  if (absl::Status status = WriteChunks(id, onnx); !status.ok()) return Rollback(status);
  if (absl::Status status = db_.Exec("COMMIT"); !status.ok()) return Rollback(status);
  return absl::OkStatus();
}

absl::StatusOr<ModelRecord> Store::ReadModelRow(const std::string& id) {
  absl::StatusOr<Statement> stmt =
      db_.Prepare(absl::StrCat("SELECT ", kModelColumns, " FROM models WHERE id = ?"));
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, id);
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return Annotate(row.status());
  if (!*row) return absl::NotFoundError(absl::StrCat("no model with id ", id));
  return ReadModel(*stmt);
}

absl::StatusOr<ModelRecord> Store::GetModelInfo(const std::string& id) {
  sync::MutexLock lock(&mu_);
  return ReadModelRow(id);
}

absl::StatusOr<ModelRecord> Store::GetModel(const std::string& id) {
  sync::MutexLock lock(&mu_);
  // One read transaction: the row and its chunks come from the same snapshot.
  PSCHED_CACHE_RETURN_IF_ERROR(Annotate(db_.Exec("BEGIN")));
  absl::StatusOr<ModelRecord> model = ReadModelRow(id);
  if (model.ok()) {
    absl::StatusOr<std::string> onnx = ReadChunks(id, model->size_bytes);
    if (onnx.ok()) {
      model->onnx = *std::move(onnx);
    } else {
      model = onnx.status();
    }
  }
  db_.Exec("COMMIT").IgnoreError();
  return model;
}

absl::StatusOr<std::vector<ModelRecord>> Store::ListModels() {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt = db_.Prepare(
      absl::StrCat("SELECT ", kModelColumns, " FROM models ORDER BY created_unix_s, rowid"));
  if (!stmt.ok()) return Annotate(stmt.status());
  std::vector<ModelRecord> models;
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return Annotate(row.status());
    if (!*row) break;
    models.push_back(ReadModel(*stmt));
  }
  return models;
}

absl::StatusOr<std::string> Store::ResolveModelId(const std::string& id_or_prefix) {
  if (id_or_prefix.empty()) return absl::InvalidArgumentError("model id is empty");
  for (char c : id_or_prefix) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "model id '", id_or_prefix, "' is not lowercase hex (ids are SHA-256 digests)"));
    }
  }
  constexpr size_t kMinPrefix = 8;
  if (id_or_prefix.size() < kMinPrefix) {
    return absl::InvalidArgumentError(absl::StrCat(
        "model id prefix '", id_or_prefix, "' is shorter than ", kMinPrefix, " characters"));
  }
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt =
      db_.Prepare("SELECT id FROM models WHERE substr(id, 1, ?) = ? LIMIT 2");
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, static_cast<int64_t>(id_or_prefix.size())).Bind(2, id_or_prefix);
  std::vector<std::string> matches;
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return Annotate(row.status());
    if (!*row) break;
    matches.push_back(stmt->ColumnText(0));
  }
  if (matches.empty()) return absl::NotFoundError(absl::StrCat("no model with id ", id_or_prefix));
  if (matches.size() > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("model id prefix '", id_or_prefix, "' matches several models"));
  }
  return matches.front();
}

absl::StatusOr<int64_t> Store::RemoveModel(const std::string& id) {
  sync::MutexLock lock(&mu_);
  PSCHED_CACHE_RETURN_IF_ERROR(Annotate(db_.Exec("BEGIN IMMEDIATE")));
  absl::StatusOr<Statement> count = db_.Prepare("SELECT count(*) FROM plans WHERE model_id = ?");
  if (!count.ok()) return Rollback(count.status());
  count->Bind(1, id);
  absl::StatusOr<bool> row = count->Step();
  if (!row.ok()) return Rollback(row.status());
  int64_t plans = count->ColumnInt(0);
  absl::StatusOr<Statement> erase = db_.Prepare("DELETE FROM models WHERE id = ?");
  if (!erase.ok()) return Rollback(erase.status());
  erase->Bind(1, id);
  if (absl::Status status = erase->Run(); !status.ok()) return Rollback(status);
  if (db_.Changes() == 0) {
    db_.Exec("ROLLBACK").IgnoreError();
    return absl::NotFoundError(absl::StrCat("no model with id ", id));
  }
  if (absl::Status status = db_.Exec("COMMIT"); !status.ok()) return Rollback(status);
  return plans;
}

std::string PlanKey::Joined() const {
  return absl::StrCat(model_id, "|", platform_fingerprint, "|", predictor_version, "|",
                      scheduler_config);
}

absl::Status Store::Rollback(const absl::Status& status) {
  db_.Exec("ROLLBACK").IgnoreError();
  return Annotate(status);
}

absl::Status Store::BumpCounter(const char* name) {
  absl::StatusOr<Statement> stmt =
      db_.Prepare("UPDATE counters SET value = value + 1 WHERE name = ?");
  if (!stmt.ok()) return stmt.status();
  stmt->Bind(1, absl::string_view(name));
  return stmt->Run();
}

absl::StatusOr<std::optional<PlanRecord>> Store::LookupPlan(const PlanKey& key) {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt = db_.Prepare(absl::StrCat(
      "SELECT ", kPlanColumns,
      " FROM plans WHERE model_id = ? AND platform_fingerprint = ? AND predictor_version = ? "
      "AND scheduler_config = ?"));
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, key.model_id)
      .Bind(2, key.platform_fingerprint)
      .Bind(3, key.predictor_version)
      .Bind(4, key.scheduler_config);
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return Annotate(row.status());
  if (!*row) {
    PSCHED_CACHE_RETURN_IF_ERROR(Annotate(BumpCounter("plan_misses")));
    return std::optional<PlanRecord>();
  }
  PlanRecord plan = ReadPlan(*stmt);
  ++plan.hits;
  absl::StatusOr<Statement> bump = db_.Prepare(
      "UPDATE plans SET hits = hits + 1 WHERE model_id = ? AND platform_fingerprint = ? AND "
      "predictor_version = ? AND scheduler_config = ?");
  if (!bump.ok()) return Annotate(bump.status());
  bump->Bind(1, key.model_id)
      .Bind(2, key.platform_fingerprint)
      .Bind(3, key.predictor_version)
      .Bind(4, key.scheduler_config);
  PSCHED_CACHE_RETURN_IF_ERROR(Annotate(bump->Run()));
  PSCHED_CACHE_RETURN_IF_ERROR(Annotate(BumpCounter("plan_hits")));
  return std::optional<PlanRecord>(std::move(plan));
}

absl::Status Store::PutPlan(const PlanRecord& record) {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt = db_.Prepare(absl::StrCat(
      "INSERT OR REPLACE INTO plans(", kPlanColumns, ") VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"));
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, record.key.model_id)
      .Bind(2, record.key.platform_fingerprint)
      .Bind(3, record.key.predictor_version)
      .Bind(4, record.key.scheduler_config)
      .Bind(5, record.scheduler)
      .Bind(6, record.schedule_json)
      .Bind(7, record.makespan_us)
      .Bind(8, record.planning_ms)
      .Bind(9, record.hits)
      .Bind(10, record.created_unix_s != 0 ? record.created_unix_s : NowUnixSeconds())
      .Bind(11, static_cast<int64_t>(record.imported ? 1 : 0));
  absl::Status status = stmt->Run();
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    return absl::NotFoundError(absl::StrCat("cache ", path_, ": cannot store a plan for model ",
                                            record.key.model_id, ": model is not registered"));
  }
  return Annotate(status);
}

absl::StatusOr<std::vector<PlanRecord>> Store::ListPlans(const std::string& model_id) {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt = db_.Prepare(
      absl::StrCat("SELECT ", kPlanColumns,
                   " FROM plans WHERE ?1 = '' OR model_id = ?1 ORDER BY created_unix_s DESC, "
                   "rowid DESC"));
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, model_id);
  std::vector<PlanRecord> plans;
  while (true) {
    absl::StatusOr<bool> row = stmt->Step();
    if (!row.ok()) return Annotate(row.status());
    if (!*row) break;
    plans.push_back(ReadPlan(*stmt));
  }
  return plans;
}

absl::Status Store::RecordInference(const std::string& model_id, double latency_us) {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt = db_.Prepare(
      "INSERT INTO usage(model_id, inferences, total_latency_us, last_unix_s) "
      "VALUES (?1, 1, ?2, ?3) ON CONFLICT(model_id) DO UPDATE SET "
      "inferences = inferences + 1, total_latency_us = total_latency_us + ?2, "
      "last_unix_s = ?3");
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, model_id).Bind(2, latency_us).Bind(3, NowUnixSeconds());
  absl::Status status = stmt->Run();
  if (status.code() == absl::StatusCode::kAlreadyExists) {
    return absl::NotFoundError(absl::StrCat("no model with id ", model_id));
  }
  return Annotate(status);
}

absl::Status Store::RecordUsage(const UsageBatch& batch) {
  if (batch.empty()) return absl::OkStatus();
  sync::MutexLock lock(&mu_);
  PSCHED_CACHE_RETURN_IF_ERROR(Annotate(db_.Exec("BEGIN IMMEDIATE")));
  absl::StatusOr<Statement> hits = db_.Prepare(
      "UPDATE plans SET hits = hits + ?5 WHERE model_id = ?1 AND platform_fingerprint = ?2 AND "
      "predictor_version = ?3 AND scheduler_config = ?4");
  if (!hits.ok()) return Rollback(hits.status());
  absl::StatusOr<Statement> counter =
      db_.Prepare("UPDATE counters SET value = value + ?1 WHERE name = 'plan_hits'");
  if (!counter.ok()) return Rollback(counter.status());
  for (const UsageBatch::PlanHits& plan : batch.plan_hits) {
    hits->Reset();
    counter->Reset();
    hits->Bind(1, plan.key.model_id)
        .Bind(2, plan.key.platform_fingerprint)
        .Bind(3, plan.key.predictor_version)
        .Bind(4, plan.key.scheduler_config)
        .Bind(5, plan.hits);
    if (absl::Status status = hits->Run(); !status.ok()) return Rollback(status);
    counter->Bind(1, plan.hits);
    if (absl::Status status = counter->Run(); !status.ok()) return Rollback(status);
  }
  absl::StatusOr<Statement> usage = db_.Prepare(
      "INSERT INTO usage(model_id, inferences, total_latency_us, last_unix_s) "
      "SELECT ?1, ?2, ?3, ?4 WHERE EXISTS (SELECT 1 FROM models WHERE id = ?1) "
      "ON CONFLICT(model_id) DO UPDATE SET inferences = inferences + ?2, "
      "total_latency_us = total_latency_us + ?3, last_unix_s = max(last_unix_s, ?4)");
  if (!usage.ok()) return Rollback(usage.status());
  for (const UsageRecord& model : batch.models) {
    usage->Reset();
    usage->Bind(1, model.model_id)
        .Bind(2, model.inferences)
        .Bind(3, model.total_latency_us)
        .Bind(4, model.last_unix_s);
    if (absl::Status status = usage->Run(); !status.ok()) return Rollback(status);
  }
  if (absl::Status status = db_.Exec("COMMIT"); !status.ok()) return Rollback(status);
  return absl::OkStatus();
}

absl::StatusOr<UsageRecord> Store::GetUsage(const std::string& model_id) {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt = db_.Prepare(
      "SELECT model_id, inferences, total_latency_us, last_unix_s FROM usage WHERE model_id = ?");
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, model_id);
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return Annotate(row.status());
  if (!*row) return absl::NotFoundError(absl::StrCat("model ", model_id, " has never run"));
  UsageRecord usage;
  usage.model_id = stmt->ColumnText(0);
  usage.inferences = stmt->ColumnInt(1);
  usage.total_latency_us = stmt->ColumnDouble(2);
  usage.last_unix_s = stmt->ColumnInt(3);
  return usage;
}

absl::Status Store::PutCalibration(const CalibrationRecord& record) {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt = db_.Prepare(
      "INSERT OR REPLACE INTO calibrations(platform_key, predictor_version, params_json, "
      "report_json, created_unix_s) VALUES (?, ?, ?, ?, ?)");
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, record.platform_key)
      .Bind(2, record.predictor_version)
      .Bind(3, record.params_json)
      .Bind(4, record.report_json)
      .Bind(5, record.created_unix_s != 0 ? record.created_unix_s : NowUnixSeconds());
  return Annotate(stmt->Run());
}

absl::StatusOr<std::optional<CalibrationRecord>> Store::LookupCalibration(
    const std::string& platform_key) {
  sync::MutexLock lock(&mu_);
  absl::StatusOr<Statement> stmt = db_.Prepare(
      "SELECT platform_key, predictor_version, params_json, report_json, created_unix_s "
      "FROM calibrations WHERE platform_key = ?");
  if (!stmt.ok()) return Annotate(stmt.status());
  stmt->Bind(1, platform_key);
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return Annotate(row.status());
  if (!*row) return std::optional<CalibrationRecord>();
  CalibrationRecord record;
  record.platform_key = stmt->ColumnText(0);
  record.predictor_version = stmt->ColumnText(1);
  record.params_json = stmt->ColumnText(2);
  record.report_json = stmt->ColumnText(3);
  record.created_unix_s = stmt->ColumnInt(4);
  return std::optional<CalibrationRecord>(std::move(record));
}

absl::StatusOr<CacheStats> Store::Stats() {
  sync::MutexLock lock(&mu_);
  CacheStats stats;
  stats.path = path_;
  PSCHED_CACHE_ASSIGN_OR_RETURN(stats.models, db_.QueryInt("SELECT count(*) FROM models"));
  PSCHED_CACHE_ASSIGN_OR_RETURN(stats.plans, db_.QueryInt("SELECT count(*) FROM plans"));
  PSCHED_CACHE_ASSIGN_OR_RETURN(
      stats.hits, db_.QueryInt("SELECT value FROM counters WHERE name = 'plan_hits'"));
  PSCHED_CACHE_ASSIGN_OR_RETURN(
      stats.misses, db_.QueryInt("SELECT value FROM counters WHERE name = 'plan_misses'"));
  std::error_code ec;
  for (const char* suffix : {"", "-wal"}) {
    uintmax_t size = std::filesystem::file_size(path_ + suffix, ec);
    if (!ec) stats.db_bytes += static_cast<int64_t>(size);
  }
  return stats;
}

absl::StatusOr<PurgeResult> Store::Purge(bool include_models) {
  sync::MutexLock lock(&mu_);
  PurgeResult result;
  PSCHED_CACHE_RETURN_IF_ERROR(Annotate(db_.Exec("BEGIN IMMEDIATE")));
  absl::Status status = db_.Exec("DELETE FROM plans");
  result.plans_removed = db_.Changes();
  if (status.ok() && include_models) {
    status = db_.Exec("DELETE FROM models");
    result.models_removed = db_.Changes();
  }
  if (status.ok()) status = db_.Exec("COMMIT");
  if (!status.ok()) {
    db_.Exec("ROLLBACK").IgnoreError();
    return Annotate(status);
  }
  // Give the freed pages back to the file system; a purge is how operators reclaim space.
  db_.Exec("PRAGMA wal_checkpoint(TRUNCATE); VACUUM").IgnoreError();
  return result;
}

}  // namespace psched::cache
