// A run's documents from the command line: a lost or damaged document makes a damaged run
// (exit 3, the document named) for every command that reads documents, never a quieter verdict
// (issue 41: one deleted row turned `report` from unhealthy to healthy, exit 0).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>

#include "../common/stats_fixture.h"
#include "embedding_fixture.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/store/run_writer.h"
#include "run_cli.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using test::run_cli;
using ::testing::HasSubstr;

// A run of healthy steps whose embedding document holds one ZOMBIE_ROWS finding (unhealthy),
// and a units.json, both in run.db.
fs::path zombie_run(const fs::path& dir) {
  {
    RunWriter w(dir.string());
    for (int s = 0; s < 10; ++s) w.add(Record{s, "head", Site::kParamGrad, test::with_l2(0.5, 10)});
    w.close();
  }
  save_embedding_summary(dir.string(), test::zombie_table_summary(0.9));
  put_run_document(dir.string(), "units.json", "{}");
  return dir;
}

void sql(const fs::path& run, const std::string& statement) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open((run / "run.db").c_str(), &db), SQLITE_OK);
  EXPECT_EQ(sqlite3_exec(db, statement.c_str(), nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);
}

// Each command that reads the run's documents, on `run`.
std::vector<std::string> document_commands(const fs::path& run) {
  const std::string r = run.string(), out = run.parent_path().string();
  return {"report " + r,
          "report --json " + r,
          "export " + r + " --format documents -o " + out + "/documents",
          "export " + r + " --format tensorboard -o " + out + "/tensorboard",
          "html " + r + " -o " + out + "/page.html",
          "diff " + r + " " + r,
          "compress " + r + " --budget-bytes 100"};
}

TEST(RunDocumentsCli, ALostDocumentIsADamagedRunNamingIt) {
  const fs::path run = zombie_run(test::fresh_dir("docs-cli-lost") / "run");
  test::Result r = run_cli("report " + run.string());
  ASSERT_EQ(r.code, 1) << r.err;
  EXPECT_THAT(r.out, HasSubstr("ZOMBIE_ROWS"));

  sql(run, "DELETE FROM documents WHERE name = 'embedding.json'");
  const std::string lost = "run database '" + (run / "run.db").string() +
                           "', document 'embedding.json': missing (meta says it was committed; table documents does "
                           "not hold it)";
  for (const std::string& command : document_commands(run)) {
    r = run_cli(command);
    EXPECT_EQ(r.code, 3) << command << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(lost)) << command;
  }
  fs::remove_all(run.parent_path());
}

TEST(RunDocumentsCli, ADamagedDocumentIsADamagedRunNamingIt) {
  const fs::path run = zombie_run(test::fresh_dir("docs-cli-damaged") / "run");
  sql(run, "UPDATE documents SET body = body || ' ' WHERE name = 'units.json'");
  const std::string damaged =
      "run database '" + (run / "run.db").string() + "', document 'units.json': damaged (checksum mismatch)";
  for (const std::string& command : {"export " + run.string() + " --format documents -o " +
                                         (run.parent_path() / "documents").string(),
                                     "compress " + run.string() + " --budget-bytes 100"}) {
    const test::Result r = run_cli(command);
    EXPECT_EQ(r.code, 3) << command << "\n" << r.out << r.err;
    EXPECT_THAT(r.err, HasSubstr(damaged)) << command;
  }
  fs::remove_all(run.parent_path());
}

}  // namespace
}  // namespace gradscope
