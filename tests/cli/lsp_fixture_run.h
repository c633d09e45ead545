// The saved run and fixture places the language server tests share (lsp_test.cpp drives the
// server over pipes, lsp_editor_test.cpp through a real editor): a run with flagged nodes, where
// each node is defined in tests/cli/lsp_fixtures, and the diagnostics docs/editor.md says they get.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../common/stats_fixture.h"
#include "gradscope/io/store/run_writer.h"
#include "run_cli.h"

namespace gradscope::test {

namespace lsp_fs = std::filesystem;
using LspJson = nlohmann::json;

inline Stats lsp_grad(double l2) { return with_l2(l2, 10); }

/// A run in runs/<name>: "fc1" healthy; with `sick`, "encoder/fc1" vanishing, "head/proj"
/// exploding, "gate" stagnant, and "encoder.act" vanishing over only 2 steps (low confidence).
inline lsp_fs::path make_run(const lsp_fs::path& runs, const std::string& name, bool sick) {
  const lsp_fs::path dir = runs / name;
  RunWriter w(dir.string());
  for (int s = 0; s < 20; ++s) {
    w.add(Record{s, "fc1", Site::kParamGrad, lsp_grad(0.5)});
    w.add(Record{s, "fc1", Site::kActivation, with_l2(1, 10, 1, 0)});
    if (!sick) continue;
    w.add(Record{s, "encoder/fc1", Site::kParamGrad, lsp_grad(3e-9)});
    w.add(Record{s, "head/proj", Site::kParamGrad, lsp_grad(2.5e5)});
    w.add(Record{s, "gate", Site::kParamGrad, lsp_grad(1)});
    w.add(Record{s, "gate", Site::kParam, lsp_grad(1)});
    w.add(Record{s, "gate", Site::kUpdate, lsp_grad(4e-9)});
    w.add(Record{s, "tail/t2", Site::kParamGrad, lsp_grad(3e-9)});
    // A dotted id, as the audit names a node given as a named_modules() path.
    if (s < 2) w.add(Record{s, "encoder.act", Site::kParamGrad, lsp_grad(3e-9)});
  }
  w.close();
  return dir;
}

/// The file: URI an editor sends for `p`.
inline std::string file_uri(const lsp_fs::path& p) {
  return "file://" + lsp_fs::absolute(p).string();
}

/// Where `name` sits in the first line containing `context`: {line, column}.
inline std::pair<int, int> position_of(const std::string& text, const std::string& context,
                                       const std::string& name) {
  std::istringstream lines(text);
  std::string line;
  for (int n = 0; std::getline(lines, line); ++n) {
    const std::size_t at = line.find(context);
    if (at != std::string::npos) return {n, static_cast<int>(at + context.find(name))};
  }
  ADD_FAILURE() << "fixture has no line with " << context;
  return {-1, -1};
}

/// The run's findings as the agent JSON gives them.
inline LspJson run_findings(const lsp_fs::path& run) {
  const Result r = run_cli("report --json " + run.string());
  return LspJson::parse(r.out)["findings"];
}

/// Markdown as a reader sees it: a backslash before ASCII punctuation shows the punctuation.
inline std::string shown_text(const std::string& md) {
  std::string out;
  for (std::size_t i = 0; i < md.size(); ++i) {
    if (md[i] == '\\' && i + 1 < md.size() && std::ispunct(static_cast<unsigned char>(md[i + 1])))
      ++i;
    out.push_back(md[i]);
  }
  return out;
}

/// The diagnostics a file should get: each finding whose node `where` places, at that place,
/// with the severity docs/editor.md gives and the finding's own texts.
inline LspJson expected_diagnostics(
    const LspJson& findings, const std::string& text,
    const std::map<std::string, std::pair<std::string, std::string>>& where) {
  std::vector<std::pair<std::pair<int, int>, LspJson>> out;
  for (const LspJson& f : findings) {
    if (!f["node"].is_string() || !where.count(f["node"])) continue;
    const auto& [context, name] = where.at(f["node"]);
    const auto [line, col] = position_of(text, context, name);
    const std::string type = f["type"];
    const bool breaks = type == "NAN" || type == "INF" || type == "EXPLODING" || type == "DEAD" ||
                        type == "VANISHING";
    const int severity = f["confidence"] == "low" ? 3 : breaks ? 1 : 2;
    const LspJson range = {
        {"start", {{"line", line}, {"character", col}}},
        {"end", {{"line", line}, {"character", col + static_cast<int>(name.size())}}}};
    out.push_back({{line, col},
                   {{"range", range},
                    {"severity", severity},
                    {"code", type},
                    {"source", "gradscope"},
                    {"message", type + " (" + f["node"].get<std::string>() +
                                    "): " + f["premise"].get<std::string>() +
                                    "\nWhat to do: " + f["action"].get<std::string>()}}});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  LspJson diags = LspJson::array();
  for (const auto& d : out) diags.push_back(d.second);
  return diags;
}

/// Where each node of make_run is defined in lsp_fixtures/model.py: {text of the line, name}.
inline const std::map<std::string, std::pair<std::string, std::string>> kPythonPlaces = {
    {"encoder/fc1", {"self.fc1 = nn.Linear(8, 16)", "fc1"}},
    {"encoder.act", {"self.act = nn.ReLU()", "act"}},
    {"head/proj", {"(\"proj\", nn.Linear(16, 4))", "proj"}},
    {"gate", {"add_module(\"gate\"", "gate"}},
    {"tail/t2", {"(\"t2\", nn.Tanh())", "t2"}},  // the second entry of a one-line Sequential
};

/// The same in lsp_fixtures/model.cpp.
inline const std::map<std::string, std::pair<std::string, std::string>> kCppPlaces = {
    {"encoder/fc1", {"register_module(\"fc1\"", "fc1"}},
    {"head/proj", {"{\"proj\", torch::nn::Linear(16, 4)}", "proj"}},
    {"gate", {"register_module(\"gate\"", "gate"}},
};

}  // namespace gradscope::test
