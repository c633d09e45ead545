// Upgrading a run saved before schema 5 to schema 5 with everything it kept beside run.db (its
// side files embedding.json, trees.json, ... and the auto-fix log audit.jsonl) moved inside, in
// one transaction: killed at any moment, the run is the old one (schema 4, its side files still
// read) or the new one whole (every document and log line in run.db), never a schema-5 run
// without them (a schema-5 run never reads side files again). What `gradscope upgrade` does.
//
//   gradscope::RunUpgrade u = gradscope::upgrade_run_with_side_files("runs/mf");
//   // u.schema_from == 4, u.moved == {"embedding.json", "audit.jsonl"}
//   // the files stay beside run.db; they are no longer read
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "gradscope/io/store/run_documents.h"

namespace gradscope {

/// What an upgrade did.
struct RunUpgrade {
  int64_t schema_from = 0;          ///< the version the run had (5: nothing to do)
  std::vector<std::string> moved;   ///< documents moved, in run_document_names() order, then audit.jsonl
};

/// Checks a side file before it moves; throws Error naming it when gradscope could not read it
/// back (the typed loaders, which io/store does not know).
using SideFileCheck = std::function<void(const std::string& name, const RunDocument& side)>;

/// Moves `run` (schema 2 to 4; a run directory or its run.db) to schema 5 with its side files
/// and audit.jsonl inside, in one transaction with the schema version and the committed counts
/// and names; then reads each back from run.db. Every side file is read (at most
/// kMaxRunDocumentBytes) and passed to `check` before anything is written, so one that fails
/// leaves the run as it was. A run of schema 5 (also one another upgrade finished first) moves
/// nothing. Throws Error naming the run or the file: a damaged run (read strictly first), a side
/// file `check` refuses, what put_run_document refuses, a document that reads back different.
RunUpgrade upgrade_run_with_side_files(const std::string& run, const SideFileCheck& check = {});

}  // namespace gradscope
