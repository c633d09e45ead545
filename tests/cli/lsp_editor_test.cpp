// `gradscope lsp` in a real editor: Neovim (Debian 12's 0.7) runs headless with
// tests/cli/editors/nvim_client.lua, the set-up docs/editor.md gives, opens the fixture sources,
// and writes down the diagnostics it received and the hover it got at each. They must be the
// run's findings at the defining lines, as in lsp_test.cpp, where the protocol is driven by hand.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "lsp_fixture_run.h"
#include "run_cli.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using ::testing::HasSubstr;

const fs::path kFixtures = fs::path(GRADSCOPE_LSP_FIXTURES);
const fs::path kEditors = fs::path(GRADSCOPE_LSP_EDITORS);
// A hung editor or server fails the test instead of holding ctest until its own timeout.
constexpr int kEditorSeconds = 60;

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

struct EditorRun {
  int code = -1;     // Neovim's exit code (124: killed by the time limit)
  std::vector<Json> lines;  // what nvim_client.lua wrote, one object a line
  std::string err;
};

// Runs headless Neovim in `dir` (holding gradscope-runs/) on `file`, with `server` as the
// `gradscope` on PATH.
EditorRun run_nvim(const fs::path& dir, const fs::path& server, const fs::path& file) {
  const fs::path bin = dir / "bin", out = dir / "nvim.jsonl", err = dir / "nvim.err";
  fs::create_directories(bin);
  fs::remove(bin / "gradscope");
  fs::create_symlink(server, bin / "gradscope");
  // HOME and XDG folders in the test's folder: no user configuration, shada or log is read or
  // left behind (-u NONE -i NONE skip the init file and shada; the LSP log still goes to the
  // cache folder).
  const std::string home = quoted(dir.string());
  const std::string line = "cd " + home + " && PATH=" + quoted(bin.string()) + ":\"$PATH\" HOME=" +
                           home + " XDG_CONFIG_HOME=" + home + " XDG_DATA_HOME=" + home +
                           " XDG_STATE_HOME=" + home + " XDG_CACHE_HOME=" + home +
                           " GRADSCOPE_LSP_FILE=" + quoted(file.string()) +
                           " GRADSCOPE_LSP_OUT=" + quoted(out.string()) + " timeout -k 5 " +
                           std::to_string(kEditorSeconds) +
                           " nvim --headless -u NONE -i NONE -n -c " +
                           quoted("luafile " + (kEditors / "nvim_client.lua").string()) +
                           " </dev/null >/dev/null 2>" + quoted(err.string());
  const int status = std::system(line.c_str());
  EditorRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.err = test::slurp(err);
  std::istringstream lines(test::slurp(out));
  for (std::string l; std::getline(lines, l);) r.lines.push_back(Json::parse(l));
  return r;
}

std::vector<Json> of_kind(const EditorRun& r, const std::string& kind) {
  std::vector<Json> out;
  for (const Json& l : r.lines)
    if (l["kind"] == kind) out.push_back(l);
  return out;
}

class LspEditorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fresh_dir(std::string("lsp-editor-") +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    runs_ = dir_ / "gradscope-runs";  // where docs/editor.md's configuration looks
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Neovim on `file` against the sick run: its diagnostics are the expected ones at the same
  // lines and columns with the same messages and severities, each hover names the node and
  // shows its finding, and the server exits 0 after Neovim's shutdown and exit.
  void check(const EditorRun& r, const fs::path& file, const std::string& filetype,
             const std::map<std::string, std::pair<std::string, std::string>>& places,
             const fs::path& run) {
    ASSERT_EQ(r.code, 0) << (r.code == 124 ? "neovim hung, killed after the time limit\n" : "")
                         << r.err << "\n"
                         << Json(r.lines).dump(2);
    ASSERT_EQ(of_kind(r, "filetype").at(0)["value"], filetype);
    const Json findings = test::run_findings(run);
    const Json expected = test::expected_diagnostics(findings, test::slurp(file), places);
    const std::vector<Json> got = of_kind(r, "diagnostic");
    ASSERT_EQ(got.size(), expected.size()) << Json(r.lines).dump(2);
    ASSERT_FALSE(got.empty());
    for (std::size_t i = 0; i < got.size(); ++i) {
      const Json& e = expected[i];
      EXPECT_EQ(got[i]["line"], e["range"]["start"]["line"]) << i;
      EXPECT_EQ(got[i]["col"], e["range"]["start"]["character"]) << i;
      EXPECT_EQ(got[i]["end_col"], e["range"]["end"]["character"]) << i;
      EXPECT_EQ(got[i]["severity"], e["severity"]) << i;  // vim.diagnostic.severity is LSP's
      EXPECT_EQ(got[i]["message"], e["message"]) << i;
    }
    const std::vector<Json> hovers = of_kind(r, "hover");
    ASSERT_EQ(hovers.size(), got.size());
    for (const Json& f : findings) {
      if (!f["node"].is_string() || !places.count(f["node"])) continue;
      const auto [line, col] =
          test::position_of(test::slurp(file), places.at(f["node"]).first, places.at(f["node"]).second);
      bool seen = false;
      for (const Json& h : hovers) {
        if (h["line"] != line || h["col"] != col) continue;
        seen = true;
        ASSERT_TRUE(h["value"].is_string()) << h.dump(2);
        const std::string md = test::shown_text(h["value"]);
        EXPECT_THAT(md, HasSubstr("node " + f["node"].get<std::string>() + " in run sick (20 steps)"));
        EXPECT_THAT(md, HasSubstr("**" + f["type"].get<std::string>() + "** (confidence " +
                                  f["confidence"].get<std::string>() + ", since step " +
                                  std::to_string(f["since_step"].get<int>()) +
                                  "): " + f["premise"].get<std::string>()));
      }
      EXPECT_TRUE(seen) << "no hover at the line of " << f["node"];
    }
    ASSERT_EQ(of_kind(r, "exit").size(), 1u);
    EXPECT_EQ(of_kind(r, "exit")[0]["code"], 0) << r.err;
  }

  fs::path dir_, runs_;
};

TEST_F(LspEditorTest, NeovimShowsThePythonFindingsAndTheirHovers) {
  const fs::path run = test::make_run(runs_, "sick", true);
  const fs::path file = kFixtures / "model.py";
  check(run_nvim(dir_, GRADSCOPE_CLI, file), file, "python", test::kPythonPlaces, run);
}

TEST_F(LspEditorTest, NeovimShowsTheCppFindingsAndTheirHovers) {
  const fs::path run = test::make_run(runs_, "sick", true);
  const fs::path file = kFixtures / "model.cpp";
  check(run_nvim(dir_, GRADSCOPE_CLI, file), file, "cpp", test::kCppPlaces, run);
}

TEST_F(LspEditorTest, AServerThatCannotStartIsAnErrorNotAHang) {
  // A `gradscope` that exits at once: the client gives up within its bounded waits and says
  // so, and the test sees a non-zero exit, never a hang.
  const fs::path fake = dir_ / "fake-gradscope";
  std::ofstream(fake) << "#!/bin/sh\nexit 1\n";
  fs::permissions(fake, fs::perms::owner_all);
  const EditorRun r = run_nvim(dir_, fake, kFixtures / "model.py");
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.code, 124) << "neovim hung";
  ASSERT_EQ(of_kind(r, "error").size(), 1u) << Json(r.lines).dump(2);
}

TEST(LspEditorDocs, TheNeovim07SetUpInTheDocsIsTheOneTested) {
  const std::string docs = test::slurp(fs::path(GRADSCOPE_DOCS) / "editor.md");
  const std::string tested = test::slurp(kEditors / "nvim_0.7_init.lua");
  ASSERT_FALSE(tested.empty());
  EXPECT_THAT(docs, HasSubstr("```lua\n" + tested + "```\n"));
}

}  // namespace
}  // namespace gradscope
