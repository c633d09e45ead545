// gradscope diff RUN_A RUN_B: which nodes changed health between two runs, and how far their
// gradient norms moved; for two tree runs, which tree findings each has and how their losses
// compare. Exit 1 when some node is worse in RUN_B, or RUN_B has a tree finding RUN_A has not.
// --json says the same as one document, with the findings new in B and gone from B in the
// agent schema (docs/agent-json.md).
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "commands.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/render/findings_json.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/table.h"
#include "gradscope/io/trees/text.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct DiffOptions {
  std::string run_a, run_b;
  bool partial = false, json = false;
};

using Json = nlohmann::ordered_json;

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(); }

// A finding is "the same" in both runs when its kind, type and node are.
std::string finding_key(const Finding& f) { return f.kind + '\n' + f.type + '\n' + f.node; }

// Findings of `from` whose key `other` lacks.
std::vector<Finding> missing_in(const std::vector<Finding>& from, const std::vector<Finding>& other) {
  std::vector<Finding> out;
  for (const Finding& f : from) {
    bool found = false;
    for (const Finding& g : other) found = found || finding_key(f) == finding_key(g);
    if (!found) out.push_back(f);
  }
  return out;
}

struct RunFindings {
  std::vector<Finding> findings;
  bool unhealthy = false;
};

RunFindings findings_of(const LoadedRun& run, const std::optional<TreeRunSummary>& trees) {
  const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(run.path);
  const EmbeddingRunSummary* e = embedding ? &*embedding : nullptr;
  const TreeRunSummary* t = trees ? &*trees : nullptr;
  return {run_findings(run.report, run.flow, e, t), run_unhealthy(run.report, run.flow, e, t)};
}

Json run_json(const LoadedRun& run, const RunFindings& f, bool tree_run) {
  return {{"path", run.path},
          {"name", run.meta.name},
          {"steps", run.steps},
          {"gradient_flow", tree_run ? Json() : Json(flow_health_name(run.flow.health))},
          {"unhealthy", f.unhealthy},
          {"findings", f.findings.size()}};
}

// The document of --json: both runs, per node (or per tree flag) what changed, and the
// findings that appeared or went away.
void print_json(const LoadedRun& a, const LoadedRun& b, const std::optional<TreeRunSummary>& ta,
                const std::optional<TreeRunSummary>& tb, Json changes, int changed, int worse) {
  const bool trees = ta && tb;
  const RunFindings fa = findings_of(a, ta), fb = findings_of(b, tb);
  Json doc;
  doc["gradscope_diff"] = {{"a", run_json(a, fa, trees)},
                           {"b", run_json(b, fb, trees)},
                           {trees ? "trees" : "nodes", std::move(changes)},
                           {"changed", changed},
                           {"worse", worse}};
  doc["findings_version"] = kFindingsVersion;
  doc["findings_new_in_b"] = Json::parse(render_findings_json(missing_in(fb.findings, fa.findings), -1));
  doc["findings_gone_in_b"] = Json::parse(render_findings_json(missing_in(fa.findings, fb.findings), -1));
  std::cout << json_text(doc.dump(2, ' ', false, Json::error_handler_t::replace)) << "\n";
}

// The gradient the rules judge: parameter gradients, else output gradients.
double gradient_l2(const NodeReport* n) {
  if (!n) return NodeReport::kNone;
  return std::isnan(n->param_grad_l2) ? n->out_grad_l2 : n->param_grad_l2;
}

// The tree findings of A and B, one line per flag either has (printed unless `rows` is given,
// which gets them instead); returns the flags new in B.
int diff_trees(const TreeRunSummary& a, const TreeRunSummary& b, Json* rows = nullptr) {
  auto label = [](const TreeRunSummary& s, TreeFlag flag) -> std::string {
    for (const TreeFinding& f : s.report.findings)
      if (f.flag == flag) return tree_finding_label(s.report, f);
    return "-";
  };
  int worse = 0;
  if (!rows) std::cout << "\ntree findings (A -> B):\n";
  for (int i = 0; i < kTreeFlagCount; ++i) {
    const TreeFlag flag = static_cast<TreeFlag>(i);
    const std::string la = label(a, flag), lb = label(b, flag);
    if (la == "-" && lb == "-") continue;
    const bool new_in_b = la == "-";
    worse += new_in_b;
    if (rows) {
      rows->push_back({{"flag", tree_flag_name(flag)},
                       {"a", la == "-" ? Json() : Json(la)},
                       {"b", lb == "-" ? Json() : Json(lb)},
                       {"change", new_in_b ? "worse" : lb == "-" ? "better" : "same"}});
      continue;
    }
    std::cout << fmt::format("  {:<13} {} -> {}{}\n", tree_flag_name(flag), la, lb,
                             new_in_b    ? "  worse"
                             : lb == "-" ? "  better"
                                         : "");
  }
  const RoundDynamics* la = a.report.per_round.empty() ? nullptr : &a.report.per_round.back();
  const RoundDynamics* lb = b.report.per_round.empty() ? nullptr : &b.report.per_round.back();
  if (la && lb && !rows)
    std::cout << fmt::format(
        "  rounds {} -> {}; last round's training loss {} -> {}, validation loss {} -> {}\n",
        a.report.rounds, b.report.rounds, format_measure(la->train_loss),
        format_measure(lb->train_loss), format_measure(la->valid_loss),
        format_measure(lb->valid_loss));
  return worse;
}

std::string ratio_text(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return "-";
  if (a == 0) return b == 0 ? "x1" : "new";
  return "x" + format_measure(b / a);
}

int run_diff(const DiffOptions& opt) {
  const LoadedRun a = load_run(opt.run_a, opt.partial, {}, false, /*frames=*/false),
                  b = load_run(opt.run_b, opt.partial, {}, false, /*frames=*/false);
  const std::optional<TreeRunSummary> trees_a = load_tree_summary(a.path),
                                      trees_b = load_tree_summary(b.path);
  if (trees_a && trees_b) {  // their nodes are rounds and features: compare the findings
    if (opt.json) {
      Json rows = Json::array();
      const int worse = diff_trees(*trees_a, *trees_b, &rows);
      const int changed = static_cast<int>(rows.size());
      print_json(a, b, trees_a, trees_b, std::move(rows), changed, worse);
      return worse > 0 ? kExitUnhealthy : kExitOk;
    }
    for (const LoadedRun* run : {&a, &b})
      std::cout << (run == &a ? "A: " : "B: ") << terminal_text(run->path) << "  (" << run->steps
                << " rounds)\n";
    return diff_trees(*trees_a, *trees_b) > 0 ? kExitUnhealthy : kExitOk;
  }
  std::unordered_map<std::string, const NodeReport*> in_a, in_b;
  for (const NodeReport& n : a.report.nodes) in_a[n.node] = &n;
  for (const NodeReport& n : b.report.nodes) in_b[n.node] = &n;
  // Rows: nodes of A in order, then nodes only in B.
  std::vector<std::array<std::string, 6>> rows;
  Json json_rows = Json::array();
  int worse = 0, changed = 0;
  auto row = [&](const std::string& node, const NodeReport* x, const NodeReport* y) {
    const double ga = gradient_l2(x), gb = gradient_l2(y);
    const std::string fa = x ? x->flags.join() : "(absent)", fb = y ? y->flags.join() : "(absent)";
    std::string change = "same";
    if (!x || !y || !(x->flags == y->flags)) {
      ++changed;
      const int sa = x ? x->severity() : 0, sb = y ? y->severity() : 0;
      change = sb > sa ? "worse" : sb < sa ? "better" : "changed";
      worse += sb > sa;
    }
    auto flags = [](const NodeReport* n) {
      if (!n) return Json();
      Json out = Json::array();
      for (Flag f : n->flags.list()) out.push_back(flag_name(f));
      return out;
    };
    json_rows.push_back({{"node", node},
                         {"flags_a", flags(x)},
                         {"flags_b", flags(y)},
                         {"grad_l2_a", number(ga)},
                         {"grad_l2_b", number(gb)},
                         {"change", change}});
    rows.push_back({terminal_text(node), fa, fb, format_measure(ga), format_measure(gb),
                    ratio_text(ga, gb) + "  " + change});
  };
  for (const NodeReport& n : a.report.nodes) row(n.node, &n, in_b.count(n.node) ? in_b[n.node] : nullptr);
  for (const NodeReport& n : b.report.nodes)
    if (!in_a.count(n.node)) row(n.node, nullptr, &n);
  if (opt.json) {
    print_json(a, b, trees_a, trees_b, std::move(json_rows), changed, worse);
    return worse > 0 ? kExitUnhealthy : kExitOk;
  }

  const std::array<std::string, 6> header = {"node", "flags A", "flags B", "|grad| A", "|grad| B", "B/A  health"};
  std::array<std::size_t, 6> w{};
  for (std::size_t c = 0; c < 6; ++c) {
    w[c] = header[c].size();
    for (const auto& r : rows) w[c] = std::max(w[c], r[c].size());
  }
  for (const LoadedRun* run : {&a, &b}) {
    std::cout << (run == &a ? "A: " : "B: ") << terminal_text(run->path) << "  (" << run->steps
              << " steps, gradient flow " << flow_health_name(run->flow.health) << ")\n";
  }
  std::cout << "\n";
  auto print = [&](const std::array<std::string, 6>& r) {
    std::cout << fmt::format("{:<{}}  {:<{}}  {:<{}}  {:>{}}  {:>{}}  {}\n", r[0], w[0], r[1], w[1], r[2], w[2], r[3],
                             w[3], r[4], w[4], r[5]);
  };
  print(header);
  for (const auto& r : rows) print(r);
  std::cout << fmt::format("\n{} node{} changed health, {} worse in B\n", changed, changed == 1 ? "" : "s", worse);
  return worse > 0 ? kExitUnhealthy : kExitOk;
}

}  // namespace

void add_diff_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "Compare two saved runs: nodes whose health changed and how far their gradient norms moved "
              "(exit 1 when a node is worse in RUN_B)");
  cmd->add_option("RUN_A", opt->run_a, "baseline run")->required();
  cmd->add_option("RUN_B", opt->run_b, "run to compare")->required();
  cmd->add_flag("--json", opt->json,
                "one JSON document: per node what changed, and the findings new in and gone from RUN_B");
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_diff(*opt); });
}

}  // namespace gradscope::cli
