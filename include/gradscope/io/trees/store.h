// A boosted model's dynamics saved as a run, so the commands over saved runs (report, html, ls,
// diff) work on it: run.db holds one step per round (tree_round_records: the round's outputs,
// leaf values, split gains and per-row losses as Stats) and the trees.json document
// (io/store/run_documents.h; a file beside run.db in runs before schema 5): the analysis
// (per-round measures, windows, features, findings, interactions) with the thresholds that
// judged it.
//
//   gradscope::TreeRunSummary s{"model.json", "train.csv", "valid.csv", "y", report};
//   gradscope::write_tree_run("runs/gbm", s);          // run.db, the analysis inside
//   std::optional<gradscope::TreeRunSummary> back = gradscope::load_tree_summary("runs/gbm");
//
// Format: {"gradscope_tree_run": {"version": 1, "inputs": {...}, "model": {...}, "data":
// {...}, "thresholds": {...}, "window": W, "rounds": {<measure>: [one per round], ...,
// "features": [[[feature, splits, gain], ...] per round]}, "windows": [...], "features":
// [...], "findings": [...], "not_judged": [...], "interactions": {...}}} (docs/trees.md).
// Non-finite numbers are written as null and read back as NaN; the Stats stay in run.db.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gradscope/core/trees/dynamics.h"
#include "gradscope/io/store/run_writer.h"

namespace gradscope {

/// The largest trees.json document read: 64 MiB. A round takes about 100 bytes plus 30 a feature split
/// on, so a 10,000-round model splitting on 50 features a round writes some 16 MB.
constexpr std::uintmax_t kMaxTreeFileBytes = std::uintmax_t{64} << 20;

/// What a tree run was made from, and its analysis.
struct TreeRunSummary {
  std::string model;       ///< the model file
  std::string data;        ///< reference rows ("" without)
  std::string validation;  ///< validation rows ("" without)
  std::string label;       ///< the label column ("" without)
  TreeDynamicsReport report;
};

/// Writes the run's trees.json document: into `dir`'s run.db when there is one, else as the
/// file <dir>/trees.json (a temporary file, then rename; `dir` created if missing). Throws
/// Error naming the database or file when it cannot, and naming the field for a summary
/// load_tree_summary would refuse (nothing is written then).
void save_tree_summary(const std::string& dir, const TreeRunSummary& summary);

/// Reads the run's trees.json document (from run.db, else the file beside it; `dir` may also be
/// the run's run.db). nullopt when there is none. Only a document or regular file of at most
/// kMaxTreeFileBytes is read, and every field is checked:
/// counts are integers, per-round arrays have one entry per round, windows cover the rounds in
/// order, features and rounds named by index exist, shares lie in [0, 1], flags are known, the
/// thresholds pass validate(). Anything else, and a newer version, is an Error "run database
/// '<path>', document 'trees.json': <field>: <what>" (a side file: "tree file '<path>': ...").
std::optional<TreeRunSummary> load_tree_summary(const std::string& dir);

/// A whole tree run in `dir`: every round's records through a RunWriter (step = round), then
/// the trees.json document once they are committed, then the run closed. When the document
/// cannot be written the run is removed (no rounds without their analysis, which would read
/// as a healthy run) and the Error thrown. Throws Error for a model without rounds (a run needs a step) and for what
/// RunWriter and save_tree_summary throw.
void write_tree_run(const std::string& dir, const TreeRunSummary& summary,
                    RunWriterOptions options = {});

}  // namespace gradscope
