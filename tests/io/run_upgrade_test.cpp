// Upgrading a schema-4 run with its side files (io/store/run_upgrade.h): everything moves in one
// transaction, so a run killed at any moment (kill -9) is the old run or the whole new one.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <random>

#include "../common/error_of.h"
#include "../common/schema4_run.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_upgrade.h"
#include "gradscope/io/store/run_writer.h"
#include "store/internal/wal_check.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using test::error_of;

constexpr int64_t kSteps = 3;

// What a schema-4 run kept beside run.db: one text per document name, and the auto-fix log.
struct SideFiles {
  std::map<std::string, std::string> documents;
  std::vector<std::string> log;
};

// Side files of about `bytes` each (distinct per name), and `lines` log lines.
SideFiles side_files(std::size_t bytes, int lines) {
  SideFiles sides;
  for (const std::string& name : run_document_names()) {
    std::string text = "{\"document\": \"" + name + "\", \"rows\": [";
    for (int i = 0; text.size() < bytes; ++i) text += (i ? ", " : "") + std::to_string(i * 7 + name.size());
    sides.documents[name] = text + "]}\n";
  }
  for (int i = 0; i < lines; ++i)
    sides.log.push_back("{\"step\": " + std::to_string(i) + ", \"layer\": \"item\", \"type\": \"ZOMBIE_GRADIENT_SCALE\"}");
  return sides;
}

// A closed run of kSteps steps turned into schema 4, `sides` written beside it.
void make_old_run(const fs::path& dir, const SideFiles& sides) {
  {
    RunWriter w(dir.string());
    for (int64_t step = 0; step < kSteps; ++step) w.add(Record{step, "fc", Site::kParam, test::stats_for(step, 0)});
    w.close();
  }
  test::make_schema4(dir);
  for (const auto& [name, text] : sides.documents) std::ofstream(dir / name, std::ios::binary) << text;
  std::ofstream log(dir / "audit.jsonl", std::ios::binary);
  for (const std::string& line : sides.log) log << line << "\n";
}

// The run is the old one (schema 4, every side file read from beside it) or the whole new one
// (schema 5, every document and log line in run.db, equal to the files); returns its version.
int64_t expect_old_or_whole_new(const fs::path& dir, const SideFiles& sides) {
  RunReader reader(dir.string());  // strict: no damage either way
  EXPECT_TRUE(reader.warnings().empty());
  EXPECT_EQ(reader.step_count(), kSteps);
  const int64_t version = reader.schema_version();
  EXPECT_TRUE(version == 4 || version == kRunSchemaVersion) << version;
  std::vector<std::string> names;
  for (const auto& [name, text] : sides.documents) {
    const std::optional<RunDocument> doc = read_run_document(dir.string(), name, kMaxRunDocumentBytes);
    EXPECT_TRUE(doc && doc->in_database == (version == kRunSchemaVersion) && doc->text == text) << name << " of a schema " << version
                                                                                << " run";
    names.push_back(name);
  }
  EXPECT_EQ(stored_run_documents(dir.string()), version == kRunSchemaVersion ? names : std::vector<std::string>{});
  EXPECT_TRUE(read_run_log(dir.string()) == sides.log) << "the auto-fix log of a schema " << version << " run";
  return version;
}

std::vector<std::string> all_moved() {
  std::vector<std::string> moved = run_document_names();
  moved.push_back("audit.jsonl");
  return moved;
}

TEST(RunUpgrade, EverySideFileAndTheLogMoveTogether) {
  const fs::path dir = test::fresh_dir("upgrade") / "run";
  const SideFiles sides = side_files(1000, 3);
  make_old_run(dir, sides);
  EXPECT_EQ(expect_old_or_whole_new(dir, sides), 4);
  std::vector<std::string> checked;
  const RunUpgrade done =
      upgrade_run_with_side_files(dir.string(), [&](const std::string& name, const RunDocument& side) {
        EXPECT_FALSE(side.in_database);
        EXPECT_EQ(side.text, sides.documents.at(name));
        checked.push_back(name);
      });
  EXPECT_EQ(done.schema_from, 4);
  EXPECT_EQ(done.moved, all_moved());
  EXPECT_EQ(checked, run_document_names());
  EXPECT_EQ(expect_old_or_whole_new(dir, sides), kRunSchemaVersion);
  // Nothing left to do; the files beside it are no longer read.
  const RunUpgrade again = upgrade_run_with_side_files(dir.string());
  EXPECT_EQ(again.schema_from, kRunSchemaVersion);
  EXPECT_TRUE(again.moved.empty());
  fs::remove_all(dir.parent_path());
}

TEST(RunUpgrade, ASideFileTheCheckRefusesLeavesTheRunAsItWas) {
  const fs::path dir = test::fresh_dir("upgrade-refused") / "run";
  const SideFiles sides = side_files(100, 2);
  make_old_run(dir, sides);
  EXPECT_EQ(error_of([&] {
              upgrade_run_with_side_files(dir.string(), [](const std::string& name, const RunDocument& side) {
                if (name == "rows.json") throw Error(side.where + ": refused");
              });
            }),
            "rows.json file '" + (dir / "rows.json").string() + "': refused");
  EXPECT_EQ(expect_old_or_whole_new(dir, sides), 4);
  fs::remove_all(dir.parent_path());
}

// The child: upgrades `run`, exiting 0 when done and 3 on an Error.
[[noreturn]] void child_upgrades(const std::string& run) {
  try {
    upgrade_run_with_side_files(run);
  } catch (...) {
    _exit(3);
  }
  _exit(0);
}

// How long one upgrade of `run` takes in a child, fork to exit: the span the kills are spread over.
std::chrono::microseconds time_one_upgrade(const fs::path& run) {
  const auto start = std::chrono::steady_clock::now();
  const pid_t pid = fork();
  if (pid == 0) child_upgrades(run.string());
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start);
}

// kill -9 at random moments over the child's whole upgrade, 40 runs: every run afterwards is the
// old one or the whole new one (never a schema-5 run without its documents, as when the schema
// bump, the log and each document were separate transactions), and a second upgrade completes
// it. The side files are large enough (5 x 1 MB, 10,000 log lines) that the transaction takes a
// good part of the child's time; how many kills landed where is printed, not asserted.
TEST(RunUpgrade, AnUpgradeKilledAtAnyMomentLeavesTheOldRunOrTheWholeNewOne) {
  const fs::path root = test::fresh_dir("upgrade-kill");
  const SideFiles sides = side_files(1 << 20, 10000);
  const fs::path old_run = root / "old";
  make_old_run(old_run, sides);
  const auto copy_of_old = [&](const fs::path& to) {
    fs::copy(old_run, to, fs::copy_options::recursive);
  };
  copy_of_old(root / "timed");
  const std::chrono::microseconds span = time_one_upgrade(root / "timed") * 5 / 4;
  fs::remove_all(root / "timed");

  std::mt19937 random(41);
  std::uniform_int_distribution<int64_t> moment(0, span.count());
  // Where the kills landed: before the transaction (schema 4, no log: the side files were being
  // read and checked), inside it while it was built (schema 4, a log without frames: no page
  // reaches the log before the commit) or while its commit was written (schema 4, frames but no
  // commit), after its commit (schema 5), or too late (the child had finished).
  int before = 0, building = 0, committing = 0, after = 0, finished = 0;
  for (int round = 0; round < 40; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const fs::path run = root / ("run" + std::to_string(round));
    copy_of_old(run);
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) child_upgrades(run.string());
    usleep(static_cast<useconds_t>(moment(random)));
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) == 0))
        << "the upgrade failed with exit " << WEXITSTATUS(status);
    const bool has_log = fs::exists(run / "run.db-wal");
    const int64_t frames = internal::check_wal_file((run / "run.db-wal").string()).frames;

    const int64_t version = expect_old_or_whole_new(run, sides);
    if (WIFEXITED(status)) ++finished;
    else if (version == kRunSchemaVersion) ++after;
    else if (frames > 0) ++committing;
    else if (has_log) ++building;
    else ++before;

    const RunUpgrade again = upgrade_run_with_side_files(run.string());
    EXPECT_EQ(again.schema_from, version);
    EXPECT_EQ(again.moved, version == 4 ? all_moved() : std::vector<std::string>{});
    EXPECT_EQ(expect_old_or_whole_new(run, sides), kRunSchemaVersion);
    fs::remove_all(run);
    if (HasFatalFailure() || HasNonfatalFailure()) break;  // one broken run says enough
  }
  std::cout << "[ kills    ] over " << span.count() << " us: " << before << " before the transaction, " << building
            << " while it was built, " << committing << " while its commit was written, " << after
            << " after its commit, " << finished << " after the upgrade ended\n";
  fs::remove_all(root);
}

}  // namespace
}  // namespace gradscope
