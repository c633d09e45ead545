// Thin RAII wrappers over the SQLite C API; every error names the database file.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace gradscope::internal {

/// True for the failures a live writer causes a read-only reader for a moment, while it builds
/// the log's index (SQLITE_READONLY_RECOVERY, SQLITE_READONLY_CANTINIT, SQLITE_BUSY_RECOVERY):
/// such a reader cannot build one itself. A statement retries them for up to two seconds.
bool passes_while_writer_works(int code);

/// One prepared statement. Reset before each reuse with reset().
class Statement {
 public:
  Statement() = default;
  Statement(sqlite3* db, const std::string& path, const char* sql);
  Statement(Statement&& o) noexcept;
  Statement& operator=(Statement&& o) noexcept;
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  ~Statement();

  void bind(int index, int64_t value);
  void bind(int index, std::string_view text);
  /// A REAL; NaN is bound as NULL (SQLite stores no NaN).
  void bind_double(int index, double value);
  void bind_blob(int index, const void* data, std::size_t size);
  /// True when a row is available, false when done; throws Error otherwise. A failure
  /// that passes_while_writer_works() before the first row is waited out.
  bool step();
  void reset();

  int64_t column_int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double column_double(int col) const { return sqlite3_column_double(stmt_, col); }
  /// SQLITE_INTEGER, SQLITE_FLOAT, SQLITE_TEXT, SQLITE_BLOB or SQLITE_NULL.
  int column_type(int col) const { return sqlite3_column_type(stmt_, col); }
  std::string column_text(int col) const;
  std::string_view column_blob(int col) const;

 private:
  [[noreturn]] void fail(int rc) const;
  sqlite3* db_ = nullptr;
  sqlite3_stmt* stmt_ = nullptr;
  std::string path_;
  bool gave_row_ = false;  ///< since the last reset: a retry then would repeat rows
};

/// How a connection may touch the files of a database.
enum class OpenMode {
  kCreate,     ///< read-write, creating the file when missing (the run writer)
  kReadWrite,  ///< read-write, the file must exist
  /// Read-only, also for the -wal and -shm files: never creates, writes, checkpoints or
  /// deletes anything (SQLite's mode=ro with readonly_shm=1). With no live writer, SQLite
  /// rebuilds the log's index in private memory. Needs an existing -shm beside a -wal.
  kReadOnly,
  /// Read-only and lock-free, for a database whose log is empty or absent: the file alone
  /// holds every committed transaction (SQLite's immutable=1, which ignores any log).
  kImmutable,
};

/// An open database connection.
class Database {
 public:
  /// Opens `path` in `mode`. Throws Error naming the file.
  Database(const std::string& path, OpenMode mode);
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;
  ~Database();

  /// Runs statements that return no rows we need.
  void exec(const char* sql);
  Statement prepare(const char* sql) { return Statement(db_, path_, sql); }
  /// Result of a one-value query such as "PRAGMA user_version".
  int64_t query_int(const char* sql);
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
};

/// A read transaction, ended however the reading scope is left: every query in it sees one
/// snapshot of a run that a writer may be extending.
class ReadTransaction {
 public:
  explicit ReadTransaction(Database& db) : db_(db) { db.exec("BEGIN"); }
  ~ReadTransaction() { sqlite3_exec(db_.handle(), "COMMIT", nullptr, nullptr, nullptr); }
  ReadTransaction(const ReadTransaction&) = delete;
  ReadTransaction& operator=(const ReadTransaction&) = delete;

 private:
  Database& db_;
};

/// The Error message for an SQLite failure: "run database '<path>': <what> (<sqlite text>)".
std::string sqlite_message(const std::string& path, sqlite3* db, int rc);

}  // namespace gradscope::internal
