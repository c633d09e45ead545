// What `gradscope` prints for runs whose names are hostile, and when its output cannot be
// written (issue 10, items 4, 5, 6, 10 and 11): names reach a terminal escaped and a CSV cell
// without a formula prefix, a failed write to stdout exits 3, and out-of-range options exit 2.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli_process.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_writer.h"
#include "store/internal/record_codec.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// What a terminal would act on: ESC (a CSI sequence), C1 CSI as UTF-8, RIGHT-TO-LEFT OVERRIDE,
// BEL, DEL and a raw 0x9b byte (CSI on 8-bit terminals); and how gradscope shows it.
// kUtf8 is the part that is valid UTF-8, for embedding.json, which JSON must be able to hold.
const std::string kUtf8 = "x\x1b[2J\xc2\x9b\u202e\x07\x7f",
                  kUtf8Shown = "x\\x1b[2J\\u009b\\u202e\\x07\\x7f";
const std::string kHostile = kUtf8 + "\x9b", kShown = kUtf8Shown + "\\x9b";
const std::string kFormula = "=cmd|' /C calc'!A0";
const std::string kStdoutFull =
    "gradscope: error: cannot write to standard output (No space left on device)\n";

using gradscope::test::Result;
using gradscope::test::slurp;

fs::path temp_dir(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("gradscope-safety-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

// Single-quoted for sh; the hostile names hold no single quote.
std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// Runs gradscope with `args`; stdout goes to `stdout_to` when given (e.g. /dev/full). A command
// that hangs is stopped after a minute (exit 124).
Result run(const std::string& args, const std::string& stdout_to = "") {
  const fs::path dir = temp_dir("run");
  const std::string out = stdout_to.empty() ? (dir / "out").string() : stdout_to;
  const std::string cmd = "timeout 60 " + std::string(GRADSCOPE_CLI) + " " + args + " >" + out +
                          " 2>" + (dir / "err").string() + " </dev/null";
  const int status = std::system(cmd.c_str());
  Result r{WIFEXITED(status) ? WEXITSTATUS(status) : -1, slurp(dir / "out"), slurp(dir / "err")};
  fs::remove_all(dir);
  return r;
}

// Fails when `text` holds a byte or character a terminal would act on.
void expect_no_raw_controls(const std::string& text) {
  for (const std::string raw : {"\x1b", "\x07", "\x7f", "\x9b", "\u202e"})
    EXPECT_EQ(text.find(raw), std::string::npos)
        << "raw " << testing::PrintToString(raw) << " in:\n"
        << text;
}

gradscope::Stats grad(double l2) {
  gradscope::Stats s;
  s.count = s.finite = 10;
  s.sum_sq = l2 * l2;
  s.sum = s.sum_abs = l2;
  s.min = -l2;
  s.max = s.max_abs = l2;
  return s;
}

// Sets a metadata value as a hostile writer would: with its row checksum, so that the run
// reads as intact and the hostile text reaches the renderers.
void set_meta(const fs::path& dir, const std::string& key, const std::string& value) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((dir / "run.db").c_str(), &db), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "UPDATE meta SET value = ?, checksum = ? WHERE key = ?", -1, &s,
                               nullptr),
            SQLITE_OK);
  sqlite3_bind_text(s, 1, value.data(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
  sqlite3_bind_int64(s, 2, gradscope::internal::row_checksum({key, value}));
  sqlite3_bind_text(s, 3, key.data(), static_cast<int>(key.size()), SQLITE_TRANSIENT);
  EXPECT_EQ(sqlite3_step(s), SQLITE_DONE);
  sqlite3_finalize(s);
  sqlite3_close(db);
}

// A run whose name, host, start time, command line and nodes are hostile; the node kHostile
// vanishes (so it is the worst), the formula-like nodes are healthy.
fs::path make_hostile_run(const fs::path& dir, int steps = 6) {
  gradscope::RunWriterOptions opt;
  opt.name = "run" + kHostile;
  opt.command_line = "train" + kHostile;
  {
    gradscope::RunWriter w(dir.string(), opt);
    for (int step = 0; step < steps; ++step) {
      w.add({step, kHostile, gradscope::Site::kParamGrad, grad(1e-9)});
      w.add({step, kFormula, gradscope::Site::kParamGrad, grad(0.5)});
      w.add({step, "-1+1", gradscope::Site::kParamGrad, grad(0.5)});
      w.add({step, "café/層", gradscope::Site::kParamGrad, grad(0.5)});
    }
    gradscope::RunSummary summary;
    summary.warnings = {"w" + kHostile};  // an audit's warning quotes node names
    w.set_summary(summary);
    w.close();
  }
  set_meta(dir, "host", "h" + kHostile);
  set_meta(dir, "start_time", "s" + kHostile);
  return dir;
}

fs::path make_plain_run(const fs::path& dir, int steps) {
  gradscope::RunWriter w(dir.string());
  for (int step = 0; step < steps; ++step) {
    w.add({step, kHostile, gradscope::Site::kParamGrad, grad(0.5)});
    w.add({step, "head", gradscope::Site::kParamGrad, grad(1.0)});
  }
  w.close();
  return dir;
}

// One embedding table whose saved text (layer, finding) is hostile.
void save_hostile_embedding(const fs::path& run) {
  gradscope::EmbeddingRunSummary summary;
  gradscope::EmbeddingTableSummary table;
  table.report.layer = "item" + kUtf8;
  table.report.stats.num_embeddings = 40;
  table.report.stats.active_coverage_pct = 75;
  table.report.stats.popularity_gini = 0.288;
  gradscope::EmbeddingDiagnostic d;
  d.type = "ZOMBIE" + kUtf8;
  d.premise = "p" + kUtf8;
  d.action = "a" + kUtf8;
  table.report.diagnostics = {d};
  summary.tables = {table};
  gradscope::save_embedding_summary(run.string(), summary);
}

TEST(OutputSafety, ReportShowsHostileNamesAndMetadataEscaped) {
  const fs::path dir = temp_dir("report");
  const fs::path r = make_hostile_run(dir / "r");
  save_hostile_embedding(r);
  const Result res = run("report " + quoted(r));
  EXPECT_EQ(res.code, 1) << res.err;
  EXPECT_THAT(res.out, StartsWith("run " + r.string() + ": run" + kShown + ", started s" + kShown +
                                  ", ended "));
  EXPECT_THAT(res.out, HasSubstr(", host h" + kShown + ", gradscope "));
  EXPECT_THAT(res.out, HasSubstr("\ncommand: train" + kShown + "\n"));
  EXPECT_THAT(res.out, HasSubstr("\naudit warning: w" + kShown + "\n"));  // kept with the run
  EXPECT_THAT(res.out, HasSubstr("\n" + kShown + "  "));  // its table row
  EXPECT_THAT(res.out, HasSubstr("\n  " + kShown + " VANISHING since step 0"));
  EXPECT_THAT(res.out, HasSubstr("worst " + kShown + " [VANISHING]"));
  EXPECT_THAT(res.out, HasSubstr("\n  - " + kShown + ": gradient L2 < 1e-07 in 6 of 6 frames"));
  EXPECT_THAT(res.out,
              HasSubstr("\n  item" + kUtf8Shown +
                        " (40 rows, 75.0% exposed, popularity Gini 0.288): 1 finding\n"
                        "    ZOMBIE" +
                        kUtf8Shown + " (confidence 0.00): p" + kUtf8Shown + "\n      what to do: a" + kUtf8Shown + "\n"));
  EXPECT_THAT(res.out, HasSubstr("\ncafé/層 "));  // printable UTF-8 as it is
  expect_no_raw_controls(res.out);
  fs::remove_all(dir);
}

TEST(OutputSafety, JsonOutputsHoldHostileNamesOnlyAsEscapes) {
  const fs::path dir = temp_dir("json");
  const fs::path r = make_hostile_run(dir / "r");
  for (const std::string args : {"report --json ", "export --format json ", "export --format jsonl "}) {
    SCOPED_TRACE(args);
    const Result res = run(args + quoted(r));
    EXPECT_TRUE(res.code == 0 || res.code == 1) << res.err;
    EXPECT_THAT(res.out, HasSubstr("\\u001b[2J\\u009b\\u202e\\u0007\\u007f"));
    expect_no_raw_controls(res.out);
  }
  fs::remove_all(dir);
}

TEST(OutputSafety, AnimateDiffAndHtmlShowHostileNamesEscaped) {
  const fs::path dir = temp_dir("animate-diff");
  const fs::path r = make_hostile_run(dir / "r");
  const fs::path plain = make_plain_run(dir / "plain", 6);
  Result res = run("animate " + quoted(r) + " --width 120");
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_THAT(res.out, HasSubstr("\n" + kShown + " |"));
  expect_no_raw_controls(res.out);

  res = run("diff " + quoted(plain) + " " + quoted(r));
  EXPECT_EQ(res.code, 1) << res.err;
  EXPECT_THAT(res.out,
              ::testing::ContainsRegex(
                  "\n" + std::string("x\\\\x1b\\[2J\\\\u009b\\\\u202e\\\\x07\\\\x7f\\\\x9b") +
                  " +HEALTHY +VANISHING "));
  expect_no_raw_controls(res.out);

  const fs::path page = dir / ("page" + kHostile + ".html");
  res = run("html " + quoted(r) + " -o " + quoted(page));
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_EQ(res.out, "wrote " + (dir / ("page" + kShown + ".html")).string() + " (4 charts)\n");
  fs::remove_all(dir);
}

TEST(OutputSafety, LsShowsHostileRunFoldersAndMetadataEscaped) {
  const fs::path dir = temp_dir("ls");
  const fs::path r = make_hostile_run(dir / ("r" + kHostile));
  save_hostile_embedding(r);
  fs::create_directories(dir / ("broken" + kHostile));
  std::ofstream(dir / ("broken" + kHostile) / "run.db") << "not sqlite";
  const Result res = run("ls " + quoted(dir));
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_THAT(res.out, HasSubstr("\nbroken" + kShown +
                                 "        -      -  -                     error: run database '" +
                                 (dir / ("broken" + kShown) / "run.db").string() + "'"));
  EXPECT_THAT(res.out,
              HasSubstr("\nr" + kShown + "             6      4  s" + kShown + "  unhealthy: "));
  EXPECT_THAT(res.out, HasSubstr(", worst " + kShown + " [VANISHING]; "));
  EXPECT_THAT(res.out,
              HasSubstr("; embedding: item" + kUtf8Shown + " [ZOMBIE" + kUtf8Shown + "]\n"));
  expect_no_raw_controls(res.out);
  fs::remove_all(dir);
}

TEST(OutputSafety, ErrorsAndWarningsShowHostilePathsEscaped) {
  const fs::path dir = temp_dir("errors");
  Result res = run("report " + quoted(dir / ("nope" + kHostile)));
  EXPECT_EQ(res.code, 3);
  EXPECT_THAT(res.err, StartsWith("gradscope: error: run database '" +
                                  (dir / ("nope" + kShown) / "run.db").string() + "'"));
  expect_no_raw_controls(res.err);

  const fs::path r = make_plain_run(dir / ("damaged" + kHostile), 6);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((r / "run.db").c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "UPDATE steps SET records = zeroblob(length(records)) WHERE step = 2",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  res = run("report --partial " + quoted(r));
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_THAT(res.err, StartsWith("gradscope: warning: "));
  EXPECT_THAT(res.err, HasSubstr("damaged" + kShown));
  expect_no_raw_controls(res.err);
  fs::remove_all(dir);
}

TEST(OutputSafety, CsvOutputsWriteFormulaNamesAsText) {
  const fs::path dir = temp_dir("csv");
  const fs::path r = make_hostile_run(dir / "r");
  Result res = run("report --csv " + quoted(r));
  EXPECT_EQ(res.code, 1) << res.err;
  EXPECT_THAT(res.out, HasSubstr("\n\"'=cmd|' /C calc'!A0\",6,0,5,,,,0.5,"));
  EXPECT_THAT(res.out, HasSubstr("\n\"'-1+1\",6,0,5,,,,0.5,"));
  EXPECT_THAT(res.out, HasSubstr("\ncafé/層,6,0,5,"));
  res = run("export --format csv " + quoted(r));
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_THAT(res.out, HasSubstr("\n5,\"'=cmd|' /C calc'!A0\",0.050000000000000003,0.5,0.5,0,0\n"));
  EXPECT_THAT(res.out, HasSubstr("\n5,\"'-1+1\",0.050000000000000003,0.5,0.5,0,0\n"));
  fs::remove_all(dir);
}

TEST(OutputSafety, AFailedWriteToStdoutExitsThree) {
  const fs::path dir = temp_dir("full");
  const fs::path r = make_plain_run(dir / "r", 300);  // export's CSV is larger than a stdio buffer
  const std::string run_arg = quoted(r);
  for (const std::string& args : std::vector<std::string>{
           "report " + run_arg, "report --json " + run_arg, "report --csv " + run_arg,
           "animate " + run_arg, "diff " + run_arg + " " + run_arg, "ls " + quoted(dir),
           "html " + run_arg + " -o " + quoted(dir / "p.html"), "export --format csv " + run_arg,
           "export --format jsonl " + run_arg, "--version"}) {
    SCOPED_TRACE(args);
    const Result res = run(args, "/dev/full");
    EXPECT_EQ(res.code, 3);
    EXPECT_EQ(res.err, kStdoutFull);
  }
  EXPECT_EQ(run("report " + run_arg).code, 0);  // the same commands succeed with room to write
  fs::remove_all(dir);
}

// --follow redraws until the run is closed; a run still open must not keep it drawing into a
// stdout that fails.
TEST(OutputSafety, AnimateFollowStopsWhenStdoutFails) {
  const fs::path dir = temp_dir("follow");
  gradscope::RunWriter w((dir / "r").string());
  for (int step = 0; step < 3; ++step)
    w.add({step, "head", gradscope::Site::kParamGrad, grad(1.0)});
  w.commit();  // on disk, still open
  const Result res = run("animate --follow " + quoted(dir / "r"), "/dev/full");
  EXPECT_EQ(res.code, 3);
  EXPECT_EQ(res.err, kStdoutFull);
  w.close();
  fs::remove_all(dir);
}

TEST(OutputSafety, OutOfRangeStepsAndRatesExitTwoNamingTheOption) {
  const fs::path dir = temp_dir("options");
  const std::string r = quoted(make_plain_run(dir / "r", 12));
  struct Case {
    std::string args, message;
  };
  for (const Case& c : std::vector<Case>{
           {"--from 9223372036854775808",
            "--from: 9223372036854775808 is not a step from 0 to 9223372036854775807"},
           {"--to 99999999999999999999",
            "--to: 99999999999999999999 is not a step from 0 to 9223372036854775807"},
           {"--from -1", "--from: -1 is not a step from 0 to 9223372036854775807"},
           {"--from 0x10", "--from: 0x10 is not a step from 0 to 9223372036854775807"},
           {"--fps nan", "--fps: nan is not a number from 0.1 to 30"},
           {"--fps inf", "--fps: inf is not a number from 0.1 to 30"},
           {"--fps 0.01", "--fps: 0.01 is not a number from 0.1 to 30"},
       }) {
    SCOPED_TRACE(c.args);
    const Result res = run("animate " + r + " " + c.args);
    EXPECT_EQ(res.code, 2);
    EXPECT_EQ(res.err, "gradscope: error: " + c.message + "\nrun 'gradscope --help' for usage\n");
  }
  // The largest step is accepted, and a leading zero is decimal, not octal.
  const Result res = run("animate " + r + " --from 010 --to 9223372036854775807 --fps 30");
  EXPECT_EQ(res.code, 0) << res.err;
  EXPECT_THAT(res.out,
              StartsWith("gradient flow: flow_intensity, linear scale, steps 10..11 (2 frames)\n"));
  fs::remove_all(dir);
}

}  // namespace
