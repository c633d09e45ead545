// gradscope upgrade RUN: moves a run from before schema 5 to schema 5, its side files
// (embedding.json, trees.json, units.json, rows.json, compression.json, the auto-fix log
// audit.jsonl) into run.db, so that the database alone is the run, in one transaction
// (io/store/run_upgrade.h). Each side file is checked by the loader that reads it before it
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
#include "gradscope/io/store/run_upgrade.h"
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

int run_upgrade(const std::string& run, bool json) {
  // One transaction, read back after (io/store/run_upgrade.h); the loaders check each file first.
  const RunUpgrade done = upgrade_run_with_side_files(
      run, [&](const std::string& name, const RunDocument& side) { check_document(run, name, side); });
  const int64_t was = done.schema_from;
  const std::vector<std::string>& moved = done.moved;
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
