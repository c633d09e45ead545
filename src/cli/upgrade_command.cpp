// gradscope upgrade RUN: moves a run from before schema 5 to schema 5, its side files
// (embedding.json, trees.json, units.json, rows.json, compression.json, the auto-fix log
// audit.jsonl) into run.db, so that the database alone is the run. Each side file is checked by the loader that reads it before it
// moves, and read back from run.db after; the files themselves stay (they are the user's, and
// now only exports), and the command says they may be deleted.
#include <iostream>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/compress/rows_json.h"
#include "gradscope/io/embedding/store.h"
#include "gradscope/io/render/safe_text.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/trees/store.h"
#include "run_loading.h"

namespace gradscope::cli {
namespace {

// Loads the side file `name` of `run` as its typed loader does: throws Error naming the file
// when gradscope could not read it back.
void check_document(const std::string& run, const std::string& name, const RunDocument& doc) {
  if (name == "embedding.json") load_embedding_summary(run);
  else if (name == "trees.json") load_tree_summary(run);
  else if (name == "units.json") parse_compress_profile_json(doc.text, doc.where);
  else if (name == "rows.json") parse_row_profiles_json(doc.text, doc.where);
  else if (name == "compression.json") load_measured_comparison(run);
}

// The largest side file moved: the largest any loader reads.
constexpr std::uintmax_t kMaxMovedBytes = kMaxRowProfileBytes;

int run_upgrade(const std::string& run, bool json) {
  const int64_t was = RunReader(run).schema_version();
  // Every side file is read and checked before anything is written: a schema-5 run no longer
  // reads them, and one that fails leaves the run as it was.
  std::vector<RunDocument> sides;
  std::vector<std::string> moved;
  for (const std::string& name : run_document_names()) {
    std::optional<RunDocument> side = read_run_document(run, name, kMaxMovedBytes, name);
    if (!side || side->in_database) continue;
    check_document(run, name, *side);
    sides.push_back(std::move(*side));
    moved.push_back(name);
  }
  // The auto-fix log of a run before schema 5 is audit.jsonl beside it.
  const std::vector<std::string> log = was < 5 ? read_run_log(run) : std::vector<std::string>{};
  upgrade_run(run);
  if (!log.empty()) {
    append_run_log(run, log);
    if (read_run_log(run) != log) throw Error("run '" + run + "': audit.jsonl did not read back the same from run.db");
  }
  for (std::size_t i = 0; i < sides.size(); ++i) {
    put_run_document(run, moved[i], sides[i].text);
    const std::optional<RunDocument> back = read_run_document(run, moved[i], kMaxMovedBytes);
    if (!back || !back->in_database || back->text != sides[i].text)
      throw Error("run '" + run + "': " + moved[i] + " did not read back the same from run.db");
  }
  if (!log.empty()) moved.push_back("audit.jsonl");
  if (json) {
    const nlohmann::ordered_json doc = {
        {"gradscope_upgrade", {{"run", run}, {"schema_from", was}, {"schema_to", kRunSchemaVersion}, {"moved", moved}}}};
    std::cout << json_text(doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)) << "\n";
    check_stdout();
    return kExitOk;
  }
  std::cout << terminal_text(run) << ": schema " << was << " -> " << kRunSchemaVersion;
  if (moved.empty()) {
    std::cout << "; no side files to move\n";
  } else {
    std::cout << "; moved into run.db:";
    for (const std::string& name : moved) std::cout << " " << name;
    std::cout << "\n  the files beside run.db are no longer read and may be deleted\n";
  }
  check_stdout();
  return kExitOk;
}

}  // namespace

void add_upgrade_command(CLI::App& app, int& exit_code) {
  auto run = std::make_shared<std::string>();
  auto json = std::make_shared<bool>(false);
  CLI::App* cmd = app.add_subcommand(
      "upgrade", "Move a run saved before schema 5 to schema 5: its side files (embedding.json, trees.json, "
                 "units.json, rows.json, compression.json) into run.db, so that run.db alone is the run");
  cmd->add_option("RUN", *run, "run directory (or its run.db)")->required();
  cmd->add_flag("--json", *json, "say it as one JSON document: run, schema_from, schema_to, moved");
  cmd->callback([run, json, &exit_code] { exit_code = run_upgrade(*run, *json); });
}

}  // namespace gradscope::cli
