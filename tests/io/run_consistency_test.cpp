// Tables that contradict each other, and metadata that is not what it says, are errors naming
// the table and row (or key); --partial skips what is inconsistent and says so.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "../common/error_of.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "store/internal/record_codec.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;
using test::fresh_dir;
using test::node_name;
using test::stats_for;

// SQL function row_checksum(a, b): the checksum a schema-2 writer stores for a row of two
// fields, so that an edit can model a run whose tables contradict each other although every
// row is intact (a buggy or hostile writer), not only damage.
void sql_row_checksum(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  const auto text = [&](int i) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(argv[i]));
    return std::string(p ? p : "", static_cast<std::size_t>(sqlite3_value_bytes(argv[i])));
  };
  sqlite3_result_int64(ctx, argc == 2 ? internal::row_checksum({text(0), text(1)}) : 0);
}

// A closed run of 5 steps x 3 nodes (layer.0 .. layer.2), then `statements` applied to it.
fs::path edited_run(const std::string& name, const std::string& statements) {
  const fs::path dir = fresh_dir(name);
  {
    RunWriter w(dir.string());
    for (int step = 0; step < 5; ++step)
      for (int n = 0; n < 3; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
  }
  sqlite3* h = nullptr;
  EXPECT_EQ(sqlite3_open((dir / "run.db").c_str(), &h), SQLITE_OK);
  sqlite3_create_function(h, "row_checksum", 2, SQLITE_UTF8, nullptr, sql_row_checksum, nullptr, nullptr);
  EXPECT_EQ(sqlite3_exec(h, statements.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  sqlite3_close(h);
  return dir;
}

// The nodes table without its NOT NULL and UNIQUE constraints, as a hostile file may have it.
constexpr const char* kLooseNodes =
    "CREATE TABLE loose(id INTEGER PRIMARY KEY, name, checksum); INSERT INTO loose SELECT * FROM nodes; "
    "DROP TABLE nodes; ALTER TABLE loose RENAME TO nodes;";

struct Read {
  int64_t steps = 0;
  std::map<std::string, int> records_per_node;
  std::vector<std::string> warnings;
};

Read read(const fs::path& dir, bool partial) {
  RunReader r(dir.string(), ReadOptions{partial});
  Read out;
  out.steps = r.for_each([&](const Record& rec) { ++out.records_per_node[rec.node]; });
  out.warnings = r.warnings();
  return out;
}

std::string strict_error(const fs::path& dir) {
  return error_of([&] { read(dir, false); });
}

TEST(RunConsistency, ANodeIdWithoutARowIsAnErrorNotAnEmptyName) {
  const fs::path dir = edited_run("cons-gap", "DELETE FROM nodes WHERE id = 1");
  const std::string db = (dir / "run.db").string();
  EXPECT_THAT(strict_error(dir), HasSubstr("run database '" + db + "': table nodes, row id 2: ids must run from 0 to 1"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 0) << "every step has a record of a node the table lacks";
  EXPECT_EQ(r.records_per_node.count(""), 0u);
  ASSERT_FALSE(r.warnings.empty());
  EXPECT_THAT(r.warnings.back(), HasSubstr("table steps, row step 4: a record names node id 1, which table nodes does not have; skipped"));
  fs::remove_all(dir);
}

TEST(RunConsistency, AHugeNodeIdIsAnErrorNamingTheRowNotBadAlloc) {
  const fs::path dir = edited_run("cons-huge", "UPDATE nodes SET id = 4294967295 WHERE id = 2");
  EXPECT_THAT(strict_error(dir), HasSubstr("table nodes, row id 4294967295: ids must run from 0 to 2 (the table has 3 rows)"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 0);
  fs::remove_all(dir);
}

TEST(RunConsistency, ANullOrRepeatedNodeNameIsAnError) {
  const fs::path null_name = edited_run("cons-null", std::string(kLooseNodes) + "UPDATE nodes SET name = NULL WHERE id = 1");
  EXPECT_THAT(strict_error(null_name), HasSubstr("table nodes, row id 1: name is not text"));
  fs::remove_all(null_name);
  const fs::path twice = edited_run("cons-twice", std::string(kLooseNodes) + "UPDATE nodes SET name = 'layer.0', checksum = row_checksum(id, 'layer.0') WHERE id = 2");
  EXPECT_THAT(strict_error(twice), HasSubstr("table nodes, row id 2: name 'layer.0' is also row id 0"));
  const Read r = read(twice, true);  // steps with the dropped row's records are skipped, not merged
  EXPECT_EQ(r.steps, 0);
  EXPECT_EQ(r.records_per_node.count("layer.0"), 0u);
  fs::remove_all(twice);
}

TEST(RunConsistency, ARepeatedOrNullSiteNameIsAnError) {
  const std::string first = site_name(static_cast<Site>(0));
  const fs::path twice = edited_run("cons-site", "UPDATE sites SET name = '" + first + "', checksum = row_checksum(id, '" + first + "') WHERE id = 1");
  EXPECT_THAT(strict_error(twice), HasSubstr("table sites, row id 1: name '" + first + "' is also row id 0"));
  fs::remove_all(twice);
  const fs::path null_name = edited_run(
      "cons-site-null",
      "CREATE TABLE s2(id INTEGER PRIMARY KEY, name, checksum); INSERT INTO s2 SELECT * FROM sites; DROP TABLE sites; "
      "ALTER TABLE s2 RENAME TO sites; UPDATE sites SET name = NULL WHERE id = 3");
  EXPECT_THAT(strict_error(null_name), HasSubstr("table sites, row id 3: name is not text"));
  fs::remove_all(null_name);
}

TEST(RunConsistency, ANegativeStepIsAnErrorAndPartialSkipsIt) {
  const fs::path dir = edited_run("cons-negative", "UPDATE steps SET step = -5 WHERE step = 2");
  EXPECT_THAT(strict_error(dir), HasSubstr("table steps, row step -5: negative step"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 4);
  EXPECT_EQ(r.records_per_node.at("layer.0"), 4);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("row step -5: negative step; skipped"));
  fs::remove_all(dir);
}

TEST(RunConsistency, AStepColumnOfTheWrongTypeIsAnError) {
  const fs::path dir = edited_run("cons-type", "UPDATE steps SET records = 'text' WHERE step = 3");
  EXPECT_THAT(strict_error(dir), HasSubstr("table steps, row step 3: columns are not (integer, integer, integer, blob)"));
  EXPECT_EQ(read(dir, true).steps, 4);
  fs::remove_all(dir);
}

TEST(RunConsistency, InvalidThresholdsInTheMetadataNameTheKeyAndField) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"dead_frac": 2})", "threshold dead_frac = 2.000000: must be in [0, 1]"},
      {R"({"grad_lo": "small"})", "threshold 'grad_lo' is not a number"},
      {R"({"stagnant_steps": 1e300})", "threshold 'stagnant_steps' is not an integer of int's range"},
      {R"({"stagnant_steps": 4294967297})", "threshold 'stagnant_steps' is not an integer of int's range"},
      {R"([1, 2])", "thresholds are not a json object"},
  };
  for (const auto& [value, message] : cases) {
    SCOPED_TRACE(value);
    const fs::path dir = edited_run("cons-thresholds", "UPDATE meta SET value = '" + value + "', checksum = row_checksum(key, '" + value +
                                                         "') WHERE key = 'thresholds'");
    const std::string e = error_of([&] { RunReader r(dir.string()); });
    EXPECT_THAT(e, HasSubstr("run database '" + (dir / "run.db").string() + "': table meta, key 'thresholds': " + message));
    RunReader partial(dir.string(), ReadOptions{true});
    EXPECT_EQ(partial.metadata().thresholds.dead_frac, Thresholds{}.dead_frac);
    ASSERT_EQ(partial.warnings().size(), 1u);
    EXPECT_THAT(partial.warnings()[0], HasSubstr("the metadata is not used"));
    fs::remove_all(dir);
  }
}

TEST(RunConsistency, ANonIntegerSchemaVersionInTheMetadataNamesTheKey) {
  const fs::path dir = edited_run("cons-version", "UPDATE meta SET value = '1x', checksum = row_checksum(key, '1x') WHERE key = 'schema_version'");
  EXPECT_THAT(error_of([&] { RunReader r(dir.string()); }),
              HasSubstr("table meta, key 'schema_version': not a non-negative integer ('1x')"));
  fs::remove_all(dir);
}

TEST(RunIntegrity, ADamagedNameOrMetadataValueIsAnErrorNamingTheRow) {
  const fs::path node = edited_run("int-node", "UPDATE nodes SET name = 'layes.1' WHERE id = 1");
  EXPECT_THAT(strict_error(node), HasSubstr("table nodes, row id 1: damaged (checksum mismatch)"));
  const Read r = read(node, true);
  EXPECT_EQ(r.records_per_node.count("layes.1"), 0u);
  fs::remove_all(node);
  const fs::path host = edited_run("int-host", "UPDATE meta SET value = 'evil' WHERE key = 'host'");
  EXPECT_THAT(error_of([&] { RunReader x(host.string()); }), HasSubstr("table meta, key 'host': damaged (checksum mismatch)"));
  fs::remove_all(host);
}

TEST(RunIntegrity, AStepThatMovedIsDamagedAndALostOneIsCounted) {
  const fs::path moved = edited_run("int-moved", "UPDATE steps SET step = 99 WHERE step = 3");
  EXPECT_THAT(strict_error(moved), HasSubstr("step 99 is damaged (checksum mismatch)"));
  EXPECT_EQ(read(moved, true).steps, 4);
  fs::remove_all(moved);
  const fs::path lost = edited_run("int-lost", "DELETE FROM steps WHERE step = 2");
  EXPECT_THAT(strict_error(lost), HasSubstr("table steps holds 4 rows but the writer committed 5"));
  const Read r = read(lost, true);
  EXPECT_EQ(r.steps, 4);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("committed 5 (rows lost or added by damage); the rows that verify are read"));
  fs::remove_all(lost);
}

TEST(RunIntegrity, ARunOfSchemaOneStillReadsExactly) {
  // Written by gradscope before schema 2 (its writer as of commit bdccbb7): no row checksums
  // but the steps', no committed step count.
  const fs::path dir = fresh_dir("schema1");
  fs::copy_file(fs::path(GRADSCOPE_GOLDEN_DIR) / "run_schema1.db", dir / "run.db");
  RunReader r(dir.string());
  EXPECT_EQ(r.metadata().name, "v1-run");
  EXPECT_EQ(r.metadata().schema_version, 1);
  EXPECT_EQ(r.metadata().command_line, "train --v1");
  std::vector<Record> got;
  EXPECT_EQ(r.for_each([&](const Record& rec) { got.push_back(rec); }), 10);
  ASSERT_EQ(got.size(), 30u);
  for (std::size_t i = 0; i < got.size(); ++i) {
    const int step = static_cast<int>(i / 3), node = static_cast<int>(i % 3);
    EXPECT_EQ(got[i].step, step);
    EXPECT_EQ(got[i].node, node_name(node));
    // The golden run was written when gradscope had 8 sites (the tree sites came later).
    EXPECT_EQ(got[i].site, static_cast<Site>((step + node) % 8));
    EXPECT_TRUE(test::same_stats(got[i].stats, stats_for(step, node)));
  }
  EXPECT_TRUE(r.warnings().empty());
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
