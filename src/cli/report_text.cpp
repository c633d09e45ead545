#include "report_text.h"

#include "gradscope/io/render/run_report.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/render/table.h"
#include "gradscope/io/trees/text.h"

namespace gradscope::cli {

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
  // The node table's own verdict would speak for the nodes only: the run's comes last.
  out += "\n" + render_run_verdict(run.report, run.flow, embedding, trees) + "\n";
  return out;
}

}  // namespace gradscope::cli
