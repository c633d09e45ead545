// `gradscope lsp` driven as an editor drives it, over pipes: initialize,
// didOpen of the fixture sources (tests/cli/lsp_fixtures) in Python and C++,
// publishDiagnostics at the definitions with the saved run's findings (as
// `report --json` gives them), hover, shutdown and exit; and a client that
// sends garbage or goes away mid-message (docs/editor.md).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include "embedding_fixture.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/store/run_documents.h"
#include "lsp_client.h"
#include "lsp_fixture_run.h"
#include "run_cli.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using test::LspClient;
using test::expected_diagnostics;
using test::file_uri;
using test::kCppPlaces;
using test::kPythonPlaces;
using test::make_run;
using test::position_of;
using test::run_findings;
using test::shown_text;
using ::testing::HasSubstr;
using ::testing::Not;

const fs::path kFixtures = fs::path(GRADSCOPE_LSP_FIXTURES);

std::string read_file(const fs::path& p) { return test::slurp(p); }

class LspTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = test::fresh_dir(std::string("lsp-") +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name());
    runs_ = dir_ / "runs";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<LspClient> start(const std::vector<std::string>& args,
                                   const Json& options = nullptr) {
    auto c = std::make_unique<LspClient>(args, dir_ / "stderr");
    Json params = {{"processId", nullptr}, {"rootUri", nullptr}, {"capabilities", Json::object()}};
    if (!options.is_null()) params["initializationOptions"] = options;
    c->request(1, "initialize", params);
    const auto init = c->response(1);
    EXPECT_TRUE(init.has_value()) << c->err();
    if (init) {
      EXPECT_EQ((*init)["result"]["capabilities"]["hoverProvider"], true);
      EXPECT_EQ((*init)["result"]["capabilities"]["textDocumentSync"]["change"], 1);
    }
    c->notify("initialized", Json::object());
    return c;
  }

  // didOpen of a fixture; returns its publishDiagnostics params.
  Json open(LspClient& c, const fs::path& file, const std::string& language) {
    c.notify("textDocument/didOpen", {{"textDocument",
                                       {{"uri", file_uri(file)},
                                        {"languageId", language},
                                        {"version", 1},
                                        {"text", read_file(file)}}}});
    const auto published = c.next_with("textDocument/publishDiagnostics");
    EXPECT_TRUE(published.has_value()) << c.err();
    return published ? (*published)["params"] : Json();
  }

  // didChange with the file's whole text (full sync); returns its publishDiagnostics params.
  Json change(LspClient& c, const fs::path& file) {
    c.notify("textDocument/didChange", {{"textDocument", {{"uri", file_uri(file)}, {"version", 2}}},
                                        {"contentChanges", {{{"text", read_file(file)}}}}});
    const auto published = c.next_with("textDocument/publishDiagnostics");
    EXPECT_TRUE(published.has_value()) << c.err();
    return published ? (*published)["params"] : Json();
  }

  Json hover(LspClient& c, int id, const fs::path& file, std::pair<int, int> at) {
    c.request(id, "textDocument/hover",
              {{"textDocument", {{"uri", file_uri(file)}}},
               {"position", {{"line", at.first}, {"character", at.second}}}});
    const auto r = c.response(id);
    EXPECT_TRUE(r.has_value()) << c.err();
    return r ? *r : Json();
  }

  void shutdown_and_exit(LspClient& c, int expect = 0) {
    c.request(99, "shutdown", nullptr);
    const auto r = c.response(99);
    ASSERT_TRUE(r.has_value()) << c.err();
    EXPECT_TRUE((*r)["result"].is_null());
    c.notify("exit", nullptr);
    EXPECT_EQ(c.wait(), expect) << c.err();
  }

  fs::path dir_, runs_;
};

TEST_F(LspTest, PythonDiagnosticsSitOnTheDefiningNamesWithTheRunsFindings) {
  const fs::path run = make_run(runs_, "sick", true);
  const Json findings = run_findings(run);
  ASSERT_GE(findings.size(), 4u);
  auto c = start({"lsp", "--runs", runs_.string()});
  const fs::path file = kFixtures / "model.py";
  const Json published = open(*c, file, "python");
  EXPECT_EQ(published["uri"], file_uri(file));
  const Json expected = expected_diagnostics(findings, read_file(file), kPythonPlaces);
  ASSERT_EQ(expected.size(), 5u) << findings.dump(2);
  EXPECT_EQ(published["diagnostics"], expected) << published.dump(2);
  // One of each severity: VANISHING high (Error), STAGNANT (Warning), 2 steps
  // (Information).
  std::set<int> severities;
  for (const Json& d : published["diagnostics"]) severities.insert(d["severity"].get<int>());
  EXPECT_EQ(severities, (std::set<int>{1, 2, 3}));
  shutdown_and_exit(*c);
}

TEST_F(LspTest, CppDiagnosticsSitOnRegisterModuleAndSequentialNames) {
  const fs::path run = make_run(runs_, "sick", true);
  const Json findings = run_findings(run);
  auto c = start({"lsp", "--run", run.string()});
  const fs::path file = kFixtures / "model.cpp";
  const Json published = open(*c, file, "cpp");
  const Json expected = expected_diagnostics(findings, read_file(file), kCppPlaces);
  ASSERT_EQ(expected.size(), 3u);  // encoder.act and tail/t2 are not in the C++ model
  EXPECT_EQ(published["diagnostics"], expected) << published.dump(2);
  shutdown_and_exit(*c);
}

TEST_F(LspTest, HoverShowsTheNodesFlagsAndEvidence) {
  const fs::path run = make_run(runs_, "sick", true);
  const Json findings = run_findings(run);
  auto c = start({"lsp"}, {{"runs", runs_.string()}});
  const fs::path file = kFixtures / "model.py";
  const std::string text = read_file(file);
  open(*c, file, "python");
  auto [line, col] = position_of(text, "(\"proj\", nn.Linear(16, 4))", "proj");
  const Json r = hover(*c, 2, file, {line, col + 2});
  ASSERT_TRUE(r["result"].is_object()) << r.dump(2);
  EXPECT_EQ(r["result"]["contents"]["kind"], "markdown");
  // The run's strings are markdown-escaped (a node name is data): read back as
  // shown.
  const std::string md = shown_text(r["result"]["contents"]["value"]);
  EXPECT_THAT(r["result"]["contents"]["value"].get<std::string>(), HasSubstr("param\\_grad"));
  const Json* exploding = nullptr;
  for (const Json& f : findings)
    if (f["node"] == "head/proj") exploding = &f;
  ASSERT_NE(exploding, nullptr);
  EXPECT_THAT(md, HasSubstr("node head/proj in run sick (20 steps)"));
  EXPECT_THAT(
      md, HasSubstr("**EXPLODING** (confidence " + (*exploding)["confidence"].get<std::string>() +
                    ", since step 0): " + (*exploding)["premise"].get<std::string>()));
  EXPECT_THAT(md, HasSubstr("What to do: " + (*exploding)["action"].get<std::string>()));
  // The evidence table: the measured value and the threshold it was compared
  // with.
  const Json& e = (*exploding)["evidence"][0];
  EXPECT_THAT(md, HasSubstr("| " + e["name"].get<std::string>() + " | 250000 | > 1000 |")) << md;

  // fc1 in the Model class: the healthy top-level node (and, named the same,
  // encoder/fc1).
  const Json healthy = hover(*c, 3, file, position_of(text, "self.fc1 = nn.Linear(16, 16)", "fc1"));
  EXPECT_THAT(healthy["result"]["contents"]["value"].get<std::string>(),
              HasSubstr("node fc1 in run sick (20 steps)\n\nhealthy: no finding"));
  // fc1 in the Encoder: encoder/fc1 only (the top-level fc1 is the model's, not the encoder's).
  const std::string encoder_fc1 = shown_text(hover(
      *c, 5, file,
      position_of(text, "self.fc1 = nn.Linear(8, 16)", "fc1"))["result"]["contents"]["value"]);
  EXPECT_THAT(encoder_fc1, HasSubstr("node encoder/fc1 in run sick"));
  EXPECT_THAT(encoder_fc1, Not(HasSubstr("node fc1 in run")));
  // Not a definition (the `self.fc1 == None` comparison): no hover.
  EXPECT_TRUE(hover(*c, 4, file, position_of(text, "self.fc1 == None", "fc1"))["result"].is_null());
  shutdown_and_exit(*c);
}

TEST_F(LspTest, AHealthyRunPublishesNoDiagnosticsAndANewerRunReplacesIt) {
  make_run(runs_, "a-healthy", false);
  auto c = start({"lsp", "--runs", runs_.string()});
  const fs::path file = kFixtures / "model.py";
  EXPECT_EQ(open(*c, file, "python")["diagnostics"], Json::array());
  // A newer run appears (its run.db written after the first): the next change
  // shows it.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const fs::path sick = make_run(runs_, "b-sick", true);
  EXPECT_EQ(change(*c, file)["diagnostics"],
            expected_diagnostics(run_findings(sick), read_file(file), kPythonPlaces));
  // didClose clears the file's diagnostics.
  c->notify("textDocument/didClose", {{"textDocument", {{"uri", file_uri(file)}}}});
  const auto cleared = c->next_with("textDocument/publishDiagnostics");
  ASSERT_TRUE(cleared.has_value());
  EXPECT_EQ((*cleared)["params"]["diagnostics"], Json::array());
  shutdown_and_exit(*c);
}

TEST_F(LspTest, TheNamedRunIsReReadWhenItsDatabaseChanges) {
  const fs::path run = make_run(runs_, "run", false);
  auto c = start({"lsp", "--run", run.string()});
  const fs::path file = kFixtures / "model.cpp";
  EXPECT_EQ(open(*c, file, "cpp")["diagnostics"], Json::array());
  fs::remove_all(run);
  make_run(runs_, "run", true);  // the same folder, written again
  EXPECT_EQ(change(*c, file)["diagnostics"],
            expected_diagnostics(run_findings(run), read_file(file), kCppPlaces));
  shutdown_and_exit(*c);
}

// Embedding findings saved into the run (a PyTorch user's EmbeddingTracker.save, or C++'s
// save_embedding_summary) reach the editor like module findings, on the table's definition.
TEST_F(LspTest, EmbeddingFindingsSavedInTheRunSitOnTheTablesDefinition) {
  const fs::path run = make_run(runs_, "rec", false);
  auto c = start({"lsp", "--run", run.string()});
  const fs::path file = kFixtures / "recommender.py";
  EXPECT_EQ(open(*c, file, "python")["diagnostics"], Json::array());
  save_embedding_summary(run.string(), test::zombie_table_summary(0.99));
  ASSERT_EQ(stored_run_documents(run.string()), std::vector<std::string>{"embedding.json"});
  const Json findings = run_findings(run);
  const Json expected = expected_diagnostics(findings, read_file(file), {{"item", {"self.item = nn.Embedding", "item"}}});
  ASSERT_EQ(expected.size(), 1u) << findings.dump(2);
  EXPECT_EQ(change(*c, file)["diagnostics"], expected);
  shutdown_and_exit(*c);
}

TEST_F(LspTest, GarbageGetsErrorResponsesAndTheServerStaysUp) {
  make_run(runs_, "sick", true);
  auto c = start({"lsp", "--runs", runs_.string()});
  const auto expect_error = [&](int code) {
    const auto m = c->next(5);
    ASSERT_TRUE(m.has_value()) << c->err();
    EXPECT_EQ((*m)["error"]["code"], code) << m->dump();
  };
  c->send_raw("hello there\r\n\r\n");  // a header line without ':'
  expect_error(-32700);
  c->send_raw("Content-Length: twelve\r\n\r\n");
  expect_error(-32700);
  c->send_raw("Content-Length: 99999999999\r\n\r\n");  // above the limit:
                                                       // refused, not allocated
  expect_error(-32700);
  c->send_raw("Content-Length: 9\r\n\r\n{\"id\": 1,");  // invalid JSON
  expect_error(-32700);
  c->send_raw("Content-Length: 7\r\n\r\n[1,2,3]");  // JSON, but not a request
  expect_error(-32600);
  c->request(5, "textDocument/definition", Json::object());
  const auto unknown = c->response(5);
  ASSERT_TRUE(unknown.has_value());
  EXPECT_EQ((*unknown)["error"]["code"], -32601);
  c->notify("$/someNotification", Json::object());  // unknown notifications: ignored
  c->request(9, "initialize", Json::object());      // only once
  const auto twice = c->response(9);
  ASSERT_TRUE(twice.has_value());
  EXPECT_EQ((*twice)["error"]["code"], -32600);
  c->request(6, "textDocument/hover", {{"position", "nowhere"}});
  const auto bad = c->response(6);
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ((*bad)["error"]["code"], -32602);
  // Still serving: a file opens and gets its diagnostics.
  EXPECT_EQ(open(*c, kFixtures / "model.cpp", "cpp")["diagnostics"].size(), 3u);
  shutdown_and_exit(*c);
  EXPECT_THAT(c->err(), HasSubstr("gradscope: error: lsp: header line without ':'"));
  EXPECT_THAT(c->err(), HasSubstr("Content-Length is not a number"));
  EXPECT_THAT(c->err(), HasSubstr("not valid JSON"));
}

TEST_F(LspTest, RandomBytesAndDeepJsonNeverCrashOrHang) {
  make_run(runs_, "sick", true);
  auto c = start({"lsp", "--runs", runs_.string()});
  // JSON nested a million deep: parsed and freed without recursion on the stack.
  const std::string deep = std::string(1000000, '[') + std::string(1000000, ']');
  c->send_raw("Content-Length: " + std::to_string(deep.size()) + "\r\n\r\n" + deep);
  const auto answer = c->next(20);
  ASSERT_TRUE(answer.has_value()) << c->err();
  EXPECT_EQ((*answer)["error"]["code"], -32600);
  // A line of megabytes (minified code) is skipped, not searched to the end of the stack.
  c->notify(
      "textDocument/didOpen",
      {{"textDocument",
        {{"uri", "file:///long.py"},
         {"languageId", "python"},
         {"version", 1},
         {"text", "self.gate: " + std::string(2000000, 'a') + "\nself.gate = nn.ReLU()\n"}}}});
  const auto long_line = c->next_with("textDocument/publishDiagnostics", 20);
  ASSERT_TRUE(long_line.has_value()) << c->err();
  ASSERT_EQ((*long_line)["params"]["diagnostics"].size(), 1u);
  EXPECT_EQ((*long_line)["params"]["diagnostics"][0]["range"]["start"]["line"], 1);
  // Seeded random bytes, some framed as messages, some not; and well-formed requests with
  // parameters of every wrong type.
  std::mt19937 rng(17);
  for (int i = 0; i < 200; ++i) {
    std::string junk(rng() % 300, '\0');
    for (char& ch : junk) ch = static_cast<char>(rng());
    if (i % 2) junk = "Content-Length: " + std::to_string(junk.size()) + "\r\n\r\n" + junk;
    c->send_raw(junk);
  }
  for (const Json& bad : {Json(nullptr), Json(3), Json("x"), Json::array(), Json::object()}) {
    c->request(7, "textDocument/hover", {{"textDocument", bad}, {"position", bad}});
    c->notify("textDocument/didOpen", {{"textDocument", bad}});
    c->notify("textDocument/didChange", {{"textDocument", bad}, {"contentChanges", bad}});
    c->request(8, "initialize", {{"initializationOptions", bad}});
  }
  c->close_input();
  const int code = c->wait(20);
  EXPECT_TRUE(code == 1 || code == 3) << code << c->err();  // ended, not killed by a signal
  EXPECT_THAT(c->err(), HasSubstr("gradscope: error: lsp:"));
}

TEST_F(LspTest, InputEndingMidMessageExitsNonZeroPromptly) {
  make_run(runs_, "sick", true);
  auto c = start({"lsp", "--runs", runs_.string()});
  c->send_raw("Content-Length: 100\r\n\r\n{\"jsonrpc\": \"2.0\", ");
  c->close_input();
  EXPECT_EQ(c->wait(5), 3);
  EXPECT_THAT(c->err(), HasSubstr("standard input ended in the middle of a message"));
}

// A client that goes away while the server writes: not killed by SIGPIPE (exit 141, no word)
// but exit 3 with what failed, as docs/editor.md says.
TEST_F(LspTest, AClientThatStopsReadingEndsTheServerWithExit3) {
  make_run(runs_, "sick", true);
  auto c = start({"lsp", "--runs", runs_.string()});
  // After the start: an ignored signal stays ignored in a child across exec, and the server
  // must cope with SIGPIPE's default. This process writes to a server that may be gone.
  const auto before = std::signal(SIGPIPE, SIG_IGN);
  c->close_output();
  c->request(2, "shutdown", nullptr);  // its answer cannot be written
  EXPECT_EQ(c->wait(5), 3);
  EXPECT_THAT(c->err(), HasSubstr("lsp: cannot write to standard output"));
  std::signal(SIGPIPE, before);  // the next tests' servers start as an editor starts them
}

TEST_F(LspTest, InputEndingInAHeaderOrWithoutExitIsNotASuccess) {
  {
    LspClient c({"lsp"}, dir_ / "stderr");
    c.send_raw("Content-Len");
    c.close_input();
    EXPECT_EQ(c.wait(5), 3);
  }
  {
    auto c = start({"lsp", "--runs", runs_.string()});
    c->close_input();  // no shutdown, no exit: LSP's exit code 1
    EXPECT_EQ(c->wait(5), 1);
  }
  {
    auto c = start({"lsp", "--runs", runs_.string()});
    c->notify("exit", nullptr);  // exit without shutdown: 1
    EXPECT_EQ(c->wait(5), 1);
  }
}

TEST_F(LspTest, AnUnreadableRunIsAShowMessageErrorAndTheServerStaysUp) {
  fs::create_directories(runs_ / "broken");
  std::ofstream(runs_ / "broken" / "run.db") << "this is not a database";
  auto c = start({"lsp", "--runs", runs_.string()});
  const auto shown = c->next_with("window/showMessage");
  ASSERT_TRUE(shown.has_value()) << c->err();
  EXPECT_EQ((*shown)["params"]["type"], 1);
  EXPECT_THAT((*shown)["params"]["message"].get<std::string>(), HasSubstr("broken"));
  // Files still open, with nothing to show; the error is said once, not per
  // file.
  EXPECT_EQ(open(*c, kFixtures / "model.py", "python")["diagnostics"], Json::array());
  shutdown_and_exit(*c);
  EXPECT_THAT(c->err(), HasSubstr("gradscope: error: lsp:"));
}

TEST_F(LspTest, NoRunConfiguredIsSaidAndRequestsBeforeInitializeAreRefused) {
  LspClient c({"lsp"}, dir_ / "stderr");
  c.request(1, "textDocument/hover", Json::object());
  const auto early = c.response(1);
  ASSERT_TRUE(early.has_value());
  EXPECT_EQ((*early)["error"]["code"], -32002);
  c.request(2, "initialize", Json::object());
  ASSERT_TRUE(c.response(2).has_value());
  c.notify("initialized", Json::object());
  const auto shown = c.next_with("window/showMessage");
  ASSERT_TRUE(shown.has_value());
  EXPECT_THAT((*shown)["params"]["message"].get<std::string>(), HasSubstr("no run configured"));
  c.request(3, "shutdown", nullptr);
  ASSERT_TRUE(c.response(3).has_value());
  c.notify("exit", nullptr);
  EXPECT_EQ(c.wait(), 0);
}

}  // namespace
}  // namespace gradscope
