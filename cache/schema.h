// The plan cache's SQLite schema and its migrations.
//
// The schema version lives in `PRAGMA user_version`. Migrations are applied in order, each
// in its own transaction, so a database written by any older pschedd opens in a newer one;
// a database from a newer pschedd (a version above kSchemaVersion) is refused rather than
// guessed at. Free functions over a Connection; no state, no thread-safety concerns of their
// own.
#pragma once

#include <cstdint>

#include "absl/status/status.h"
#include "cache/sqlite.h"

namespace psched::cache {

// Version 1: models + plans. Version 2: model flags, per-plan hit counts, usage stats and
// global hit/miss counters. Version 3: calibrations. Version 4: the input shapes a model
// was registered with. Version 5: model bytes in chunks (model_chunks), so a model is not
// bounded by SQLite's length limit for one blob. Version 6: whether a plan came from a
// plan bundle (plans.imported), so the daemon says so after a restart too. Version 7: the
// owner of each model (per-user quotas).
inline constexpr int64_t kSchemaVersion = 7;

// Brings the database at `db` up to kSchemaVersion.
absl::Status Migrate(Connection& db);

// Checks, at start-up rather than at the first request, that every table of the current
// schema exists (FAILED_PRECONDITION naming the missing one) and that the database takes
// writes (FAILED_PRECONDITION for a read-only file or mount). Writes nothing.
absl::Status CheckSchemaUsable(Connection& db);

}  // namespace psched::cache
