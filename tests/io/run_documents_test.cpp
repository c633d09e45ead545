// A run's documents (schema 5): kept in run.db, read back exactly, checked like every row;
// runs of the older layouts (schema 4 with side files) read as before, and upgrade in place.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>

#include "../common/error_of.h"
#include "gradscope/core/embedding/rows.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "../common/schema4_run.h"
#include "run_db_edit.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;
using test::fresh_dir;
using test::make_schema4;

// A run of two steps, closed.
fs::path make_run(const std::string& name) {
  const fs::path dir = fresh_dir(name) / "run";
  RunWriter w(dir.string());
  for (int64_t step = 0; step < 2; ++step) {
    Record r;
    r.step = step;
    r.node = "fc";
    r.site = Site::kParam;
    r.stats = test::stats_for(step, 0);
    w.add(r);
  }
  w.close();
  return dir;
}

std::string text_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

TEST(RunDocuments, ANewRunKeepsItsDocumentsInRunDb) {
  const fs::path dir = make_run("docs-new");
  EXPECT_EQ(RunReader(dir.string()).metadata().schema_version, kRunSchemaVersion);
  EXPECT_FALSE(read_run_document(dir.string(), "trees.json", 1 << 20).has_value());
  const std::string body = "{\"a\": [1, 2, 3], \"text\": \"caf\xc3\xa9\"}\n";
  put_run_document(dir.string(), "trees.json", body);
  const std::optional<RunDocument> got = read_run_document(dir.string(), "trees.json", 1 << 20);
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->text, body);
  EXPECT_TRUE(got->in_database);
  EXPECT_EQ(got->where, "run database '" + (dir / "run.db").string() + "', document 'trees.json'");
  EXPECT_FALSE(fs::exists(dir / "trees.json"));  // nothing beside run.db
  // Replaced, not added: one row, and meta counts it.
  put_run_document((dir / "run.db").string(), "trees.json", "{}");
  EXPECT_EQ(read_run_document(dir.string(), "trees.json", 1 << 20)->text, "{}");
  put_run_document(dir.string(), "units.json", "[]");
  EXPECT_EQ(stored_run_documents(dir.string()), (std::vector<std::string>{"trees.json", "units.json"}));
  // The records are untouched.
  RunReader reader(dir.string());
  EXPECT_EQ(reader.step_count(), 2);
  EXPECT_TRUE(reader.warnings().empty());
  fs::remove_all(dir.parent_path());
}

TEST(RunDocuments, WhatIsNotARunDocumentOrNotARunIsRefused) {
  const fs::path dir = make_run("docs-bad");
  EXPECT_THAT(error_of([&] { put_run_document(dir.string(), "notes.txt", "x"); }),
              HasSubstr("document 'notes.txt': not a document gradscope keeps in a run"));
  EXPECT_THAT(error_of([&] { read_run_document(dir.string(), "../run.db", 100); }),
              HasSubstr("not a document gradscope keeps in a run"));
  const fs::path empty = dir.parent_path() / "empty";
  fs::create_directories(empty);
  EXPECT_EQ(error_of([&] { put_run_document(empty.string(), "rows.json", "{}"); }),
            "run database '" + (empty / "run.db").string() +
                "': no such file, so nowhere to keep rows.json (write the run first: a RunWriter, or an Audit "
                "with a run)");
  EXPECT_FALSE(fs::exists(empty / "run.db"));
  {
    test::Edit e(empty);  // an SQLite database, but not a gradscope run
    e.sql("CREATE TABLE t(x)");
  }
  EXPECT_EQ(error_of([&] { put_run_document(empty.string(), "rows.json", "{}"); }),
            "run database '" + (empty / "run.db").string() + "': not a gradscope run (no schema version)");
  fs::remove_all(dir.parent_path());
}

TEST(RunDocuments, ADamagedOrOversizedDocumentIsAnErrorNamingIt) {
  const fs::path dir = make_run("docs-damage");
  put_run_document(dir.string(), "rows.json", "{\"rows\": 12}");
  const std::string where = "run database '" + (dir / "run.db").string() + "', document 'rows.json': ";
  EXPECT_EQ(error_of([&] { read_run_document(dir.string(), "rows.json", 5); }),
            where + "larger than the limit of 5 bytes (12 bytes)");
  {
    test::Edit e(dir);
    e.sql("UPDATE documents SET body = '{\"rows\": 13}' WHERE name = 'rows.json'");
  }
  EXPECT_EQ(error_of([&] { read_run_document(dir.string(), "rows.json", 100); }), where + "damaged (checksum mismatch)");
  {
    test::Edit e(dir);
    e.sql("UPDATE documents SET body = x'00' WHERE name = 'rows.json'");
  }
  EXPECT_EQ(error_of([&] { read_run_document(dir.string(), "rows.json", 100); }),
            where + "columns are not (text, integer) (a damaged table)");
  // Export reads every document: the damaged one stops it, named.
  {
    test::Edit e(dir);
    e.sql("UPDATE documents SET body = '{\"rows\": 13}' WHERE name = 'rows.json'");
  }
  EXPECT_EQ(error_of([&] { export_run_documents(dir.string(), (dir.parent_path() / "out").string()); }),
            where + "damaged (checksum mismatch)");
  fs::remove_all(dir.parent_path());
}

// A run with two documents, one of them then deleted by one SQL statement.
fs::path run_that_lost(const std::string& test_name, const std::string& lost) {
  const fs::path dir = make_run(test_name);
  put_run_document(dir.string(), "embedding.json", "{\"e\": 1}");
  put_run_document(dir.string(), "units.json", "{\"u\": 2}");
  test::Edit e(dir);
  e.sql("DELETE FROM documents WHERE name = '" + lost + "'");
  return dir;
}

// The committed names are in meta: a lost document is an Error naming it, whichever document is
// asked for (found or not), and in every reader that looks: the list, export, a partial reader.
TEST(RunDocuments, ALostDocumentIsAnErrorNamingItWhicheverIsAskedFor) {
  const fs::path dir = run_that_lost("docs-lost", "embedding.json");
  const std::string lost = "run database '" + (dir / "run.db").string() +
                           "', document 'embedding.json': missing (meta says it was committed; table documents "
                           "does not hold it)";
  for (const char* name : {"embedding.json", "units.json", "trees.json"})
    EXPECT_EQ(error_of([&] { read_run_document(dir.string(), name, 100); }), lost) << name;
  EXPECT_EQ(error_of([&] { stored_run_documents(dir.string()); }), lost);
  EXPECT_EQ(error_of([&] { export_run_documents(dir.string(), (dir.parent_path() / "out").string()); }), lost);
  RunReader partial(dir.string(), ReadOptions{true});
  EXPECT_EQ(error_of([&] { partial.document("units.json", 100); }), lost);
  EXPECT_EQ(error_of([&] { partial.document_names(); }), lost);
  // Saving another document would bless the loss with a new count: refused, the run unchanged.
  EXPECT_EQ(error_of([&] { put_run_document(dir.string(), "trees.json", "{}"); }), lost);
  EXPECT_EQ(error_of([&] { read_run_document(dir.string(), "trees.json", 100); }), lost);
  // A run's records are not its documents: they still read.
  EXPECT_EQ(RunReader(dir.string()).step_count(), 2);
  fs::remove_all(dir.parent_path());
}

// A row meta does not list (a buggy or hostile writer; its checksum verifies) is named too.
TEST(RunDocuments, ADocumentMetaDoesNotListIsAnErrorNamingIt) {
  const fs::path dir = make_run("docs-added");
  put_run_document(dir.string(), "units.json", "{}");
  {
    test::Edit e(dir);
    e.sql("INSERT INTO documents(name, body, checksum) VALUES('trees.json', '{}', " +
          std::to_string(internal::row_checksum({"trees.json", "{}"})) + ")");
  }
  EXPECT_EQ(error_of([&] { read_run_document(dir.string(), "units.json", 100); }),
            "run database '" + (dir / "run.db").string() +
                "', document 'trees.json': not committed (table documents holds it; meta does not list it)");
  fs::remove_all(dir.parent_path());
}

// A run of schema 5 written before the names were kept has the count alone: the loss is still
// an Error, in numbers; and a damaged names row is an Error naming the meta key.
TEST(RunDocuments, WithoutTheCommittedNamesTheCountSaysADocumentWasLost) {
  const fs::path dir = run_that_lost("docs-lost-count", "units.json");
  {
    test::Edit e(dir);
    e.sql("DELETE FROM meta WHERE key = 'document_names'");
  }
  const std::string db = (dir / "run.db").string();
  EXPECT_EQ(error_of([&] { read_run_document(dir.string(), "embedding.json", 100); }),
            "run database '" + db + "': documents: meta says 2 committed, the table has 1");
  EXPECT_EQ(error_of([&] { stored_run_documents(dir.string()); }),
            "run database '" + db + "': documents: meta says 2 committed, the table has 1");
  fs::remove_all(dir.parent_path());

  const fs::path names = make_run("docs-names-damaged");
  put_run_document(names.string(), "units.json", "{}");
  {
    test::Edit e(names);
    e.sql("UPDATE meta SET value = '' WHERE key = 'document_names'");
  }
  EXPECT_EQ(error_of([&] { read_run_document(names.string(), "units.json", 100); }),
            "run database '" + (names / "run.db").string() +
                "': table meta, key 'document_names': damaged (checksum mismatch)");
  fs::remove_all(names.parent_path());
}

// What put_run_document commits beside each document: the count and the names, checksummed.
TEST(RunDocuments, EachDocumentIsCommittedWithTheNamesOfAll) {
  const fs::path dir = make_run("docs-names");
  put_run_document(dir.string(), "units.json", "{}");
  put_run_document(dir.string(), "embedding.json", "{}");
  put_run_document(dir.string(), "units.json", "[]");
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "run.db").c_str(), &h), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(h, "SELECT key, value, checksum FROM meta WHERE key LIKE 'document_%' ORDER BY key", -1,
                               &s, nullptr),
            SQLITE_OK);
  std::vector<std::string> rows;
  while (sqlite3_step(s) == SQLITE_ROW) {
    const std::string key = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    const std::string value = reinterpret_cast<const char*>(sqlite3_column_text(s, 1));
    EXPECT_EQ(sqlite3_column_int64(s, 2), internal::row_checksum({key, value})) << key;
    rows.push_back(key + "=" + value);
  }
  sqlite3_finalize(s);
  sqlite3_close(h);
  EXPECT_EQ(rows, (std::vector<std::string>{"document_names=embedding.json,units.json", "document_rows=2"}));
  fs::remove_all(dir.parent_path());
}

// The layout before schema 5: run.db of version 4 and the side files beside it.
TEST(RunDocuments, ASchema4RunReadsItsSideFilesAndUpgradesInPlace) {
  const fs::path dir = make_run("docs-schema4");
  make_schema4(dir);
  std::ofstream(dir / "trees.json") << "{\"side\": true}";
  {
    RunReader reader(dir.string());
    EXPECT_EQ(reader.metadata().schema_version, 4);
    EXPECT_TRUE(reader.warnings().empty());
    EXPECT_TRUE(reader.document_names().empty());
  }
  std::optional<RunDocument> got = read_run_document(dir.string(), "trees.json", 100, "tree");
  ASSERT_TRUE(got.has_value());
  EXPECT_FALSE(got->in_database);
  EXPECT_EQ(got->text, "{\"side\": true}");
  EXPECT_EQ(got->where, "tree file '" + (dir / "trees.json").string() + "'");
  // Reading never changed the file.
  EXPECT_EQ(RunReader(dir.string()).metadata().schema_version, 4);
  // Writing a document upgrades it: meta and header agree on 6, and run.db's copy wins.
  put_run_document(dir.string(), "trees.json", "{\"side\": false}");
  RunReader upgraded(dir.string());
  EXPECT_EQ(upgraded.metadata().schema_version, kRunSchemaVersion);
  EXPECT_TRUE(upgraded.warnings().empty());
  EXPECT_EQ(upgraded.step_count(), 2);
  got = read_run_document(dir.string(), "trees.json", 100);
  EXPECT_TRUE(got->in_database);
  EXPECT_EQ(got->text, "{\"side\": false}");
  EXPECT_EQ(text_of(dir / "trees.json"), "{\"side\": true}");  // the user's file is left alone
  fs::remove_all(dir.parent_path());
}

// A rerun into the same folder replaces run.db, not the files an older run left beside it:
// a schema-5 run never reads them as its own (the old findings would be reported as this run's).
TEST(RunDocuments, FilesBesideASchema5RunAreNotItsDocuments) {
  const fs::path dir = make_run("docs-stale");
  std::ofstream(dir / "embedding.json") << "{\"stale\": true}";
  std::ofstream(dir / "audit.jsonl") << "{\"step\": 1}\n";
  EXPECT_FALSE(read_run_document(dir.string(), "embedding.json", 100).has_value());
  EXPECT_FALSE(load_embedding_summary(dir.string()).has_value());
  EXPECT_TRUE(read_run_log(dir.string()).empty());
  EXPECT_TRUE(export_run_documents(dir.string(), (dir.parent_path() / "out").string()).empty());
  // Without a run.db the folder's files are all there is (an export, or documents saved early).
  fs::remove(dir / "run.db");
  EXPECT_EQ(read_run_document(dir.string(), "embedding.json", 100)->text, "{\"stale\": true}");
  fs::remove_all(dir.parent_path());
}

TEST(RunDocuments, UpgradeRunMovesOnlyTheVersion) {
  const fs::path dir = make_run("docs-upgrade");
  make_schema4(dir);
  EXPECT_EQ(upgrade_run(dir.string()), 4);
  EXPECT_EQ(upgrade_run(dir.string()), kRunSchemaVersion);
  RunReader r(dir.string());
  EXPECT_EQ(r.metadata().schema_version, kRunSchemaVersion);
  EXPECT_TRUE(r.document_names().empty());
  EXPECT_TRUE(r.warnings().empty());
  // A newer run is not touched.
  {
    test::Edit e(dir);
    e.sql("PRAGMA user_version = " + std::to_string(kRunSchemaVersion + 1));
  }
  EXPECT_THAT(error_of([&] { put_run_document(dir.string(), "rows.json", "{}"); }),
              HasSubstr("schema version " + std::to_string(kRunSchemaVersion + 1) + " is newer than this gradscope writes (" +
                        std::to_string(kRunSchemaVersion) + "); upgrade gradscope"));
  fs::remove_all(dir.parent_path());
}

TEST(RunDocuments, ExportWritesEachDocumentAsItsFile) {
  const fs::path dir = make_run("docs-export");
  put_run_document(dir.string(), "units.json", "{\"units\": 1}\n");
  put_run_document(dir.string(), "embedding.json", "{\"e\": 2}\n");
  const fs::path out = dir.parent_path() / "out";
  EXPECT_EQ(export_run_documents(dir.string(), out.string()),
            (std::vector<std::string>{"embedding.json", "units.json"}));
  EXPECT_EQ(text_of(out / "units.json"), "{\"units\": 1}\n");
  EXPECT_EQ(text_of(out / "embedding.json"), "{\"e\": 2}\n");
  fs::remove_all(dir.parent_path());
}

// The auto-fix log: lines appended in order, also from several calls, read back exactly; the
// old layout's audit.jsonl beside run.db still reads; export writes it out.
TEST(RunDocuments, TheAutoFixLogLivesInRunDb) {
  const fs::path dir = make_run("docs-log");
  EXPECT_TRUE(read_run_log(dir.string()).empty());
  append_run_log(dir.string(), {"{\"step\": 1}", "{\"step\": 2}"});
  append_run_log(dir.string(), {"{\"step\": 3}"});
  EXPECT_EQ(read_run_log(dir.string()), (std::vector<std::string>{"{\"step\": 1}", "{\"step\": 2}", "{\"step\": 3}"}));
  EXPECT_FALSE(fs::exists(dir / "audit.jsonl"));
  EXPECT_THAT(error_of([&] { append_run_log(dir.string(), {"a\nb"}); }), HasSubstr("a line holds a newline"));
  const fs::path out = dir.parent_path() / "out";
  EXPECT_EQ(export_run_documents(dir.string(), out.string()), std::vector<std::string>{"audit.jsonl"});
  EXPECT_EQ(text_of(out / "audit.jsonl"), "{\"step\": 1}\n{\"step\": 2}\n{\"step\": 3}\n");
  {
    test::Edit e(dir);
    e.sql("UPDATE interventions SET line = '{\"step\": 9}' WHERE position = 1");
  }
  EXPECT_EQ(error_of([&] { read_run_log(dir.string()); }),
            "run database '" + (dir / "run.db").string() + "': table interventions, row position 1: damaged (checksum mismatch)");
  fs::remove_all(dir.parent_path());

  const fs::path old = make_run("docs-log-old");
  make_schema4(old);
  std::ofstream(old / "audit.jsonl") << "{\"step\": 4}\n{\"step\": 5}\n";
  EXPECT_EQ(read_run_log(old.string()), (std::vector<std::string>{"{\"step\": 4}", "{\"step\": 5}"}));
  fs::remove_all(old.parent_path());
}

// The typed stores go through the documents: a run's embedding summary lives in run.db, and
// copying run.db alone keeps it.
TEST(RunDocuments, AnEmbeddingSummaryTravelsWithRunDbAlone) {
  const fs::path dir = make_run("docs-embedding");
  EmbeddingRows rows(4, 2);
  rows.expose(0, 0);
  EmbeddingRunSummary s;
  s.tables.push_back({diagnose_embedding("item", rows, 1, EmbeddingRuleOptions{}), profile_embedding("item", rows)});
  save_embedding_summary(dir.string(), s);
  EXPECT_FALSE(fs::exists(dir / "embedding.json"));
  const fs::path alone = dir.parent_path() / "alone";
  fs::create_directories(alone);
  fs::copy_file(dir / "run.db", alone / "run.db");
  const std::optional<EmbeddingRunSummary> got = load_embedding_summary(alone.string());
  ASSERT_TRUE(got.has_value());
  ASSERT_EQ(got->tables.size(), 1u);
  EXPECT_EQ(got->tables[0].report.layer, "item");
  EXPECT_EQ(got->tables[0].profile.num_embeddings, 4);
  // A C++ table name need not be UTF-8: replaced (U+FFFD) in the document, not an exception.
  s.tables[0].report.layer = s.tables[0].profile.layer = "it\xff" "em";
  save_embedding_summary(dir.string(), s);
  EXPECT_EQ(load_embedding_summary(dir.string())->tables[0].report.layer, "it\xEF\xBF\xBD" "em");
  fs::remove_all(dir.parent_path());
}

}  // namespace
}  // namespace gradscope
