#include "store/internal/sqlite_db.h"

#include <chrono>
#include <filesystem>
#include <thread>

#include "gradscope/core/error.h"

namespace gradscope::internal {

bool passes_while_writer_works(int code) {
  return code == SQLITE_READONLY_RECOVERY || code == SQLITE_READONLY_CANTINIT || code == SQLITE_BUSY_RECOVERY;
}

std::string sqlite_message(const std::string& path, sqlite3* db, int rc) {
  const int primary = rc & 0xff;
  std::string what;
  if (primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB)
    what = "corrupt or not a gradscope run";
  else if (primary == SQLITE_CANTOPEN)
    what = "cannot open";
  else if (primary == SQLITE_IOERR)
    what = "i/o error (truncated or unreadable file?)";
  else if (primary == SQLITE_FULL)
    what = "disk full";
  else if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    what = "locked by another process";
  else
    what = "sqlite error";
  const char* detail = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  return "run database '" + path + "': " + what + " (" + detail + ")";
}

namespace {

// Runs `attempt` (an SQLite call returning its result code) again while it fails in a way a live
// writer's start causes for a moment, for up to two seconds; returns the last result.
template <class Attempt>
int waiting_out_writer(sqlite3* db, const Attempt& attempt) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  for (;;) {
    const int rc = attempt();
    if (rc == SQLITE_OK || rc == SQLITE_ROW || rc == SQLITE_DONE) return rc;
    if (!passes_while_writer_works(sqlite3_extended_errcode(db)) || std::chrono::steady_clock::now() >= deadline)
      return rc;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
}

}  // namespace

Statement::Statement(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
  // Preparing reads the schema, so it meets the same moments as a first step.
  const int rc = waiting_out_writer(db, [&] { return sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr); });
  if (rc != SQLITE_OK) fail(rc);
}

Statement::Statement(Statement&& o) noexcept
    : db_(o.db_), stmt_(o.stmt_), path_(std::move(o.path_)), gave_row_(o.gave_row_) {
  o.stmt_ = nullptr;
}

Statement& Statement::operator=(Statement&& o) noexcept {
  if (this != &o) {
    sqlite3_finalize(stmt_);
    db_ = o.db_;
    stmt_ = o.stmt_;
    path_ = std::move(o.path_);
    gave_row_ = o.gave_row_;
    o.stmt_ = nullptr;
  }
  return *this;
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

void Statement::fail(int rc) const { throw Error(sqlite_message(path_, db_, rc)); }

void Statement::bind(int index, int64_t value) {
  const int rc = sqlite3_bind_int64(stmt_, index, value);
  if (rc != SQLITE_OK) fail(rc);
}

void Statement::bind(int index, std::string_view text) {
  const int rc = sqlite3_bind_text(stmt_, index, text.data(), static_cast<int>(text.size()), SQLITE_TRANSIENT);
  if (rc != SQLITE_OK) fail(rc);
}

void Statement::bind_double(int index, double value) {
  const int rc = value != value ? sqlite3_bind_null(stmt_, index) : sqlite3_bind_double(stmt_, index, value);
  if (rc != SQLITE_OK) fail(rc);
}

void Statement::bind_blob(int index, const void* data, std::size_t size) {
  const int rc = sqlite3_bind_blob64(stmt_, index, data, size, SQLITE_STATIC);
  if (rc != SQLITE_OK) fail(rc);
}

bool Statement::step() {
  const int rc = gave_row_ ? sqlite3_step(stmt_) : waiting_out_writer(db_, [&] {
    const int r = sqlite3_step(stmt_);
    if (r != SQLITE_ROW && r != SQLITE_DONE) sqlite3_reset(stmt_);  // to try again; keeps the bindings
    return r;
  });
  if (rc == SQLITE_ROW) {
    gave_row_ = true;
    return true;
  }
  if (rc == SQLITE_DONE) return false;
  fail(rc);
}

void Statement::reset() {
  gave_row_ = false;
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

std::string Statement::column_text(int col) const {
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
  return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : std::string();
}

std::string_view Statement::column_blob(int col) const {
  const auto* p = static_cast<const char*>(sqlite3_column_blob(stmt_, col));
  return p ? std::string_view(p, static_cast<std::size_t>(sqlite3_column_bytes(stmt_, col))) : std::string_view();
}

namespace {

// A file: URI for `path` (https://www.sqlite.org/uri.html): absolute, with every byte outside
// the unreserved set percent-encoded, so '?', '#' and '%' in a name stay part of the path.
std::string file_uri(const std::string& path, const char* query) {
  std::error_code ec;
  std::string abs = std::filesystem::absolute(path, ec).string();
  if (ec) abs = path;
  static const char* kHex = "0123456789ABCDEF";
  std::string uri = "file://";
  for (const unsigned char ch : abs) {
    const bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z');
    if (alnum || ch == '/' || ch == '-' || ch == '.' || ch == '_' || ch == '~') {
      uri += static_cast<char>(ch);
    } else {
      uri += '%';
      uri += kHex[ch >> 4];
      uri += kHex[ch & 15];
    }
  }
  return uri + "?" + query;
}

}  // namespace

Database::Database(const std::string& path, OpenMode mode) : path_(path) {
  std::string name = path;
  int flags = SQLITE_OPEN_NOMUTEX;
  switch (mode) {
    case OpenMode::kCreate: flags |= SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE; break;
    case OpenMode::kReadWrite: flags |= SQLITE_OPEN_READWRITE; break;
    case OpenMode::kReadOnly:
      flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
      name = file_uri(path, "mode=ro&readonly_shm=1");
      break;
    case OpenMode::kImmutable:
      flags |= SQLITE_OPEN_READONLY | SQLITE_OPEN_URI;
      name = file_uri(path, "mode=ro&immutable=1");
      break;
  }
  const int rc = sqlite3_open_v2(name.c_str(), &db_, flags, nullptr);
  if (rc != SQLITE_OK) {
    const std::string message = sqlite_message(path, db_, rc);
    sqlite3_close(db_);
    throw Error(message);
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, 10000);
}

Database::~Database() { sqlite3_close(db_); }

void Database::exec(const char* sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) throw Error(sqlite_message(path_, db_, rc));
}

int64_t Database::query_int(const char* sql) {
  Statement s = prepare(sql);
  return s.step() ? s.column_int(0) : 0;
}

}  // namespace gradscope::internal
