// RunReader::summary: the run's architecture, warnings and per-node values (schema 3), each row
// checked (column types, checksum, counts against meta) like the per-step tables.
#include <limits>
#include <string>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_reader.h"
#include "store/internal/record_codec.h"
#include "store/internal/run_schema.h"
#include "store/internal/sqlite_db.h"

namespace gradscope {

RunSummary RunReader::summary() {
  RunSummary out;
  out.thresholds = meta_.thresholds;
  if (version_ < 3) return out;
  internal::ReadTransaction tx(*db_);
  // Reads `columns` (position first) of `table` in position order; each row whose columns have
  // `types` (a REAL may be NULL: NaN) goes to `keep(s, position)`, which keeps it and returns ""
  // or why it is not what a writer writes. Returns the rows seen, -1 when the table cannot be
  // read (then nothing of it is used).
  const auto read = [&](const std::string& table, const std::vector<std::string>& columns,
                        const std::vector<std::string>& types, const auto& keep) -> int64_t {
    std::string sql = "SELECT ", wanted;
    for (const std::string& c : columns) sql += c + ", ";
    for (std::size_t c = 0; c < columns.size(); ++c) {
      sql += "typeof(" + columns[c] + ")" + (c + 1 < columns.size() ? ", " : "");
      wanted += (c ? "," : "") + types[c];
    }
    sql += " FROM " + table + " ORDER BY position";
    reading_ = table;
    const std::string where = "run database '" + path_ + "': table " + table + ", row position ";
    const auto unreadable = [&](const Error& e) {
      tolerate(std::string(e.what()) + " in table " + table, "the run's " + table + " is not used");
    };
    int64_t rows = 0;
    internal::Statement s;
    try {
      s = db_->prepare(sql.c_str());
    } catch (const Error& e) {
      unreadable(e);
      return -1;
    }
    const int n = static_cast<int>(columns.size());
    for (;;) {
      try {
        if (!s.step()) break;
      } catch (const Error& e) {
        unreadable(e);
        return -1;
      }
      ++rows;
      const std::string row = where + std::to_string(s.column_int(0)) + ": ";
      bool typed = true;
      for (int c = 0; c < n; ++c) {
        const std::string type = s.column_text(n + c);
        typed = typed && (type == types[static_cast<std::size_t>(c)] || (type == "null" && types[static_cast<std::size_t>(c)] == "real"));
      }
      if (!typed) {
        tolerate(row + "columns are not (" + wanted + ")", "row ignored");
        continue;
      }
      const std::string why = keep(s, std::to_string(s.column_int(0)));
      if (!why.empty()) tolerate(row + why, "row ignored");
    }
    return rows;
  };
  const int64_t architecture_rows = read(
      "architecture", {"position", "node", "type", "run_order", "parameters", "trainable", "checksum"},
      {"integer", "text", "text", "integer", "integer", "integer", "integer"}, [&](internal::Statement& s, const std::string& position) {
        ArchitectureNode n;
        n.id = s.column_text(1);
        n.type = s.column_text(2);
        n.order = s.column_int(3);
        n.parameters = s.column_int(4);
        n.trainable = s.column_int(5);
        if (internal::row_checksum({position, n.id, n.type, std::to_string(n.order), std::to_string(n.parameters),
                                    std::to_string(n.trainable)}) != s.column_int(6))
          return std::string("damaged (checksum mismatch)");
        if (n.order < -1 || n.parameters < 0 || n.trainable < 0 || n.trainable > n.parameters)
          return std::string("order or parameter counts out of range");
        out.architecture.nodes.push_back(std::move(n));
        return std::string();
      });
  const int64_t warning_rows = read(
      "warnings", {"position", "text", "checksum"}, {"integer", "text", "integer"}, [&](internal::Statement& s, const std::string& position) {
        const std::string text = s.column_text(1);
        if (internal::row_checksum({position, text}) != s.column_int(2)) return std::string("damaged (checksum mismatch)");
        out.warnings.push_back(text);
        return std::string();
      });
  const int64_t value_rows = read(
      "node_values", {"position", "node", "name", "value", "checksum"}, {"integer", "text", "text", "real", "integer"},
      [&](internal::Statement& s, const std::string& position) {
        NodeValue v{s.column_text(1), s.column_text(2), std::numeric_limits<double>::quiet_NaN()};
        if (s.column_type(3) != SQLITE_NULL) v.value = s.column_double(3);  // NULL: NaN, which SQLite cannot store
        if (internal::row_checksum({position, v.node, v.name, internal::value_text(v.value)}) != s.column_int(4))
          return std::string("damaged (checksum mismatch)");
        out.values.push_back(std::move(v));
        return std::string();
      });
  if (architecture_rows >= 0) check_row_count(internal::kArchitectureRowsKey, "architecture", architecture_rows, true);
  if (warning_rows >= 0) check_row_count(internal::kWarningRowsKey, "warnings", warning_rows, true);
  if (value_rows >= 0) check_row_count(internal::kValueRowsKey, "node_values", value_rows, true);
  return out;
}

}  // namespace gradscope
