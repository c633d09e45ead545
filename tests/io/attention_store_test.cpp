// Attention records in the run store (schema 6, table attention): written with their step and
// read back exactly, so the report of the saved run names the same heads and steps as the one
// built in memory; a schema-5 run (no such table) still reads; a damaged or malformed row is an
// Error naming the table and row, and --partial skips it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "../common/error_of.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "gradscope/io/store/saved_report.h"
#include "store/internal/channel_codec.h"
#include "store/internal/record_codec.h"
#include "run_db_edit.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

HeadStats head(double max_logit, double fraction, int64_t top) {
  HeadStats h;
  h.queries = 64;
  h.nonfinite_queries = 1;
  h.fraction_queries = 63;
  h.max_logit = max_logit;
  h.entropy_sum = 64 * fraction * 2.5;
  h.entropy_fraction_sum = 63 * fraction;
  h.top_queries = top;
  return h;
}

// 12 steps of node "attn" (two heads); attention at every other step; head 1 grows and
// collapses from step 6.
fs::path run_with_attention(const std::string& name, std::vector<AttentionRecord>* written = nullptr,
                            Report* in_memory = nullptr) {
  const fs::path dir = test::fresh_dir(name);
  RunWriter w(dir.string());
  ReportBuilder b;
  for (int64_t step = 0; step < 12; ++step) {
    StepRecords s;
    s.step = step;
    s.records.push_back({step, "attn", Site::kParamGrad, test::stats_for(step, 0)});
    if (step % 2 == 0) {
      const bool late = step >= 6;
      s.attention.push_back({step, "attn", {head(3.5, 0.9, 0), head(late ? 300.0 * step : 4, late ? 0.02 : 0.9, late ? 60 : 1)}});
      if (written) written->push_back(s.attention.back());
    }
    for (const Record& r : s.records) b.add(r);
    for (const AttentionRecord& a : s.attention) b.add(a);
    w.add_step(s);
  }
  w.close();
  if (in_memory) *in_memory = b.build();
  return dir;
}

struct Read {
  int64_t steps = 0;
  std::vector<AttentionRecord> attention;
  std::vector<std::string> warnings;
};

Read read(const fs::path& dir, bool partial) {
  RunReader r(dir.string(), ReadOptions{partial});
  Read out;
  RunVisitor v;
  v.record = [](const Record&) {};
  v.attention = [&](const AttentionRecord& a) { out.attention.push_back(a); };
  out.steps = r.for_each(v);
  out.warnings = r.warnings();
  return out;
}

void expect_same(const HeadStats& a, const HeadStats& b) {
  EXPECT_EQ(a.queries, b.queries);
  EXPECT_EQ(a.nonfinite_queries, b.nonfinite_queries);
  EXPECT_EQ(a.max_logit, b.max_logit);
  EXPECT_EQ(a.entropy_sum, b.entropy_sum);
  EXPECT_EQ(a.fraction_queries, b.fraction_queries);
  EXPECT_EQ(a.entropy_fraction_sum, b.entropy_fraction_sum);
  EXPECT_EQ(a.top_queries, b.top_queries);
}

TEST(AttentionStore, RecordsComeBackExactlyAndTheSavedReportNamesTheSameHead) {
  std::vector<AttentionRecord> written;
  Report in_memory;
  const fs::path dir = run_with_attention("as-roundtrip", &written, &in_memory);
  const Read r = read(dir, false);
  EXPECT_EQ(r.steps, 12);
  EXPECT_TRUE(r.warnings.empty());
  ASSERT_EQ(r.attention.size(), 6u);
  for (std::size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(r.attention[i].step, written[i].step);
    EXPECT_EQ(r.attention[i].node, "attn");
    ASSERT_EQ(r.attention[i].heads.size(), 2u);
    for (std::size_t h = 0; h < 2; ++h) expect_same(r.attention[i].heads[h], written[i].heads[h]);
  }
  RunReader run(dir.string());
  SavedReportBuilder b(run.summary());
  run.for_each(b.visitor());
  const Report saved = b.build();
  ASSERT_EQ(saved.nodes.size(), 1u);
  ASSERT_EQ(in_memory.nodes.size(), 1u);
  EXPECT_TRUE(saved.nodes[0].flags.contains(Flag::kAttentionLogitGrowth));
  EXPECT_TRUE(saved.nodes[0].flags.contains(Flag::kAttentionEntropyCollapse));
  EXPECT_EQ(saved.nodes[0].flags.join(), in_memory.nodes[0].flags.join());
  ASSERT_EQ(saved.nodes[0].evidence.size(), in_memory.nodes[0].evidence.size());
  for (std::size_t i = 0; i < saved.nodes[0].evidence.size(); ++i) {
    const Evidence& e = saved.nodes[0].evidence[i];
    EXPECT_EQ(e.measure, in_memory.nodes[0].evidence[i].measure);
    EXPECT_EQ(e.first_step, in_memory.nodes[0].evidence[i].first_step);
    EXPECT_EQ(e.value, in_memory.nodes[0].evidence[i].value);
    if (e.flag == Flag::kAttentionLogitGrowth) {
      EXPECT_EQ(e.first_step, 6);
      EXPECT_EQ(e.detail, "head 1 of 2");
    }
  }
  fs::remove_all(dir);
}

TEST(AttentionStore, ASchema5RunWithoutTheTableStillReads) {
  const fs::path dir = run_with_attention("as-schema5");
  test::Edit(dir).older_schema(5, "DROP TABLE attention; DELETE FROM meta WHERE key = 'attention_steps';");
  const Read r = read(dir, false);
  EXPECT_EQ(r.steps, 12);
  EXPECT_TRUE(r.attention.empty());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  fs::remove_all(dir);
}

TEST(AttentionStore, ADamagedRowIsAnErrorAndPartialSkipsIt) {
  const fs::path dir = run_with_attention("as-damaged");
  test::Edit(dir).sql("UPDATE attention SET checksum = checksum + 1 WHERE step = 4");
  EXPECT_THAT(test::error_of([&] { read(dir, false); }),
              HasSubstr("run database '" + (dir / "run.db").string() +
                        "': table attention, row step 4: damaged (checksum mismatch)"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 12);
  ASSERT_EQ(r.attention.size(), 5u);
  for (const AttentionRecord& a : r.attention) EXPECT_NE(a.step, 4);
  ASSERT_EQ(r.warnings.size(), 1u);
  fs::remove_all(dir);
}

TEST(AttentionStore, MalformedBlobsAreRefused) {
  const AttentionRecord a{0, "attn", {head(3, 0.5, 2)}};
  std::string blob;
  internal::append_attention(blob, 0, a);
  std::vector<internal::StoredWithNode<AttentionRecord>> out;
  ASSERT_TRUE(internal::decode_attention(blob, 1, out));
  expect_same(out[0].record.heads[0], a.heads[0]);
  EXPECT_FALSE(internal::decode_attention(blob.substr(0, blob.size() - 1), 1, out));  // truncated
  EXPECT_FALSE(internal::decode_attention(blob + "x", 1, out));                       // trailing
  AttentionRecord bad = a;
  bad.heads[0].top_queries = 65;  // more one-key queries than queries
  std::string bad_blob;
  internal::append_attention(bad_blob, 0, bad);
  EXPECT_FALSE(internal::decode_attention(bad_blob, 1, out));
  // A head count larger than the bytes could hold is malformed before anything is allocated.
  std::string huge;
  internal::append_varint(huge, 0);
  internal::append_varint(huge, uint64_t{1} << 60);
  EXPECT_FALSE(internal::decode_attention(huge, 1, out));
}

}  // namespace
}  // namespace gradscope
