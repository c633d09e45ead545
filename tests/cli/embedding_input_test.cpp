// A damaged or hostile embedding.json beside a run (the layout before schema 5, which still
// reads), as the commands over saved runs meet it: each says which file and which field (exit
// 3) instead of crashing, hanging on a FIFO or reading a device without end.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "gradscope/core/embedding/rows.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_writer.h"
#include "../common/schema4_run.h"

namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::StartsWith;

struct Outcome {
  int code;  // the exit status; 124 when the time limit ended it
  std::string out, err;
};

std::string contents(const fs::path& p) {
  std::ostringstream s;
  s << std::ifstream(p, std::ios::binary).rdbuf();
  return s.str();
}

// `gradscope ARGS` under `timeout` (so a command that blocks fails the test instead of hanging
// it) and the shell limits `limits` (e.g. "ulimit -v 4000000;"), its output kept in `scratch`.
Outcome gradscope(const std::string& args, const fs::path& scratch, const std::string& limits = "") {
  const fs::path out = scratch / "stdout", err = scratch / "stderr";
  const std::string line = limits + " timeout 30 " + GRADSCOPE_CLI + " " + args + " >" + out.string() + " 2>" +
                           err.string() + " </dev/null";
  const int status = std::system(line.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), contents(out), contents(err)};
}

gradscope::Stats gradient(double l2) {
  gradscope::Stats s;
  s.count = s.finite = 4;
  s.sum_sq = l2 * l2;
  s.sum = s.sum_abs = s.max = s.max_abs = l2;
  return s;
}

// Writes beside `run` the embedding.json of a real table: 8 rows of which 6 were in every batch
// of 4 steps and moved each time (its histograms have 20 bins). Saved into a folder without a
// run it is a file, as every run before schema 5 kept it.
void save_valid_summary(const fs::path& run) {
  gradscope::EmbeddingRows rows(8, 2);
  for (int64_t step = 0; step < 4; ++step) {
    for (int64_t row = 0; row < 6; ++row) {
      rows.expose(row, step);
      const float delta[2] = {0.01f * static_cast<float>(row + 1), step % 2 ? 0.02f : -0.02f};
      rows.record_update(row, delta, 1.0);
    }
  }
  gradscope::EmbeddingRunSummary summary;
  summary.tables.push_back({gradscope::diagnose_embedding("item", rows, 4, {}), gradscope::profile_embedding("item", rows)});
  const fs::path loose = run.parent_path() / "loose";
  gradscope::save_embedding_summary(loose.string(), summary);
  fs::rename(loose / "embedding.json", run / "embedding.json");
  fs::remove(loose);
}

// A healthy run of two nodes and three steps with a valid embedding.json, in a fresh folder
// named after `name`; returns the run directory.
fs::path run_with_embedding(const std::string& name) {
  const fs::path dir = fs::temp_directory_path() / ("gradscope-cli-emb-" + name + "-" + std::to_string(getpid()));
  fs::remove_all(dir);
  gradscope::RunWriter w((dir / "run").string(), {});
  for (int64_t step = 0; step < 3; ++step)
    for (const char* node : {"embed", "head"}) w.add({step, node, gradscope::Site::kParamGrad, gradient(0.5)});
  w.close();
  gradscope::test::make_schema4(dir / "run");
  save_valid_summary(dir / "run");
  return dir / "run";
}

// Replaces the value at `at` in <run>/embedding.json with the JSON `literal`.
void edit(const fs::path& run, const std::string& at, const std::string& literal) {
  nlohmann::ordered_json doc = nlohmann::ordered_json::parse(contents(run / "embedding.json"));
  doc[nlohmann::ordered_json::json_pointer(at)] = nlohmann::ordered_json::parse(literal);
  std::ofstream(run / "embedding.json", std::ios::trunc) << doc.dump(1);
}

std::string error_line(const fs::path& run, const std::string& what) {
  return "gradscope: error: embedding file '" + (run / "embedding.json").string() + "': " + what + "\n";
}

TEST(EmbeddingInput, HistogramBinsWithoutEdgesAreAnErrorInEveryCommand) {
  const fs::path run = run_with_embedding("edges");
  ASSERT_EQ(gradscope("html " + run.string() + " -o " + (run / "ok.html").string(), run).code, 0);
  edit(run, "/gradscope_embedding_run/tables/0/profile/exposure/edges", "[]");
  const std::string want = error_line(run, "gradscope_embedding_run.tables[0].profile.exposure: 0 histogram edges for 20 bins");
  for (const std::string& args : {"report " + run.string(), "report --json " + run.string(),
                                 "html " + run.string() + " -o " + (run / "page.html").string()}) {
    SCOPED_TRACE(args);
    const Outcome r = gradscope(args, run);
    EXPECT_EQ(r.code, 3);
    EXPECT_EQ(r.err, want);
    EXPECT_EQ(r.out, "");
  }
  EXPECT_FALSE(fs::exists(run / "page.html"));
  // ls lists the run with the error instead of its health.
  const Outcome ls = gradscope("ls " + run.parent_path().string(), run);
  EXPECT_EQ(ls.code, 0);
  EXPECT_THAT(ls.out, HasSubstr("error: " + want.substr(std::string("gradscope: error: ").size())));
  fs::remove_all(run.parent_path());
}

TEST(EmbeddingInput, VersionAndCountsMustBeExactIntegers) {
  const fs::path run = run_with_embedding("version");
  const std::pair<const char*, const char*> cases[] = {
      {"/gradscope_embedding_run/version", "1e300"},
      {"/gradscope_embedding_run/version", "1.5"},
      {"/gradscope_embedding_run/tables/0/profile/num_embeddings", "-1"},
      {"/gradscope_embedding_run/tables/0/report/embedding_stats/state_bytes", "18446744073709551616"}};
  const std::string fields[] = {"gradscope_embedding_run.version", "gradscope_embedding_run.version",
                                "gradscope_embedding_run.tables[0].profile.num_embeddings",
                                "gradscope_embedding_run.tables[0].report.embedding_stats.state_bytes"};
  const std::string shown[] = {"1e+300", "1.5", "-1", "1.8446744073709552e+19"};
  for (int i = 0; i < 4; ++i) {
    SCOPED_TRACE(cases[i].second);
    save_valid_summary(run);
    edit(run, cases[i].first, cases[i].second);
    const Outcome r = gradscope("report " + run.string(), run);
    EXPECT_EQ(r.code, 3);
    EXPECT_EQ(r.err, error_line(run, fields[i] + ": must be an integer from 0 to 9223372036854775807, got " + shown[i]));
  }
  fs::remove_all(run.parent_path());
}

TEST(EmbeddingInput, AFifoIsRefusedWithoutWaitingForAWriter) {
  const fs::path run = run_with_embedding("fifo");
  fs::remove(run / "embedding.json");
  ASSERT_EQ(mkfifo((run / "embedding.json").c_str(), 0600), 0);
  for (const std::string& args : {"report " + run.string(), "html " + run.string() + " -o " + (run / "page.html").string()}) {
    SCOPED_TRACE(args);
    const Outcome r = gradscope(args, run);
    EXPECT_EQ(r.code, 3);  // 124: it waited for a writer until the time limit
    EXPECT_EQ(r.err, error_line(run, "not a regular file (a FIFO)"));
  }
  fs::remove_all(run.parent_path());
}

TEST(EmbeddingInput, ALinkToADeviceIsRefusedUnread) {
  const fs::path run = run_with_embedding("device");
  fs::remove(run / "embedding.json");
  fs::create_symlink("/dev/zero", run / "embedding.json");
  // 4 GB of address space: were /dev/zero read, memory would run out within seconds.
  const Outcome r = gradscope("report " + run.string(), run, "ulimit -v 4000000;");
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, error_line(run, "not a regular file (a character device)"));
  fs::remove_all(run.parent_path());
}

TEST(EmbeddingInput, AFileOverTheSizeLimitIsRefusedUnread) {
  const fs::path run = run_with_embedding("size");
  fs::resize_file(run / "embedding.json", gradscope::kMaxEmbeddingFileBytes + 1);
  const Outcome r = gradscope("report " + run.string(), run);
  EXPECT_EQ(r.code, 3);
  EXPECT_EQ(r.err, error_line(run, "larger than the limit of 8388608 bytes (8388609 bytes)"));
  fs::remove_all(run.parent_path());
}

}  // namespace
