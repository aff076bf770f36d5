#include "cache/schema.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace psched::cache {
namespace {

// kMigrations[v] takes the schema from version v to v + 1. Never edit a shipped entry:
// databases in the field were created by it.
constexpr absl::string_view kMigrations[] = {
    // 0 -> 1
    R"sql(
CREATE TABLE models (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  onnx BLOB NOT NULL,
  size_bytes INTEGER NOT NULL,
  summary_json TEXT NOT NULL,
  created_unix_s INTEGER NOT NULL
);
CREATE TABLE plans (
  model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  platform_fingerprint TEXT NOT NULL,
  predictor_version TEXT NOT NULL,
  scheduler_config TEXT NOT NULL,
  scheduler TEXT NOT NULL,
  schedule_json TEXT NOT NULL,
  makespan_us REAL NOT NULL,
  planning_ms REAL NOT NULL,
  created_unix_s INTEGER NOT NULL,
  PRIMARY KEY (model_id, platform_fingerprint, predictor_version, scheduler_config)
);
)sql",
    // 1 -> 2
    R"sql(
ALTER TABLE models ADD COLUMN synthesize_weights INTEGER NOT NULL DEFAULT 0;
ALTER TABLE plans ADD COLUMN hits INTEGER NOT NULL DEFAULT 0;
CREATE TABLE usage (
  model_id TEXT PRIMARY KEY REFERENCES models(id) ON DELETE CASCADE,
  inferences INTEGER NOT NULL DEFAULT 0,
  total_latency_us REAL NOT NULL DEFAULT 0,
  last_unix_s INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE counters (
  name TEXT PRIMARY KEY,
  value INTEGER NOT NULL
);
INSERT INTO counters(name, value) VALUES ('plan_hits', 0), ('plan_misses', 0);
)sql",
    // 2 -> 3
    R"sql(
CREATE TABLE calibrations (
  platform_key TEXT PRIMARY KEY,
  predictor_version TEXT NOT NULL,
  params_json TEXT NOT NULL,
  report_json TEXT NOT NULL,
  created_unix_s INTEGER NOT NULL
);
)sql",
    // 3 -> 4
    R"sql(
ALTER TABLE models ADD COLUMN input_shapes TEXT NOT NULL DEFAULT '';
)sql",
    // 4 -> 5: each stored blob becomes chunk 0 of its model (it is under the length limit,
    // or it could not have been stored).
    R"sql(
CREATE TABLE model_chunks (
  model_id TEXT NOT NULL REFERENCES models(id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  bytes BLOB NOT NULL,
  PRIMARY KEY (model_id, seq)
);
INSERT INTO model_chunks(model_id, seq, bytes) SELECT id, 0, onnx FROM models;
ALTER TABLE models DROP COLUMN onnx;
)sql",
    // 5 -> 6
    R"sql(
ALTER TABLE plans ADD COLUMN imported INTEGER NOT NULL DEFAULT 0;
)sql",
    // 6 -> 7: who registered each model (the per-user quotas count it); '' for models
    // stored before, which count against no user.
    R"sql(
ALTER TABLE models ADD COLUMN owner TEXT NOT NULL DEFAULT '';
CREATE INDEX models_by_owner ON models(owner);
)sql",
};
static_assert(std::size(kMigrations) == kSchemaVersion);

}  // namespace

absl::Status Migrate(Connection& db) {
  absl::StatusOr<int64_t> version = db.QueryInt("PRAGMA user_version");
  if (!version.ok()) return version.status();
  if (*version > kSchemaVersion) {
    return absl::FailedPreconditionError(
        absl::StrCat("cache schema version ", *version, " is newer than this pschedd understands (",
                     kSchemaVersion, "); use a newer pschedd or move the database aside"));
  }
  for (int64_t v = *version; v < kSchemaVersion; ++v) {
    std::string script = absl::StrCat("BEGIN IMMEDIATE;", kMigrations[v],
                                      "PRAGMA user_version = ", v + 1, "; COMMIT;");
    absl::Status status = db.Exec(script);
    if (!status.ok()) {
      db.Exec("ROLLBACK").IgnoreError();
      return absl::Status(status.code(), absl::StrCat("migrating the cache schema from version ", v,
                                                      " to ", v + 1, ": ", status.message()));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckSchemaUsable(Connection& db) {
  for (const char* table :
       {"models", "model_chunks", "plans", "usage", "counters", "calibrations"}) {
    absl::StatusOr<int64_t> found = db.QueryInt(absl::StrCat(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '", table, "'"));
    if (!found.ok()) return found.status();
    if (*found == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "table '", table, "' is missing although the schema version is ", kSchemaVersion,
          "; the database was edited by hand: move it aside to start with an empty cache"));
    }
  }
  // A write that changes nothing still needs the write lock and a writable file.
  absl::Status probe = db.Exec(
      "BEGIN IMMEDIATE; UPDATE counters SET value = value WHERE name = 'plan_hits'; COMMIT;");
  if (!probe.ok()) {
    db.Exec("ROLLBACK").IgnoreError();
    return absl::FailedPreconditionError(absl::StrCat("the database does not take writes (",
                                                      probe.message(),
                                                      "); check the file's owner, mode and mount"));
  }
  return absl::OkStatus();
}

}  // namespace psched::cache
