// One transaction for the whole upgrade: it was the schema bump, the log and each document,
// each its own, and a run killed between them was a schema-5 run without its documents, which
// never reads the side files again (issue 41: 20 of 40 killed upgrades lost documents).
#include "gradscope/io/store/run_upgrade.h"

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_metadata.h"
#include "gradscope/io/store/run_reader.h"
#include "store/internal/document_rows.h"

namespace gradscope {

RunUpgrade upgrade_run_with_side_files(const std::string& run, const SideFileCheck& check) {
  // A damaged run is refused before anything moves into it.
  const int64_t was = RunReader(run).schema_version();
  // Every side file is read and checked before anything is written: a schema-5 run no longer
  // reads them, and one that fails leaves the run as it was.
  std::vector<std::string> names;
  std::vector<std::string> texts;
  for (const std::string& name : run_document_names()) {
    std::optional<RunDocument> side = read_run_document(run, name, kMaxRunDocumentBytes, name);
    if (!side || side->in_database) continue;
    if (check) check(name, *side);
    names.push_back(name);
    texts.push_back(std::move(side->text));
  }
  // The auto-fix log of a run before schema 5 is audit.jsonl beside it.
  const std::vector<std::string> log = was < kRunSchemaVersion ? read_run_log(run) : std::vector<std::string>{};
  RunUpgrade done;
  done.schema_from = internal::write_upgraded(run, "documents", [&](internal::Database& db, int64_t version) {
    // Another upgrade committed first: the side files are no longer this run's to move.
    if (version >= kRunSchemaVersion) return;
    for (std::size_t i = 0; i < names.size(); ++i) internal::put_document_row(db, names[i], texts[i]);
    internal::append_log_rows(db, log);
    done.moved = names;
    if (!log.empty()) done.moved.push_back("audit.jsonl");
  });
  if (done.schema_from >= kRunSchemaVersion) return done;
  for (std::size_t i = 0; i < names.size(); ++i) {
    const std::optional<RunDocument> back = read_run_document(run, names[i], kMaxRunDocumentBytes);
    if (!back || !back->in_database || back->text != texts[i])
      throw Error("run '" + run + "': " + names[i] + " did not read back the same from run.db");
  }
  if (!log.empty() && read_run_log(run) != log)
    throw Error("run '" + run + "': audit.jsonl did not read back the same from run.db");
  return done;
}

}  // namespace gradscope
