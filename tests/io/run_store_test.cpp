// The run store: exact round trips, metadata, bad input, partial reading, a concurrent reader.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <map>
#include <thread>

#include "../common/error_of.h"
#include "gradscope/core/error.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/version.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::MatchesRegex;
using test::error_of;
using test::fresh_dir;
using test::node_name;
using test::same_stats;
using test::stats_for;

void write_run(const fs::path& dir, int steps, int nodes, RunWriterOptions opt = {}) {
  RunWriter w(dir.string(), opt);
  for (int step = 0; step < steps; ++step)
    for (int n = 0; n < nodes; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
  w.close();
}

// Every step of the run, as (step -> records).
std::map<int64_t, std::vector<Record>> read_all(RunReader& r, StepRange range = {}) {
  std::map<int64_t, std::vector<Record>> out;
  r.for_each([&](const Record& rec) { out[rec.step].push_back(rec); }, range);
  return out;
}

void sql(const fs::path& db, const char* statement) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(h, statement, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(h);
  sqlite3_close(h);
}

TEST(RunStore, RecordsRoundTripExactlyWithSitesAndHostileNames) {
  const fs::path dir = fresh_dir("roundtrip");
  const std::vector<std::string> names = {"plain", "a,b", "say \"hi\"", "two\nlines", "ünïcode/→", ""};
  std::vector<Record> written;
  {
    RunWriter w(dir.string());
    for (int step = 0; step < 50; ++step) {
      for (std::size_t i = 0; i < names.size(); ++i) {
        const Site site = static_cast<Site>((step + static_cast<int>(i)) % kSiteCount);
        Record r{step * 3, names[i], site, stats_for(step, static_cast<int>(i))};
        if (i == 0) r.stats = Stats{};  // empty tensor: min +inf, max -inf
        written.push_back(r);
        w.add(r);
      }
    }
    w.close();
  }
  RunReader r(dir.string());
  EXPECT_EQ(r.step_count(), 50);
  std::vector<Record> read;
  EXPECT_EQ(r.for_each([&](const Record& rec) { read.push_back(rec); }), 50);
  ASSERT_EQ(read.size(), written.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(read[i].step, written[i].step);
    EXPECT_EQ(read[i].node, written[i].node);
    EXPECT_EQ(read[i].site, written[i].site);
    EXPECT_TRUE(same_stats(read[i].stats, written[i].stats));
  }
  EXPECT_TRUE(r.warnings().empty());
  fs::remove_all(dir);
}

TEST(RunStore, StepRangeSelectsInclusively) {
  const fs::path dir = fresh_dir("range");
  write_run(dir, 20, 3);
  RunReader r(dir.string());
  const auto steps = read_all(r, {5, 9});
  ASSERT_EQ(steps.size(), 5u);
  EXPECT_EQ(steps.begin()->first, 5);
  EXPECT_EQ(steps.rbegin()->first, 9);
  EXPECT_EQ(steps.at(7).size(), 3u);
  fs::remove_all(dir);
}

TEST(RunStore, MetadataIsWrittenAndCompletedOnClose) {
  const fs::path dir = fresh_dir("meta");
  RunWriterOptions opt;
  opt.command_line = "train --lr 0.1 \"quoted\"";
  opt.thresholds.grad_hi = 123.5;
  opt.thresholds.flow_minor_ratio = 0.05;
  RunWriter w((dir / "exp1").string(), opt);
  w.add(Record{0, "a", Site::kParamGrad, stats_for(0, 0)});
  w.commit();
  {
    RunReader open_run((dir / "exp1").string());  // while the writer is open
    EXPECT_EQ(open_run.metadata().end_time, "");
    EXPECT_EQ(open_run.step_count(), 1);
  }
  w.close();
  RunReader r((dir / "exp1").string());
  const RunMetadata& m = r.metadata();
  EXPECT_EQ(m.name, "exp1");
  EXPECT_EQ(m.command_line, opt.command_line);
  EXPECT_EQ(m.gradscope_version, kVersion);
  EXPECT_EQ(m.schema_version, kRunSchemaVersion);
  EXPECT_FALSE(m.host.empty());
  EXPECT_THAT(m.start_time, MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"));
  EXPECT_THAT(m.end_time, MatchesRegex("[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z"));
  EXPECT_EQ(m.thresholds.grad_hi, 123.5);
  EXPECT_EQ(m.thresholds.flow_minor_ratio, 0.05);
  EXPECT_EQ(m.thresholds.grad_lo, Thresholds{}.grad_lo);
  EXPECT_EQ(m.queue_waits, 0);
  fs::remove_all(dir);
}

TEST(RunStore, ExistingRunIsKeptUnlessOverwriteIsAsked) {
  const fs::path dir = fresh_dir("exists");
  write_run(dir, 3, 2);
  EXPECT_THAT(error_of([&] { RunWriter again(dir.string()); }),
              HasSubstr("run '" + dir.string() + "' already exists"));
  // An older run's documents beside run.db are its own: overwritten with it. Other files and
  // a folder of the same name stay.
  for (const char* name : {"embedding.json", "trees.json", "units.json", "rows.json", "compression.json",
                           "audit.jsonl", "notes.txt"})
    std::ofstream(dir / name) << "{}";
  fs::create_directory(dir / "model.json");
  RunWriterOptions opt;
  opt.overwrite = true;
  write_run(dir, 1, 1, opt);
  RunReader r(dir.string());
  EXPECT_EQ(r.step_count(), 1);
  std::vector<std::string> left;
  for (const auto& entry : fs::directory_iterator(dir)) left.push_back(entry.path().filename().string());
  std::sort(left.begin(), left.end());
  EXPECT_EQ(left, (std::vector<std::string>{"model.json", "notes.txt", "run.db"}));
  fs::remove_all(dir);
}

TEST(RunStore, StepsMustNotDecrease) {
  const fs::path dir = fresh_dir("order");
  RunWriter w(dir.string());
  w.add(Record{5, "a", Site::kParamGrad, {}});
  w.add(Record{5, "b", Site::kParamGrad, {}});
  w.add(Record{6, "a", Site::kParamGrad, {}});
  EXPECT_THAT(error_of([&] { w.add(Record{5, "c", Site::kParamGrad, {}}); }),
              HasSubstr("record for step 5 arrived after step 6"));
  w.end_step();
  EXPECT_THAT(error_of([&] { w.add(Record{6, "c", Site::kParamGrad, {}}); }),
              HasSubstr("record for step 6 arrived after step 6"));
  w.close();
  RunReader r(dir.string());
  EXPECT_EQ(r.step_count(), 2);
  fs::remove_all(dir);
}

TEST(RunStore, EmptyRunHasNoSteps) {
  const fs::path dir = fresh_dir("empty");
  RunWriter(dir.string()).close();
  RunReader r(dir.string());
  EXPECT_EQ(r.step_count(), 0);
  EXPECT_EQ(r.for_each([](const Record&) { FAIL(); }), 0);
  fs::remove_all(dir);
}

TEST(RunStore, MissingDatabaseNamesTheFile) {
  const fs::path dir = fresh_dir("missing");
  EXPECT_THAT(error_of([&] { RunReader r((dir / "nope").string()); }),
              HasSubstr("run database '" + (dir / "nope" / "run.db").string() + "': no such file"));
  fs::remove_all(dir);
}

TEST(RunStore, GarbageFileIsCorruptNamingTheFile) {
  const fs::path dir = fresh_dir("garbage");
  std::ofstream(dir / "run.db") << std::string(4096, 'x');
  const std::string e = error_of([&] { RunReader r(dir.string()); });
  EXPECT_THAT(e, HasSubstr("run database '" + (dir / "run.db").string() + "'"));
  EXPECT_THAT(e, HasSubstr("corrupt or not a gradscope run"));
  fs::remove_all(dir);
}

TEST(RunStore, SqliteFileThatIsNotARunIsRejected) {
  const fs::path dir = fresh_dir("foreign");
  sql(dir / "run.db", "CREATE TABLE t(x)");
  EXPECT_THAT(error_of([&] { RunReader r(dir.string()); }), HasSubstr("not a gradscope run"));
  fs::remove_all(dir);
}

TEST(RunStore, NewerSchemaIsAClearError) {
  const fs::path dir = fresh_dir("newer");
  write_run(dir, 2, 2);
  const std::string newer = std::to_string(kRunSchemaVersion + 1);
  sql(dir / "run.db", ("PRAGMA user_version = " + newer).c_str());
  EXPECT_THAT(error_of([&] { RunReader r(dir.string()); }),
              HasSubstr("schema version " + newer + " is newer than this gradscope reads (" + std::to_string(kRunSchemaVersion) +
                        "); upgrade gradscope"));
  fs::remove_all(dir);
}

TEST(RunStore, DamagedStepFailsUnlessPartialThenOnlyItIsSkipped) {
  const fs::path dir = fresh_dir("damaged");
  write_run(dir, 10, 4);
  sql(dir / "run.db", "UPDATE steps SET records = zeroblob(length(records)) WHERE step = 4");
  RunReader strict(dir.string());
  const std::string e = error_of([&] { read_all(strict); });
  EXPECT_THAT(e, HasSubstr("step 4 is damaged (checksum mismatch)"));
  EXPECT_THAT(e, HasSubstr("--partial"));
  RunReader partial(dir.string(), ReadOptions{true});
  const auto steps = read_all(partial);
  EXPECT_EQ(steps.size(), 9u);
  EXPECT_EQ(steps.count(4), 0u);
  EXPECT_EQ(steps.at(5).size(), 4u);
  ASSERT_EQ(partial.warnings().size(), 1u);
  EXPECT_THAT(partial.warnings()[0], HasSubstr("step 4 is damaged"));
  fs::remove_all(dir);
}

TEST(RunStore, TruncatedDatabaseFailsNamingTheFileAndPartialReadsCompleteSteps) {
  const fs::path dir = fresh_dir("truncated");
  constexpr int kSteps = 400, kNodes = 16;
  write_run(dir, kSteps, kNodes);
  const fs::path db = dir / "run.db";
  ASSERT_FALSE(fs::exists(dir / "run.db-wal") && fs::file_size(dir / "run.db-wal") > 0);
  fs::resize_file(db, fs::file_size(db) / 2);
  const std::string e = error_of([&] {
    RunReader r(dir.string());
    read_all(r);
  });
  EXPECT_THAT(e, HasSubstr("run database '" + db.string() + "'"));

  RunReader partial(dir.string(), ReadOptions{true});
  const auto steps = read_all(partial);
  EXPECT_GT(steps.size(), 10u);
  EXPECT_LT(steps.size(), static_cast<std::size_t>(kSteps));
  EXPECT_EQ(steps.begin()->first, 0);
  for (const auto& [step, records] : steps) {
    // Lost pages hold mostly the latest steps, but B-tree splits may place a few earlier ones
    // there too: whatever is returned must be complete and exact.
    ASSERT_EQ(records.size(), static_cast<std::size_t>(kNodes)) << "step " << step;
    for (int n = 0; n < kNodes; ++n) EXPECT_TRUE(same_stats(records[n].stats, stats_for(step, n)));
  }
  EXPECT_FALSE(partial.warnings().empty());
  fs::remove_all(dir);
}

TEST(RunStore, FullQueueMakesTheProducerWaitAndLosesNothing) {
  const fs::path dir = fresh_dir("backpressure");
  RunWriterOptions opt;
  opt.queue_capacity = 3;  // smaller than one step
  write_run(dir, 200, 10, opt);
  RunReader r(dir.string());
  const auto steps = read_all(r);
  ASSERT_EQ(steps.size(), 200u);
  for (const auto& [step, records] : steps) ASSERT_EQ(records.size(), 10u);
  fs::remove_all(dir);
}

// A reader that opens a run before its writer has logged anything must not take the file as
// finished: the writer's checkpoints rewrite it (an immutable read saw "malformed" pages under
// load, the concurrent test below).
TEST(RunStore, AReaderOpenedBeforeTheFirstCommitReadsWhatTheWriterCheckpointsLater) {
  const fs::path dir = fresh_dir("early-reader");
  constexpr int kSteps = 300, kNodes = 8;
  RunWriter w(dir.string());
  RunReader r(dir.string());  // the writer has created the run, logged nothing
  for (int step = 0; step < kSteps; ++step) {
    for (int n = 0; n < kNodes; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
    if (step % 10 == 9) w.commit();
  }
  w.close();  // the log checkpointed into run.db, then removed
  const auto steps = read_all(r);
  ASSERT_EQ(steps.size(), static_cast<std::size_t>(kSteps));
  EXPECT_TRUE(same_stats(steps.rbegin()->second.back().stats, stats_for(kSteps - 1, kNodes - 1)));
  fs::remove_all(dir);
}

TEST(RunStore, ConcurrentReaderSeesOnlyCompleteCommittedStepsGrowing) {
  const fs::path dir = fresh_dir("concurrent");
  constexpr int kSteps = 300, kNodes = 8;
  std::atomic<bool> done{false};
  RunWriter w(dir.string());
  std::thread trainer([&] {
    for (int step = 0; step < kSteps; ++step) {
      for (int n = 0; n < kNodes; ++n) w.add(Record{step, node_name(n), Site::kParamGrad, stats_for(step, n)});
      if (step % 10 == 9) w.commit();
    }
    w.close();
    done = true;
  });
  std::size_t seen = 0;
  int snapshots = 0;
  for (;;) {
    const bool finished = done;  // read once more after the writer closed
    RunReader r(dir.string());
    const auto steps = read_all(r);
    ASSERT_GE(steps.size(), seen);  // never goes back
    int64_t expect = 0;
    for (const auto& [step, records] : steps) {
      ASSERT_EQ(step, expect++);
      ASSERT_EQ(records.size(), static_cast<std::size_t>(kNodes));
      ASSERT_TRUE(same_stats(records.back().stats, stats_for(step, kNodes - 1)));
    }
    seen = steps.size();
    ++snapshots;
    if (finished) break;
  }
  trainer.join();
  EXPECT_EQ(seen, static_cast<std::size_t>(kSteps));
  EXPECT_GE(snapshots, 1);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
