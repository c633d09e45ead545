#include "store/internal/step_rows.h"

#include "store/internal/channel_codec.h"
#include "store/internal/histogram_codec.h"
#include "store/internal/record_codec.h"
#include "store/internal/run_schema.h"

namespace gradscope::internal {
namespace {

void insert_blob_row(Statement& insert, std::string_view table, int64_t step, int64_t count,
                     const std::string& blob) {
  insert.reset();
  insert.bind(1, step);
  insert.bind(2, count);
  insert.bind(3, table == "steps" ? step_checksum(step, blob) : table_step_checksum(table, step, blob));
  insert.bind_blob(4, blob.data(), blob.size());
  insert.step();
}

}  // namespace

StepRows::StepRows(Database& db)
    : insert_node_(db.prepare("INSERT INTO nodes(id, name, checksum) VALUES(?, ?, ?)")),
      insert_step_(db.prepare("INSERT INTO steps(step, n_records, checksum, records) VALUES(?, ?, ?, ?)")),
      insert_channels_(db.prepare("INSERT INTO channels(step, n_records, checksum, records) VALUES(?, ?, ?, ?)")),
      insert_similarities_(
          db.prepare("INSERT INTO similarities(step, n_records, checksum, records) VALUES(?, ?, ?, ?)")),
      insert_histograms_(db.prepare("INSERT INTO histograms(step, n_records, checksum, records) VALUES(?, ?, ?, ?)")),
      insert_attention_(db.prepare("INSERT INTO attention(step, n_records, checksum, records) VALUES(?, ?, ?, ?)")),
      insert_scalars_(db.prepare("INSERT INTO scalars(step, n_records, checksum, records) VALUES(?, ?, ?, ?)")),
      put_meta_(db.prepare(kPutMeta)) {}

uint32_t StepRows::node_id(const std::string& node) {
  auto it = ids_.find(node);
  if (it != ids_.end()) return it->second;
  // Ids run 0..N-1 in the order nodes first appear (the reader checks that).
  const auto id = static_cast<uint32_t>(ids_.size());
  insert_node_.reset();
  insert_node_.bind(1, int64_t{id});
  insert_node_.bind(2, node);
  insert_node_.bind(3, row_checksum({std::to_string(id), node}));
  insert_node_.step();
  ids_.emplace(node, id);
  return id;
}

void StepRows::add(const Record& r) {
  append_record(records_, node_id(r.node), static_cast<uint8_t>(r.site), r.stats);
  ++n_records_;
}

void StepRows::add(const ChannelRecord& c) {
  append_channel(channels_, node_id(c.node), c);
  ++n_channels_;
}

void StepRows::add(const SimilarityRecord& s) {
  append_similarity(similarities_, node_id(s.node), s);
  ++n_similarities_;
}

void StepRows::add(const ElementHistogram& h) {
  append_histogram(histograms_, node_id(h.node), static_cast<uint8_t>(h.site), h);
  ++n_histograms_;
}

void StepRows::add(const AttentionRecord& a) {
  append_attention(attention_, node_id(a.node), a);
  ++n_attention_;
}

void StepRows::add(int64_t row_step, const StepScalar& x) {
  append_scalar(scalars_, row_step, x);
  ++n_scalars_;
}

void StepRows::end_step(int64_t step) {
  insert_blob_row(insert_step_, "steps", step, n_records_, records_);
  ++step_rows_;
  if (n_channels_ > 0) {
    insert_blob_row(insert_channels_, "channels", step, n_channels_, channels_);
    ++channel_rows_;
  }
  if (n_similarities_ > 0) {
    insert_blob_row(insert_similarities_, "similarities", step, n_similarities_, similarities_);
    ++similarity_rows_;
  }
  if (n_histograms_ > 0) {
    insert_blob_row(insert_histograms_, "histograms", step, n_histograms_, histograms_);
    ++histogram_rows_;
  }
  if (n_attention_ > 0) {
    insert_blob_row(insert_attention_, "attention", step, n_attention_, attention_);
    ++attention_rows_;
  }
  if (n_scalars_ > 0) {
    insert_blob_row(insert_scalars_, "scalars", step, n_scalars_, scalars_);
    ++scalar_rows_;
  }
  scalars_.clear();
  n_scalars_ = 0;
  records_.clear();
  attention_.clear();
  n_attention_ = 0;
  channels_.clear();
  similarities_.clear();
  histograms_.clear();
  n_records_ = n_channels_ = n_similarities_ = n_histograms_ = 0;
}

void StepRows::put_counts() {
  put_meta(put_meta_, kStepRowsKey, std::to_string(step_rows_));
  put_meta(put_meta_, kChannelRowsKey, std::to_string(channel_rows_));
  put_meta(put_meta_, kSimilarityRowsKey, std::to_string(similarity_rows_));
  put_meta(put_meta_, kHistogramRowsKey, std::to_string(histogram_rows_));
  put_meta(put_meta_, kAttentionRowsKey, std::to_string(attention_rows_));
  put_meta(put_meta_, kScalarRowsKey, std::to_string(scalar_rows_));
}

}  // namespace gradscope::internal
