// Damage to the schema-3 tables (channels, similarities, architecture, warnings, node_values)
// is an Error naming the table and row; --partial skips what is damaged and says so, and keeps
// whole steps: a step's channel view goes with its records.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <functional>
#include <tuple>

#include "../common/error_of.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "store/internal/channel_codec.h"
#include "store/internal/record_codec.h"
#include "run_db_edit.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::Edit;
using test::error_of;
using test::fresh_dir;
using test::node_name;
using test::stats_for;

// 6 steps x 2 nodes; a channel view of layer.0 at steps 0, 2 and 4; one similarity a step; a
// summary of 3 architecture nodes, 2 warnings and 3 values.
fs::path full_run(const std::string& name) {
  const fs::path dir = fresh_dir(name);
  RunWriter w(dir.string());
  for (int64_t step = 0; step < 6; ++step) {
    StepRecords s;
    s.step = step;
    for (int n = 0; n < 2; ++n) s.records.push_back({step, node_name(n), Site::kActivation, stats_for(step, n)});
    if (step % 2 == 0) s.channels.push_back({step, node_name(0), {stats_for(step, 0), stats_for(step, 1)}, {}, 1.0});
    s.similarities.push_back({step, node_name(0), node_name(1), 0.5});
    w.add_step(s);
  }
  RunSummary summary;
  summary.architecture.nodes = {{node_name(0), "a", 0, 1, 1}, {node_name(1), "b", 1, 2, 2}, {"c", "c", -1, 0, 0}};
  summary.warnings = {"w0", "w1"};
  summary.values = {{node_name(0), kGradSnr, 1.0}, {node_name(1), kGradSnr, 2.0}, {"c", kGradSnr, 3.0}};
  w.set_summary(summary);
  w.close();
  return dir;
}

struct Read {
  int64_t steps = 0;
  std::vector<int64_t> channel_steps, similarity_steps;
  std::vector<std::string> warnings;
};

Read read(const fs::path& dir, bool partial) {
  RunReader r(dir.string(), ReadOptions{partial});
  Read out;
  out.steps = r.for_each(RunVisitor{[](const Record&) {}, [&](const ChannelRecord& c) { out.channel_steps.push_back(c.step); },
                                    [&](const SimilarityRecord& s) { out.similarity_steps.push_back(s.step); }, {}});
  out.warnings = r.warnings();
  return out;
}

std::string strict_error(const fs::path& dir) {
  return error_of([&] { read(dir, false); });
}

TEST(RunFindingsDamage, ADamagedChannelRowIsAnErrorAndPartialSkipsItsRecordsOnly) {
  const fs::path dir = full_run("fd-channel");
  Edit(dir).sql("UPDATE channels SET checksum = checksum + 1 WHERE step = 2");
  EXPECT_THAT(strict_error(dir), HasSubstr("run database '" + (dir / "run.db").string() +
                                           "': table channels, row step 2: damaged (checksum mismatch)"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 6);
  EXPECT_EQ(r.channel_steps, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(r.similarity_steps.size(), 6u);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("table channels, row step 2: damaged (checksum mismatch); skipped"));
  fs::remove_all(dir);
}

TEST(RunFindingsDamage, ASkippedStepTakesItsChannelViewWithIt) {
  const fs::path dir = full_run("fd-step");
  Edit(dir).sql("UPDATE steps SET checksum = checksum + 1 WHERE step = 2");
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 5);
  EXPECT_EQ(r.channel_steps, (std::vector<int64_t>{0, 4}));
  EXPECT_EQ(r.similarity_steps, (std::vector<int64_t>{0, 1, 3, 4, 5}));
  ASSERT_EQ(r.warnings.size(), 1u) << "the step's damage is reported once, not again for its channel rows";
  EXPECT_THAT(r.warnings[0], HasSubstr("step 2 is damaged"));
  fs::remove_all(dir);
}

TEST(RunFindingsDamage, AMissingTableIsAnErrorNamingItAndPartialReadsTheRest) {
  const fs::path dir = full_run("fd-drop");
  Edit(dir).sql("DROP TABLE similarities");
  EXPECT_THAT(strict_error(dir), HasSubstr("no such table: similarities"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 6);
  EXPECT_EQ(r.channel_steps.size(), 3u);
  EXPECT_TRUE(r.similarity_steps.empty());
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("in table similarities; its records are not read"));
  fs::remove_all(dir);
}

TEST(RunFindingsDamage, ALostRowIsCounted) {
  const fs::path dir = full_run("fd-lost");
  Edit(dir).sql("DELETE FROM channels WHERE step = 4");
  EXPECT_THAT(strict_error(dir), HasSubstr("table channels holds 2 rows but the writer committed 3"));
  EXPECT_EQ(read(dir, true).channel_steps, (std::vector<int64_t>{0, 2}));
  fs::remove_all(dir);
}

TEST(RunFindingsDamage, RowsThatVerifyButContradictTheOtherTablesAreErrors) {
  const std::vector<std::tuple<std::string, std::function<void(Edit&)>, std::string>> cases = {
      {"cut blob", [](Edit& e) { e.put_row("channels", 0, 1, "\x01\x02"); }, "table channels, row step 0: malformed"},
      {"count above the blob", [](Edit& e) { e.put_row("similarities", 1, 1000, "x"); },
       "table similarities, row step 1: malformed"},
      {"2^60 channels",
       [](Edit& e) {
         std::string blob;
         internal::append_varint(blob, 0);
         internal::append_varint(blob, uint64_t{1} << 60);
         e.put_row("channels", 2, 1, blob);
       },
       "table channels, row step 2: malformed"},
      {"unknown node",
       [](Edit& e) {
         std::string blob;
         internal::append_similarity(blob, 7, SimilarityRecord{3, "x", "y", 0.1});
         e.put_row("similarities", 3, 1, blob);
       },
       "table similarities, row step 3: a record names a node id which table nodes does not have"},
      {"no step row",
       [](Edit& e) {
         std::string blob;
         internal::append_similarity(blob, 0, SimilarityRecord{99, "x", "y", 0.1});
         e.put_row("similarities", 99, 1, blob);
       },
       "table similarities, row step 99: table steps has no row for this step"},
  };
  for (const auto& [what, edit, message] : cases) {
    SCOPED_TRACE(what);
    const fs::path dir = full_run("fd-contradict");
    {
      Edit e(dir);
      edit(e);
    }
    EXPECT_THAT(strict_error(dir), HasSubstr(message));
    const Read r = read(dir, true);
    EXPECT_EQ(r.steps, 6);
    ASSERT_FALSE(r.warnings.empty());
    EXPECT_THAT(r.warnings[0], HasSubstr(message));
    fs::remove_all(dir);
  }
}

TEST(RunFindingsDamage, AHeaderThatSaysAnOlderSchemaIsDamageNotAnOldRun) {
  // A damaged header's user_version (current -> 2) would hide every schema-3 and later table; the
  // checksummed meta row says which schema the writer wrote.
  const fs::path dir = full_run("fd-header");
  Edit(dir).sql("PRAGMA user_version = 2");
  EXPECT_THAT(strict_error(dir), HasSubstr("table meta, key 'schema_version': " + std::to_string(kRunSchemaVersion) +
                                         ", but the database header says 2"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 6);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("(a damaged header); read as schema 2"));
  fs::remove_all(dir);
}

RunSummary summary_of(const fs::path& dir, bool partial, std::vector<std::string>* warnings = nullptr) {
  RunReader r(dir.string(), ReadOptions{partial});
  RunSummary s = r.summary();
  if (warnings) *warnings = r.warnings();
  return s;
}

TEST(RunFindingsDamage, ADamagedSummaryRowIsAnErrorAndPartialIgnoresTheRow) {
  const fs::path dir = full_run("fd-arch");
  Edit(dir).sql("UPDATE architecture SET type = 'evil' WHERE position = 1");
  EXPECT_THAT(error_of([&] { summary_of(dir, false); }),
              HasSubstr("run database '" + (dir / "run.db").string() +
                        "': table architecture, row position 1: damaged (checksum mismatch)"));
  std::vector<std::string> warnings;
  const RunSummary s = summary_of(dir, true, &warnings);
  ASSERT_EQ(s.architecture.nodes.size(), 2u);
  EXPECT_EQ(s.architecture.nodes[1].id, "c");
  EXPECT_EQ(s.warnings.size(), 2u);
  EXPECT_EQ(s.values.size(), 3u);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_THAT(warnings[0], HasSubstr("row position 1: damaged (checksum mismatch); row ignored"));
  fs::remove_all(dir);
}

TEST(RunFindingsDamage, SummaryTablesThatAreLostMissingOrOfWrongTypesAreErrors) {
  const std::vector<std::tuple<std::string, std::string, std::string>> cases = {
      {"lost value", "DELETE FROM node_values WHERE position = 2",
       "table node_values holds 2 rows but the writer committed 3"},
      {"no warnings table", "DROP TABLE warnings", "no such table: warnings"},
      {"a warning as a blob", "UPDATE warnings SET text = CAST(text AS BLOB) WHERE position = 0",
       "table warnings, row position 0: columns are not (integer,text,integer)"},
      {"a value as text", "UPDATE node_values SET value = 'high' WHERE position = 0",
       "table node_values, row position 0: columns are not (integer,text,text,real,integer)"},
      {"edited parameters", "UPDATE architecture SET parameters = -1 WHERE position = 0",
       "table architecture, row position 0: damaged (checksum mismatch)"},
  };
  for (const auto& [what, sql, message] : cases) {
    SCOPED_TRACE(what);
    const fs::path dir = full_run("fd-summary");
    Edit(dir).sql(sql);
    EXPECT_THAT(error_of([&] { summary_of(dir, false); }), HasSubstr(message));
    std::vector<std::string> warnings;
    summary_of(dir, true, &warnings);
    ASSERT_FALSE(warnings.empty());
    EXPECT_THAT(warnings[0], HasSubstr(message));
    fs::remove_all(dir);
  }
}

}  // namespace
}  // namespace gradscope
