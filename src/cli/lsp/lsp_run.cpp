#include "lsp_run.h"

#include <algorithm>
#include <filesystem>
#include <optional>

#include "gradscope/io/embedding/store.h"
#include "gradscope/io/render/findings_json.h"
#include "gradscope/io/trees/store.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

namespace fs = std::filesystem;

// The newest run under `dir`: the folder whose run.db was written last (name
// breaks ties, so the choice does not depend on the order the directory lists
// them in).
std::string newest_run(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error("runs folder '" + dir + "' is not a directory");
  std::optional<std::pair<fs::file_time_type, std::string>> best;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const fs::path db = entry.path() / "run.db";
    std::error_code e2;
    const fs::file_time_type t = fs::last_write_time(db, e2);
    if (e2) continue;
    const std::pair<fs::file_time_type, std::string> key{t, entry.path().string()};
    if (!best || key > *best) best = key;
  }
  if (ec) throw Error("cannot list runs folder '" + dir + "': " + ec.message());
  if (!best) throw Error("no runs in '" + dir + "' (a run is a folder with a run.db)");
  return best->second;
}

// What changes when a run is written to: run.db and its write-ahead log (a live
// run's steps sit in the log until a checkpoint).
std::string signature_of(const std::string& run) {
  std::string sig = run;
  for (const char* f : {"run.db", "run.db-wal", "summary.json", "embedding.json", "trees.json"}) {
    std::error_code ec;
    const fs::path p = fs::path(run) / f;
    const auto t = fs::last_write_time(p, ec);
    if (ec) continue;
    const auto size = fs::file_size(p, ec);
    sig += "|" + std::string(f) + ":" + std::to_string(t.time_since_epoch().count()) + ":" +
           std::to_string(ec ? 0 : size);
  }
  return sig;
}

}  // namespace

bool LspRun::refresh() {
  const std::string before_error = error_, before_signature = signature_;
  try {
    if (source_.run.empty() && source_.runs.empty())
      throw Error(
          "no run configured: start `gradscope lsp --runs DIR` (or "
          "--run DIR), or give "
          "initializationOptions {\"runs\": DIR}");
    const std::string run = source_.run.empty() ? newest_run(source_.runs) : source_.run;
    const std::string sig = signature_of(run);
    if (sig == signature_ && error_.empty()) return false;
    signature_ = sig;
    const LoadedRun loaded = load_run(run, false, {}, false, /*frames=*/false);
    const std::optional<EmbeddingRunSummary> embedding = load_embedding_summary(loaded.path);
    const std::optional<TreeRunSummary> trees = load_tree_summary(loaded.path);
    findings_ = run_findings(loaded.report, loaded.flow, embedding ? &*embedding : nullptr,
                             trees ? &*trees : nullptr);
    report_ = loaded.report;
    path_ = loaded.path;
    name_ = loaded.meta.name.empty() ? fs::path(run).filename().string() : loaded.meta.name;
    steps_ = loaded.steps;
    error_.clear();
    return true;
  } catch (const std::exception& e) {
    // A run being written can be unreadable for a moment; what was shown before
    // goes, so no stale diagnostic outlives the run it came from.
    error_ = e.what();
    findings_.clear();
    report_ = Report{};
    path_.clear();
    signature_.clear();
    return error_ != before_error || !before_signature.empty();
  }
}

}  // namespace gradscope::cli
