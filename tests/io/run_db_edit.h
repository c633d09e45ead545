// Editing a saved run's database in the store tests: SQL, and rows whose checksum verifies
// (what a buggy or hostile writer would leave, not damage).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <string>

#include "store/internal/record_codec.h"

namespace gradscope::test {

/// Opens the run's database for an edit.
struct Edit {
  explicit Edit(const std::filesystem::path& dir) { EXPECT_EQ(sqlite3_open((dir / "run.db").c_str(), &h), SQLITE_OK); }
  ~Edit() { sqlite3_close(h); }
  void sql(const std::string& statements) {
    EXPECT_EQ(sqlite3_exec(h, statements.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  }
  // Puts a row into `table` with a checksum that verifies: a buggy or hostile writer, not damage.
  void put_row(const std::string& table, int64_t step, int64_t count, const std::string& blob) {
    sqlite3_stmt* s = nullptr;
    const std::string q = "INSERT OR REPLACE INTO " + table + "(step, n_records, checksum, records) VALUES(?, ?, ?, ?)";
    ASSERT_EQ(sqlite3_prepare_v2(h, q.c_str(), -1, &s, nullptr), SQLITE_OK);
    sqlite3_bind_int64(s, 1, step);
    sqlite3_bind_int64(s, 2, count);
    sqlite3_bind_int64(s, 3, internal::table_step_checksum(table, step, blob));
    sqlite3_bind_blob(s, 4, blob.data(), static_cast<int>(blob.size()), SQLITE_TRANSIENT);
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
  }
  // What an older writer left: `drop` (its tables and meta counts gone), then meta's
  // schema_version (checksum verifying) and the header at `version`.
  void older_schema(int version, const std::string& drop) {
    sql(drop + "PRAGMA user_version = " + std::to_string(version) + ";");
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(h, "UPDATE meta SET value = ?, checksum = ? WHERE key = 'schema_version'", -1, &s,
                                 nullptr),
              SQLITE_OK);
    const std::string v = std::to_string(version);
    sqlite3_bind_text(s, 1, v.c_str(), -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, internal::row_checksum({"schema_version", v}));
    EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
    sqlite3_finalize(s);
  }
  sqlite3* h = nullptr;
};

}  // namespace gradscope::test
