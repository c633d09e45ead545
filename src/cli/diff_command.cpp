// gradscope diff RUN_A RUN_B: which nodes changed health between two runs, and how far their
// gradient norms moved. Exit 1 when some node is worse in RUN_B.
#include <fmt/format.h>

#include <array>
#include <cmath>
#include <iostream>
#include <unordered_map>

#include "commands.h"
#include "gradscope/io/safe_text.h"
#include "gradscope/io/table.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

struct DiffOptions {
  std::string run_a, run_b;
  bool partial = false;
};

// The gradient the rules judge: parameter gradients, else output gradients.
double gradient_l2(const NodeReport* n) {
  if (!n) return NodeReport::kNone;
  return std::isnan(n->param_grad_l2) ? n->out_grad_l2 : n->param_grad_l2;
}

std::string ratio_text(double a, double b) {
  if (!std::isfinite(a) || !std::isfinite(b)) return "-";
  if (a == 0) return b == 0 ? "x1" : "new";
  return "x" + format_measure(b / a);
}

int run_diff(const DiffOptions& opt) {
  const LoadedRun a = load_run(opt.run_a, opt.partial), b = load_run(opt.run_b, opt.partial);
  std::unordered_map<std::string, const NodeReport*> in_a, in_b;
  for (const NodeReport& n : a.report.nodes) in_a[n.node] = &n;
  for (const NodeReport& n : b.report.nodes) in_b[n.node] = &n;
  // Rows: nodes of A in order, then nodes only in B.
  std::vector<std::array<std::string, 6>> rows;
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
    rows.push_back({terminal_text(node), fa, fb, format_measure(ga), format_measure(gb),
                    ratio_text(ga, gb) + "  " + change});
  };
  for (const NodeReport& n : a.report.nodes) row(n.node, &n, in_b.count(n.node) ? in_b[n.node] : nullptr);
  for (const NodeReport& n : b.report.nodes)
    if (!in_a.count(n.node)) row(n.node, nullptr, &n);

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
  add_partial_flag(cmd, opt->partial);
  cmd->callback([opt, &exit_code] { exit_code = run_diff(*opt); });
}

}  // namespace gradscope::cli
