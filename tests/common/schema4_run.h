// Turning a saved run into what a schema-4 writer left (before the run's documents moved into
// run.db): no documents or interventions table, nor their meta keys, and version 4 in meta and
// in the header. The older layouts are tested with it: they must still read, and upgrade.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "store/internal/record_codec.h"

namespace gradscope::test {

inline void make_schema4(const std::filesystem::path& run) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((run / "run.db").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db,
                         "DROP TABLE documents; DROP TABLE interventions; DELETE FROM meta WHERE key IN "
                         "('document_rows', 'document_names', 'intervention_rows'); PRAGMA user_version = 4;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  EXPECT_EQ(sqlite3_prepare_v2(db, "UPDATE meta SET value = '4', checksum = ? WHERE key = 'schema_version'", -1, &s, nullptr),
            SQLITE_OK);
  sqlite3_bind_int64(s, 1, internal::row_checksum({"schema_version", "4"}));
  EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

}  // namespace gradscope::test
