#include "cache/sqlite.h"

#include "absl/strings/str_cat.h"

namespace psched::cache {

absl::Status SqliteError(sqlite3* db, int code, absl::string_view what) {
  const char* detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(code);
  std::string message = absl::StrCat(what, ": ", detail);
  switch (code & 0xff) {
    case SQLITE_FULL:
      return absl::ResourceExhaustedError(
          absl::StrCat(message, " (disk full or the cache's size limit, cache_max_bytes, reached)"));
    case SQLITE_READONLY:
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
      return absl::FailedPreconditionError(message);
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      return absl::DataLossError(message);
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return absl::UnavailableError(message);
    case SQLITE_CONSTRAINT:
      return absl::AlreadyExistsError(message);
    default:
      return absl::InternalError(message);
  }
}

Statement& Statement::Bind(int index, absl::string_view text) {
  int rc = sqlite3_bind_text(stmt_.get(), index, text.data(), static_cast<int>(text.size()),
                             SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = SqliteError(db_, rc, "bind " + sql_);
  return *this;
}

Statement& Statement::BindBlob(int index, absl::string_view bytes) {
  int rc = sqlite3_bind_blob64(stmt_.get(), index, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = SqliteError(db_, rc, "bind " + sql_);
  return *this;
}

Statement& Statement::Bind(int index, int64_t value) {
  int rc = sqlite3_bind_int64(stmt_.get(), index, value);
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = SqliteError(db_, rc, "bind " + sql_);
  return *this;
}

Statement& Statement::Bind(int index, double value) {
  int rc = sqlite3_bind_double(stmt_.get(), index, value);
  if (rc != SQLITE_OK && bind_status_.ok()) bind_status_ = SqliteError(db_, rc, "bind " + sql_);
  return *this;
}

absl::StatusOr<bool> Statement::Step() {
  if (!bind_status_.ok()) return bind_status_;
  int rc = sqlite3_step(stmt_.get());
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  return SqliteError(db_, rc, sql_);
}

absl::Status Statement::Run() {
  while (true) {
    absl::StatusOr<bool> row = Step();
    if (!row.ok()) return row.status();
    if (!*row) return absl::OkStatus();
  }
}

void Statement::Reset() {
  sqlite3_reset(stmt_.get());
  bind_status_ = absl::OkStatus();
}

int64_t Statement::ColumnInt(int column) const { return sqlite3_column_int64(stmt_.get(), column); }

double Statement::ColumnDouble(int column) const {
  return sqlite3_column_double(stmt_.get(), column);
}

std::string Statement::ColumnText(int column) const {
  const unsigned char* text = sqlite3_column_text(stmt_.get(), column);
  int size = sqlite3_column_bytes(stmt_.get(), column);
  return text == nullptr ? std::string() : std::string(reinterpret_cast<const char*>(text), size);
}

std::string Statement::ColumnBlob(int column) const {
  const void* blob = sqlite3_column_blob(stmt_.get(), column);
  int size = sqlite3_column_bytes(stmt_.get(), column);
  return blob == nullptr ? std::string() : std::string(static_cast<const char*>(blob), size);
}

absl::string_view Statement::ColumnBlobView(int column) const {
  const void* blob = sqlite3_column_blob(stmt_.get(), column);
  int size = sqlite3_column_bytes(stmt_.get(), column);
  return blob == nullptr ? absl::string_view()
                         : absl::string_view(static_cast<const char*>(blob), size);
}

bool Statement::ColumnIsNull(int column) const {
  return sqlite3_column_type(stmt_.get(), column) == SQLITE_NULL;
}

absl::StatusOr<Connection> Connection::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(
      path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  Connection connection(db);
  if (rc != SQLITE_OK) return SqliteError(db, rc, absl::StrCat("cannot open ", path));
  sqlite3_extended_result_codes(db, 1);
  return connection;
}

absl::StatusOr<Statement> Connection::Prepare(absl::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_.get(), sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(db_.get(), rc, absl::StrCat("prepare ", sql));
  }
  return Statement(db_.get(), stmt, std::string(sql));
}

absl::Status Connection::Exec(absl::string_view sql) {
  std::string owned(sql);
  int rc = sqlite3_exec(db_.get(), owned.c_str(), nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) return SqliteError(db_.get(), rc, owned);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> Connection::QueryInt(absl::string_view sql) {
  absl::StatusOr<Statement> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::InternalError(absl::StrCat(sql, ": returned no row"));
  return stmt->ColumnInt(0);
}

absl::StatusOr<std::string> Connection::QueryText(absl::string_view sql) {
  absl::StatusOr<Statement> stmt = Prepare(sql);
  if (!stmt.ok()) return stmt.status();
  absl::StatusOr<bool> row = stmt->Step();
  if (!row.ok()) return row.status();
  if (!*row) return absl::InternalError(absl::StrCat(sql, ": returned no row"));
  return stmt->ColumnText(0);
}

}  // namespace psched::cache
