// RunReader: the per-step tables beside steps: channels and similarities (schema 3), histograms
// (schema 4), attention (schema 6), scalars (schema 7). Checked
// like steps (row types, order, checksum, blob, node ids); a row is delivered only when its
// step's records were, so a partial read still keeps whole steps.
#include <algorithm>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_reader.h"
#include "store/internal/channel_codec.h"
#include "store/internal/histogram_codec.h"
#include "store/internal/record_codec.h"
#include "store/internal/sqlite_db.h"

namespace gradscope {

namespace {

enum class Table { kChannels, kSimilarities, kHistograms, kAttention, kScalars };

// Decodes one row's blob into `out`, the node ids still unresolved.
bool decode(Table table, std::string_view blob, int64_t count, int64_t step,
            std::vector<internal::StoredWithNode<ChannelRecord>>& channel_rows,
            std::vector<internal::StoredWithNode<SimilarityRecord>>& similarity_rows,
            std::vector<internal::StoredHistogram>& histogram_rows,
            std::vector<internal::StoredWithNode<AttentionRecord>>& attention_rows,
            std::vector<StepScalar>& scalar_rows) {
  if (count < 0) return false;
  const auto n = static_cast<uint64_t>(count);
  switch (table) {
    case Table::kChannels: return internal::decode_channels(blob, n, channel_rows);
    case Table::kSimilarities: return internal::decode_similarities(blob, n, similarity_rows);
    case Table::kHistograms: return internal::decode_histograms(blob, n, histogram_rows);
    case Table::kAttention: return internal::decode_attention(blob, n, attention_rows);
    case Table::kScalars: return internal::decode_scalars(blob, n, step, scalar_rows);
  }
  return false;
}

}  // namespace

int64_t RunReader::read_step_table(const std::string& table, StepRange range, const StepsRead& steps,
                                   const RunVisitor& visit) {
  const std::string where = "run database '" + path_ + "': table " + table;
  reading_ = table;
  const Table kind = table == "channels" ? Table::kChannels
                     : table == "similarities" ? Table::kSimilarities
                     : table == "histograms"   ? Table::kHistograms
                     : table == "attention"    ? Table::kAttention
                                               : Table::kScalars;
  // SQLite's errors (no such table, a damaged page) name the file; the table is added here.
  const auto failed = [&](const Error& e) { tolerate(std::string(e.what()) + " in table " + table, "its records are not read"); };
  internal::Statement s;
  try {
    const std::string sql = "SELECT step, n_records, checksum, records, typeof(step), typeof(n_records), "
                            "typeof(checksum), typeof(records) FROM " + table +
                            " WHERE step BETWEEN ? AND ? ORDER BY step";
    s = db_->prepare(sql.c_str());
    s.bind(1, range.from);
    s.bind(2, range.to);
  } catch (const Error& e) {
    failed(e);
    return -1;
  }
  std::vector<internal::StoredWithNode<ChannelRecord>> channel_rows;
  std::vector<internal::StoredWithNode<SimilarityRecord>> similarity_rows;
  std::vector<internal::StoredHistogram> histogram_rows;
  std::vector<internal::StoredWithNode<AttentionRecord>> attention_rows;
  std::vector<StepScalar> scalar_rows;
  // Scalars of one series must not go back across rows either (a damaged or forged table).
  int64_t last_scalar_step = -1;
  const auto known = [&](uint32_t id) { return id < nodes_.size() && node_known_[id]; };
  int64_t rows = 0, previous = -1;
  for (;;) {
    try {
      if (!s.step()) break;
    } catch (const Error& e) {
      failed(e);
      return -1;
    }
    ++rows;
    const int64_t step = s.column_int(0);
    const std::string row = where + ", row step " + std::to_string(step) + ": ";
    if (s.column_text(4) != "integer" || s.column_text(5) != "integer" || s.column_text(6) != "integer" ||
        s.column_text(7) != "blob") {
      tolerate(row + "columns are not (integer, integer, integer, blob)", "skipped");
      continue;
    }
    if (step < 0 || step <= previous) {
      tolerate(row + (step < 0 ? "negative step" : "comes again (a damaged table)"), "skipped");
      continue;
    }
    previous = step;
    const std::string_view blob = s.column_blob(3);
    if (internal::table_step_checksum(table, step, blob) != s.column_int(2)) {
      tolerate(row + "damaged (checksum mismatch)", "skipped");
      continue;
    }
    if (!decode(kind, blob, s.column_int(1), step, channel_rows, similarity_rows, histogram_rows, attention_rows,
                scalar_rows) ||
        (kind == Table::kScalars && !scalar_rows.empty() && scalar_rows.front().step <= last_scalar_step)) {
      tolerate(row + "malformed", "skipped");
      continue;
    }
    // A step whose records were skipped (and said so), or lost with the rest of an unreadable
    // table, takes these with it; a row of a step that has no row at all contradicts steps.
    if (!std::binary_search(steps.delivered.begin(), steps.delivered.end(), step)) {
      if (!steps.stopped && !std::binary_search(steps.rows.begin(), steps.rows.end(), step))
        tolerate(row + "table steps has no row for this step (the tables contradict each other)", "skipped");
      continue;
    }
    bool all_known = true;
    if (kind == Table::kChannels)
      for (const auto& r : channel_rows) all_known = all_known && known(r.node);
    else if (kind == Table::kSimilarities)
      for (const auto& r : similarity_rows) all_known = all_known && known(r.node);
    else if (kind == Table::kAttention)
      for (const auto& r : attention_rows) all_known = all_known && known(r.node);
    else if (kind == Table::kHistograms)
      for (const auto& r : histogram_rows) all_known = all_known && known(r.node);
    if (!all_known) {
      tolerate(row + "a record names a node id which table nodes does not have", "skipped");
      continue;
    }
    const auto deliver = [&](auto& stored, const auto& fn) {
      for (auto& r : stored) {
        r.record.step = step;
        r.record.node = nodes_[r.node].node;
        fn(r.record);
      }
    };
    if (kind == Table::kChannels) {
      deliver(channel_rows, visit.channel);
    } else if (kind == Table::kSimilarities) {
      deliver(similarity_rows, visit.similarity);
    } else if (kind == Table::kAttention) {
      deliver(attention_rows, visit.attention);
    } else if (kind == Table::kScalars) {
      for (const StepScalar& x : scalar_rows) visit.scalar(x);
      if (!scalar_rows.empty()) last_scalar_step = scalar_rows.back().step;
    } else {
      // A site this build does not know (a newer writer's) is left out, as for records.
      bool bad_site = false;
      for (const auto& r : histogram_rows)
        bad_site = bad_site || r.site >= site_map_.size() || site_map_[r.site] == -2;
      if (bad_site) {
        tolerate(row + "a histogram names a site id which table sites does not have", "skipped");
        continue;
      }
      for (auto& r : histogram_rows) {
        if (site_map_[r.site] < 0) continue;
        r.histogram.step = step;
        r.histogram.node = nodes_[r.node].node;
        r.histogram.site = static_cast<Site>(site_map_[r.site]);
        visit.histogram(r.histogram);
      }
    }
  }
  return rows;
}

}  // namespace gradscope
