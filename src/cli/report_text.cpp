#include "report_text.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include "gradscope/io/render/csv.h"
#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/table.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/trees/text.h"

namespace gradscope::cli {

std::string render_auto_fix_log(const std::vector<std::string>& lines) {
  if (lines.empty()) return "";
  // Per table and act type, in order of first appearance: acts, steps, rows changed.
  struct Acts {
    std::string layer, type;
    int64_t acts = 0, rows = 0, first = 0, last = 0;
  };
  std::vector<Acts> groups;
  int64_t unreadable = 0;
  for (const std::string& line : lines) {
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, false);
    if (!j.is_object() || !j.contains("layer") || !j.contains("type") || !j.contains("step") ||
        !j["layer"].is_string() || !j["type"].is_string() || !j["step"].is_number_integer()) {
      ++unreadable;
      continue;
    }
    const std::string layer = j["layer"], type = j["type"];
    const int64_t step = j["step"];
    const int64_t rows = j.contains("rows_affected") && j["rows_affected"].is_number_integer() ? j["rows_affected"].get<int64_t>() : 0;
    auto it = std::find_if(groups.begin(), groups.end(), [&](const Acts& a) { return a.layer == layer && a.type == type; });
    if (it == groups.end()) it = groups.insert(groups.end(), Acts{layer, type, 0, 0, step, step});
    ++it->acts;
    it->rows += rows;
    it->first = std::min(it->first, step);
    it->last = std::max(it->last, step);
  }
  std::string out = "\nauto-fix log (" + std::to_string(lines.size()) + " act" + (lines.size() == 1 ? "" : "s") + "):\n";
  for (const Acts& a : groups)
    out += "  " + terminal_text(a.layer) + " " + terminal_text(a.type) + ": " + std::to_string(a.acts) + " act" +
           (a.acts == 1 ? "" : "s") + " at steps " + std::to_string(a.first) + "-" + std::to_string(a.last) + ", " +
           std::to_string(a.rows) + " row gradients scaled\n";
  if (unreadable > 0) out += "  " + std::to_string(unreadable) + " lines are not acts gradscope wrote\n";
  return out;
}

std::string render_report_text(const LoadedRun& run, const EmbeddingRunSummary* embedding,
                               const TreeRunSummary* trees) {
  std::string out = render_run_header(run.meta, run.path);
  // What the audit warned about while it ran (stderr then), kept with the run.
  for (const std::string& w : run.summary.warnings)
    out += "audit warning: " + terminal_text(w) + "\n";
  // A tree run's nodes are rounds, features and losses: the tree rules judge them.
  if (trees)
    out += render_tree_timeline(*trees) + render_tree_findings(*trees);
  else
    out += render_table(run.report, false) + render_flow_summary(run.flow);
  if (embedding) out += render_embedding_findings(*embedding);
  out += render_auto_fix_log(read_run_log(run.path));
  // The node table's own verdict would speak for the nodes only: the run's comes last.
  out += "\n" + render_run_verdict(run.report, run.flow, embedding, trees) + "\n";
  return out;
}

RunReports render_run_reports(const LoadedRun& run) {
  const std::optional<EmbeddingRunSummary> saved = load_embedding_summary(run.path);
  const EmbeddingRunSummary* embedding = saved ? &*saved : nullptr;
  const std::optional<TreeRunSummary> tree_run = load_tree_summary(run.path);
  const TreeRunSummary* trees = tree_run ? &*tree_run : nullptr;
  RunReports out;
  out.text = render_report_text(run, embedding, trees);
  out.json = render_run_json(run.meta, run.report, run.flow, embedding, trees, &run.summary, &run.damage);
  out.csv = render_csv(run.report);
  out.unhealthy = run_unhealthy(run.report, run.flow, embedding, trees);
  out.tree_run = trees != nullptr;
  return out;
}

RunReports write_run_reports(const std::string& dir) {
  const LoadedRun run = load_run(dir, false, {}, /*series=*/false, /*frames=*/false);
  const RunReports reports = render_run_reports(run);
  const std::filesystem::path folder(run.path);
  write_text_file((folder / "report.txt").string(), reports.text);
  write_text_file((folder / "report.json").string(), reports.json);
  if (!reports.tree_run) write_text_file((folder / "report.csv").string(), reports.csv);
  return reports;
}

}  // namespace gradscope::cli
