// gradscope diff RUN_A RUN_B: which nodes changed health between two runs, and how far their
// gradient norms moved; for two tree runs, which tree findings each has and how their losses
// compare; for every run, the findings of any kind (module, flow, embedding, trees,
// loss_scale) new in RUN_B and gone from it. Exit 1 when RUN_B is worse: a node's flags more
// severe, or a finding RUN_A lacks; --fail-on and --min-confidence choose which count (a CI
// gate). --json says the same as one document, the findings in the agent schema
// (docs/agent-json.md).
#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_map>

#include "commands.h"
#include "gradscope/core/findings/kinds.h"
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
  std::vector<std::string> fail_on;  ///< kinds or types; empty: every finding
  std::string min_confidence = "low";
};

// What --fail-on accepts, for its help and its error: every finding kind, then every type by
// kind (core/findings/kinds.h), so a typo is refused instead of never matching.
std::string fail_on_values() {
  std::string kinds, types;
  for (FindingKind k : kFindingKinds) {
    kinds += std::string(kinds.empty() ? "" : ", ") + finding_kind_name(k);
    types += std::string(types.empty() ? "" : "; ") + finding_kind_name(k) + ":";
    for (const std::string& t : finding_types(k)) types += " " + t;
  }
  return "kinds " + kinds + "; types by kind: " + types;
}

// Whether a finding new in B fails the diff.
bool fails(const DiffOptions& opt, const Finding& f) {
  const int least = opt.min_confidence == "high" ? 2 : opt.min_confidence == "medium" ? 1 : 0;
  if (static_cast<int>(f.confidence) < least) return false;
  if (opt.fail_on.empty()) return true;
  return std::find(opt.fail_on.begin(), opt.fail_on.end(), finding_kind_name(f.kind)) != opt.fail_on.end() ||
         std::find(opt.fail_on.begin(), opt.fail_on.end(), f.type) != opt.fail_on.end();
}

// Whether nodes whose flags got more severe fail the diff (they are module findings).
bool nodes_fail(const DiffOptions& opt) {
  const std::string module = finding_kind_name(FindingKind::kModule);
  return opt.fail_on.empty() || std::find(opt.fail_on.begin(), opt.fail_on.end(), module) != opt.fail_on.end();
}

using Json = nlohmann::ordered_json;

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(); }

// A finding is "the same" in both runs when its kind, type and node are.
std::string finding_key(const Finding& f) {
  return std::string(finding_kind_name(f.kind)) + '\n' + f.type + '\n' + f.node;
}

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

// Both runs' findings of every kind and what changed between them.
struct FindingsChange {
  RunFindings a, b;
  std::vector<Finding> new_in_b, gone_in_b;
  int failing = 0;  ///< findings new in B that fail the diff (--fail-on, --min-confidence)
};

FindingsChange compare_findings(const DiffOptions& opt, const LoadedRun& a, const LoadedRun& b,
                                const std::optional<TreeRunSummary>& ta, const std::optional<TreeRunSummary>& tb) {
  FindingsChange c{findings_of(a, ta), findings_of(b, tb), {}, {}, 0};
  c.new_in_b = missing_in(c.b.findings, c.a.findings);
  c.gone_in_b = missing_in(c.a.findings, c.b.findings);
  for (const Finding& f : c.new_in_b) c.failing += fails(opt, f);
  return c;
}

// The findings new in and gone from B, one line each, under the tables.
void print_findings_change(const FindingsChange& c) {
  const auto line = [](const Finding& f) {
    return fmt::format("  {:<10} {:<22} {}{}  (confidence {})\n", finding_kind_name(f.kind), f.type,
                       f.node.empty() ? "(whole model)" : terminal_text(f.node),
                       f.since_step < 0 ? std::string()
                                        : fmt::format(" since {} {}", finding_since_unit(f.kind), f.since_step),
                       confidence_name(f.confidence));
  };
  std::cout << "\nfindings new in B: " << c.new_in_b.size();
  if (c.failing != static_cast<int>(c.new_in_b.size()))
    std::cout << " (" << c.failing << " fail the diff under --fail-on / --min-confidence)";
  std::cout << "\n";
  for (const Finding& f : c.new_in_b) std::cout << line(f);
  std::cout << "findings gone in B: " << c.gone_in_b.size() << "\n";
  for (const Finding& f : c.gone_in_b) std::cout << line(f);
}

// The document of --json: both runs, per node (or per tree flag) what changed, and the
// findings that appeared or went away.
void print_json(const LoadedRun& a, const LoadedRun& b, bool trees, const FindingsChange& c, Json changes,
                int changed, int worse) {
  Json doc;
  doc["gradscope_diff"] = {{"a", run_json(a, c.a, trees)},
                           {"b", run_json(b, c.b, trees)},
                           {trees ? "trees" : "nodes", std::move(changes)},
                           {"changed", changed},
                           {"worse", worse},
                           {"failing_findings", c.failing}};
  doc["findings_version"] = kFindingsVersion;
  doc["findings_new_in_b"] = Json::parse(render_findings_json(c.new_in_b, -1));
  doc["findings_gone_in_b"] = Json::parse(render_findings_json(c.gone_in_b, -1));
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
  const FindingsChange findings = compare_findings(opt, a, b, trees_a, trees_b);
  const int exit_code = findings.failing > 0 ? kExitUnhealthy : kExitOk;
  if (trees_a && trees_b) {  // their nodes are rounds and features: compare the findings
    if (opt.json) {
      Json rows = Json::array();
      const int worse = diff_trees(*trees_a, *trees_b, &rows);
      const int changed = static_cast<int>(rows.size());
      print_json(a, b, true, findings, std::move(rows), changed, worse);
      return exit_code;
    }
    for (const LoadedRun* run : {&a, &b})
      std::cout << (run == &a ? "A: " : "B: ") << terminal_text(run->path) << "  (" << run->steps
                << " rounds)\n";
    diff_trees(*trees_a, *trees_b);
    print_findings_change(findings);
    return exit_code;
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
  // A node whose flags got more severe fails the diff like a finding new in B.
  const int nodes_exit = worse > 0 && nodes_fail(opt) ? kExitUnhealthy : exit_code;
  if (opt.json) {
    print_json(a, b, false, findings, std::move(json_rows), changed, worse);
    return nodes_exit;
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
  print_findings_change(findings);
  return nodes_exit;
}

}  // namespace

void add_diff_command(CLI::App& app, int& exit_code) {
  auto opt = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand(
      "diff", "Compare two saved runs: nodes whose health changed, how far their gradient norms moved, and the "
              "findings of every kind new in and gone from RUN_B (exit 1 when RUN_B is worse)");
  cmd->add_option("RUN_A", opt->run_a, "baseline run")->required();
  cmd->add_option("RUN_B", opt->run_b, "run to compare")->required();
  cmd->add_flag("--json", opt->json,
                "one JSON document: per node what changed, and the findings new in and gone from RUN_B");
  cmd->add_option("--fail-on", opt->fail_on,
                  "finding kinds or types that fail the diff when new in RUN_B (comma-separated or repeated; "
                  "default: every finding): " + fail_on_values())
      ->delimiter(',')
      ->check([](const std::string& v) -> std::string {
        if (parse_finding_kind(v) || is_finding_type(v)) return "";
        return "'" + v + "' is neither a finding kind nor a finding type (" + fail_on_values() + ")";
      });
  cmd->add_option("--min-confidence", opt->min_confidence,
                  "the least confidence of a new finding that fails the diff (default low: all)")
      ->check(CLI::IsMember({"low", "medium", "high"}));
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_diff(*opt); });
}

}  // namespace gradscope::cli
