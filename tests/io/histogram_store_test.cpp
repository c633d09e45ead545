// Element histograms in the run store (schema 4, table histograms): written with their step and
// read back exactly; a schema-3 run (no such table) still reads; a damaged or malformed row is
// an Error naming the table and row, and --partial skips it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <cmath>
#include <limits>

#include "../common/error_of.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"
#include "store/internal/histogram_codec.h"
#include "run_db_edit.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

ElementHistogram histogram_at(int64_t step, int node, Site site) {
  std::vector<double> x;
  for (int i = 0; i < 50 + node; ++i) x.push_back((i - 20) * std::pow(10.0, step - 3) + node);
  x.push_back(std::numeric_limits<double>::infinity());
  HistogramCounter c;
  c.add(x.data(), x.size());
  return c.take(step, test::node_name(node), site);
}

// 5 steps x 2 nodes; histograms at steps 0, 2 and 4 (activation of both nodes, param_grad of
// node 0).
fs::path run_with_histograms(const std::string& name, std::vector<ElementHistogram>* written = nullptr) {
  const fs::path dir = test::fresh_dir(name);
  RunWriter w(dir.string());
  for (int64_t step = 0; step < 5; ++step) {
    StepRecords s;
    s.step = step;
    for (int n = 0; n < 2; ++n) s.records.push_back({step, test::node_name(n), Site::kActivation, test::stats_for(step, n)});
    if (step % 2 == 0) {
      s.histograms = {histogram_at(step, 0, Site::kActivation), histogram_at(step, 1, Site::kActivation),
                      histogram_at(step, 0, Site::kParamGrad)};
      if (written) written->insert(written->end(), s.histograms.begin(), s.histograms.end());
    }
    w.add_step(s);
  }
  w.close();
  return dir;
}

struct Read {
  int64_t steps = 0;
  std::vector<ElementHistogram> histograms;
  std::vector<std::string> warnings;
};

Read read(const fs::path& dir, bool partial) {
  RunReader r(dir.string(), ReadOptions{partial});
  Read out;
  RunVisitor v;
  v.record = [](const Record&) {};
  v.histogram = [&](const ElementHistogram& h) { out.histograms.push_back(h); };
  out.steps = r.for_each(v);
  out.warnings = r.warnings();
  return out;
}

void expect_same(const ElementHistogram& a, const ElementHistogram& b) {
  EXPECT_EQ(a.step, b.step);
  EXPECT_EQ(a.node, b.node);
  EXPECT_EQ(a.site, b.site);
  EXPECT_EQ(a.num, b.num);
  EXPECT_EQ(a.nonfinite, b.nonfinite);
  EXPECT_EQ(a.min, b.min);
  EXPECT_EQ(a.max, b.max);
  EXPECT_EQ(a.sum, b.sum);
  EXPECT_EQ(a.sum_squares, b.sum_squares);
  EXPECT_EQ(a.buckets, b.buckets);
}

TEST(HistogramStore, HistogramsComeBackExactlyWithTheirSteps) {
  std::vector<ElementHistogram> written;
  const fs::path dir = run_with_histograms("hs-roundtrip", &written);
  const Read r = read(dir, false);
  EXPECT_EQ(r.steps, 5);
  EXPECT_TRUE(r.warnings.empty());
  ASSERT_EQ(r.histograms.size(), written.size());
  ASSERT_EQ(written.size(), 9u);
  for (std::size_t i = 0; i < written.size(); ++i) expect_same(r.histograms[i], written[i]);
  EXPECT_EQ(written[0].nonfinite, 1u);
  EXPECT_GT(written[0].buckets.size(), 10u);
  // A reader that does not ask for histograms does not read them.
  RunReader plain(dir.string());
  EXPECT_EQ(plain.for_each([](const Record&) {}), 5);
  EXPECT_EQ(plain.metadata().schema_version, kRunSchemaVersion);
  fs::remove_all(dir);
}

TEST(HistogramStore, ASchema3RunWithoutTheTableStillReads) {
  const fs::path dir = run_with_histograms("hs-schema3");
  {
    // What a schema-3 writer left: no histograms table, no count of its rows, version 3.
    test::Edit(dir).older_schema(3, "DROP TABLE histograms; DELETE FROM meta WHERE key = 'histogram_steps';");
  }
  const Read r = read(dir, false);
  EXPECT_EQ(r.steps, 5);
  EXPECT_TRUE(r.histograms.empty());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  EXPECT_EQ(RunReader(dir.string()).metadata().schema_version, 3);
  fs::remove_all(dir);
}

TEST(HistogramStore, ADamagedRowIsAnErrorAndPartialSkipsIt) {
  const fs::path dir = run_with_histograms("hs-damaged");
  test::Edit(dir).sql("UPDATE histograms SET checksum = checksum + 1 WHERE step = 2");
  EXPECT_THAT(test::error_of([&] { read(dir, false); }),
              HasSubstr("run database '" + (dir / "run.db").string() +
                        "': table histograms, row step 2: damaged (checksum mismatch)"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 5);
  ASSERT_EQ(r.histograms.size(), 6u);
  for (const ElementHistogram& h : r.histograms) EXPECT_NE(h.step, 2);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("table histograms, row step 2: damaged (checksum mismatch); skipped"));
  fs::remove_all(dir);
}

TEST(HistogramStore, MalformedBlobsAreRefused) {
  ElementHistogram h = histogram_at(2, 0, Site::kActivation);
  // Counts that do not add up to num, an index past the last bucket, a truncated blob.
  ElementHistogram wrong_num = h;
  wrong_num.num += 1;
  ElementHistogram past_end = h;
  past_end.buckets.back().first = static_cast<uint32_t>(histogram_bucket_limits().size());
  std::string truncated;
  internal::append_histogram(truncated, 0, 0, h);
  truncated.pop_back();
  for (const auto& [why, blob] : std::vector<std::pair<std::string, std::string>>{
           {"counts", [&] { std::string b; internal::append_histogram(b, 0, 0, wrong_num); return b; }()},
           {"index", [&] { std::string b; internal::append_histogram(b, 0, 0, past_end); return b; }()},
           {"truncated", truncated}}) {
    std::vector<internal::StoredHistogram> out;
    EXPECT_FALSE(internal::decode_histograms(blob, 1, out)) << why;
    const fs::path dir = run_with_histograms("hs-malformed");
    test::Edit(dir).put_row("histograms", 2, 1, blob);  // a checksum that verifies: a buggy writer
    EXPECT_THAT(test::error_of([&] { read(dir, false); }), HasSubstr("table histograms, row step 2: malformed")) << why;
    EXPECT_EQ(read(dir, true).histograms.size(), 6u) << why;
    fs::remove_all(dir);
  }
  std::string good;
  internal::append_histogram(good, 0, 0, h);
  std::vector<internal::StoredHistogram> out;
  ASSERT_TRUE(internal::decode_histograms(good, 1, out));
  EXPECT_EQ(out[0].histogram.buckets, h.buckets);
}

}  // namespace
}  // namespace gradscope
