// A thin RAII layer over the SQLite C API: a Connection owns one sqlite3 handle, a
// Statement owns one prepared statement. Every failure becomes an absl::Status whose message
// names the operation and SQLite's own explanation; SQLITE_FULL maps to RESOURCE_EXHAUSTED,
// SQLITE_READONLY / SQLITE_CANTOPEN / SQLITE_PERM to FAILED_PRECONDITION and SQLITE_CORRUPT /
// SQLITE_NOTADB to DATA_LOSS, so callers can tell a full disk or a corrupt file from a bug.
//
// Thread-safety: none. A Connection and its Statements must be used by one thread at a time
// (cache::Store serialises access with its own mutex).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace psched::cache {

// Converts a SQLite result code into a Status: "<what>: <sqlite message>".
absl::Status SqliteError(sqlite3* db, int code, absl::string_view what);

class Statement {
 public:
  Statement(Statement&&) = default;
  Statement& operator=(Statement&&) = default;

  // Binds are 1-based like SQLite's.
  Statement& Bind(int index, absl::string_view text);
  Statement& BindBlob(int index, absl::string_view bytes);
  Statement& Bind(int index, int64_t value);
  Statement& Bind(int index, double value);

  // Advances to the next row: true when a row is available, false when done.
  absl::StatusOr<bool> Step();
  // Steps until done; for statements that return no rows.
  absl::Status Run();
  // Makes the statement ready to bind and run again (bindings are kept until rebound).
  void Reset();

  int64_t ColumnInt(int column) const;
  double ColumnDouble(int column) const;
  std::string ColumnText(int column) const;
  std::string ColumnBlob(int column) const;
  // The blob without a copy; valid until the next Step() or Reset().
  absl::string_view ColumnBlobView(int column) const;
  bool ColumnIsNull(int column) const;

 private:
  friend class Connection;
  struct Finalizer {
    void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
  };
  Statement(sqlite3* db, sqlite3_stmt* stmt, std::string sql)
      : db_(db), stmt_(stmt), sql_(std::move(sql)) {}

  sqlite3* db_;
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt_;
  std::string sql_;
  // The first bind failure, reported by the next Step().
  absl::Status bind_status_;
};

class Connection {
 public:
  // Opens (creating if needed) the database file at `path`.
  static absl::StatusOr<Connection> Open(const std::string& path);

  Connection(Connection&&) = default;
  Connection& operator=(Connection&&) = default;

  absl::StatusOr<Statement> Prepare(absl::string_view sql);
  // Runs one or more statements that return no rows.
  absl::Status Exec(absl::string_view sql);
  // Runs a single-value query ("PRAGMA user_version").
  absl::StatusOr<int64_t> QueryInt(absl::string_view sql);
  absl::StatusOr<std::string> QueryText(absl::string_view sql);
  int64_t Changes() const { return sqlite3_changes64(db_.get()); }

  sqlite3* raw() const { return db_.get(); }

 private:
  struct Closer {
    void operator()(sqlite3* db) const { sqlite3_close_v2(db); }
  };
  explicit Connection(sqlite3* db) : db_(db) {}

  std::unique_ptr<sqlite3, Closer> db_;
};

}  // namespace psched::cache
