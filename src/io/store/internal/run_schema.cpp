#include "store/internal/run_schema.h"

#include <cmath>
#include <cstdio>

#include "gradscope/io/store/run_metadata.h"
#include "store/internal/record_codec.h"

namespace gradscope::internal {

// Schema 2: every row carries a checksum (record_codec.h) and meta 'steps' counts the
// committed step rows, so a reader notices a damaged row and a lost one. Schema 3 adds what the
// report needs besides the records: per step, the channel and similarity records (committed
// with their step row); per run, the summary an adapter hands over when it finishes. Schema 4
// adds the element histograms of the sampled steps (AuditOptions::histogram_every); a reader
// reads a schema-3 run as one without them. Schema 5 adds the run's documents (run_documents.h):
// one JSON document per analysis, under the name of the file older runs kept beside run.db, and
// the auto-fix log (one JSON line per act, what audit.jsonl held). Schema 6 adds the attention
// records of the sampled steps (core/attention), one row per step that has any, like channels.
// Schema 7 adds the per-step scalars (the loss, the global gradient norms; core/series), one
// row per sampled step that has any, holding those of the unsampled steps before it too.
const char* const kRunSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE sites(id INTEGER PRIMARY KEY, name TEXT NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE nodes(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, checksum INTEGER NOT NULL);
CREATE TABLE steps(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL,
                   checksum INTEGER NOT NULL, records BLOB NOT NULL);
CREATE TABLE channels(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL,
                      checksum INTEGER NOT NULL, records BLOB NOT NULL);
CREATE TABLE similarities(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL,
                          checksum INTEGER NOT NULL, records BLOB NOT NULL);
CREATE TABLE histograms(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL,
                        checksum INTEGER NOT NULL, records BLOB NOT NULL);
CREATE TABLE architecture(position INTEGER PRIMARY KEY, node TEXT NOT NULL, type TEXT NOT NULL,
                          run_order INTEGER NOT NULL, parameters INTEGER NOT NULL,
                          trainable INTEGER NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE warnings(position INTEGER PRIMARY KEY, text TEXT NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE node_values(position INTEGER PRIMARY KEY, node TEXT NOT NULL, name TEXT NOT NULL,
                         value REAL, checksum INTEGER NOT NULL);
CREATE TABLE documents(name TEXT PRIMARY KEY, body TEXT NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE interventions(position INTEGER PRIMARY KEY, line TEXT NOT NULL, checksum INTEGER NOT NULL);
CREATE TABLE attention(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL,
                       checksum INTEGER NOT NULL, records BLOB NOT NULL);
CREATE TABLE scalars(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL,
                     checksum INTEGER NOT NULL, records BLOB NOT NULL);
)sql";

const char* const kUpgradeTables =
    "CREATE TABLE IF NOT EXISTS documents(name TEXT PRIMARY KEY, body TEXT NOT NULL, checksum INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS interventions(position INTEGER PRIMARY KEY, line TEXT NOT NULL, "
    "checksum INTEGER NOT NULL);"
    "CREATE TABLE IF NOT EXISTS attention(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL, "
    "checksum INTEGER NOT NULL, records BLOB NOT NULL);"
    "CREATE TABLE IF NOT EXISTS scalars(step INTEGER PRIMARY KEY, n_records INTEGER NOT NULL, "
    "checksum INTEGER NOT NULL, records BLOB NOT NULL);";

void put_meta(Statement& s, const std::string& key, const std::string& value) {
  s.reset();
  s.bind(1, key);
  s.bind(2, value);
  s.bind(3, row_checksum({key, value}));
  s.step();
}

void put_meta(Database& db, const std::string& key, const std::string& value) {
  Statement s = db.prepare(kPutMeta);
  put_meta(s, key, value);
}

std::string value_text(double value) {
  if (std::isnan(value)) return "nan";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%a", value);
  return buf;
}

void write_summary(Database& db, const RunSummary& summary) {
  db.exec("DELETE FROM architecture; DELETE FROM warnings; DELETE FROM node_values;");
  Statement arch = db.prepare(
      "INSERT INTO architecture(position, node, type, run_order, parameters, trainable, checksum) "
      "VALUES(?, ?, ?, ?, ?, ?, ?)");
  int64_t position = 0;
  for (const ArchitectureNode& n : summary.architecture.nodes) {
    arch.reset();
    arch.bind(1, position);
    arch.bind(2, n.id);
    arch.bind(3, n.type);
    arch.bind(4, n.order);
    arch.bind(5, n.parameters);
    arch.bind(6, n.trainable);
    arch.bind(7, row_checksum({std::to_string(position), n.id, n.type, std::to_string(n.order),
                               std::to_string(n.parameters), std::to_string(n.trainable)}));
    arch.step();
    ++position;
  }
  Statement warn = db.prepare("INSERT INTO warnings(position, text, checksum) VALUES(?, ?, ?)");
  position = 0;
  for (const std::string& w : summary.warnings) {
    warn.reset();
    warn.bind(1, position);
    warn.bind(2, w);
    warn.bind(3, row_checksum({std::to_string(position), w}));
    warn.step();
    ++position;
  }
  Statement value = db.prepare("INSERT INTO node_values(position, node, name, value, checksum) VALUES(?, ?, ?, ?, ?)");
  position = 0;
  for (const NodeValue& v : summary.values) {
    value.reset();
    value.bind(1, position);
    value.bind(2, v.node);
    value.bind(3, v.name);
    value.bind_double(4, v.value);
    value.bind(5, row_checksum({std::to_string(position), v.node, v.name, value_text(v.value)}));
    value.step();
    ++position;
  }
  Statement meta = db.prepare(kPutMeta);
  put_meta(meta, kArchitectureRowsKey, std::to_string(summary.architecture.nodes.size()));
  put_meta(meta, kWarningRowsKey, std::to_string(summary.warnings.size()));
  put_meta(meta, kValueRowsKey, std::to_string(summary.values.size()));
  put_meta(meta, "thresholds", thresholds_to_json(summary.thresholds));
}

}  // namespace gradscope::internal
