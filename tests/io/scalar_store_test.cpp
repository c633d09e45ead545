// Per-step scalars in the run store (schema 7, table scalars): the loss and the global gradient
// norms, with the values of unsampled steps carried by the next sampled step, read back exactly
// and in step order, so the report of the saved run names the same divergence, spike and leads
// as the one built in memory; a schema-6 run (no such table) still reads; a damaged or
// malformed row is an Error naming the table and row, and --partial skips it.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>

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

Record grad(int64_t step, const std::string& node, double l2) {
  Record r{step, node, Site::kParamGrad, {}};
  r.stats.count = r.stats.finite = 1;
  r.stats.sum = r.stats.sum_abs = r.stats.max_abs = r.stats.min = r.stats.max = l2;
  r.stats.sum_sq = l2 * l2;
  return r;
}

// 60 steps, sampled every 3rd (the others' scalars ride with the next sampled step): the loss
// falls, a batch fault at step 30, the gradient of "rnn" bursts at step 44 and the loss leaves
// for good from step 46, NaN at step 58; the global norm peaks at step 45.
fs::path run_with_scalars(const std::string& name, std::vector<StepScalar>* written = nullptr,
                          Report* in_memory = nullptr) {
  const fs::path dir = test::fresh_dir(name);
  RunWriter w(dir.string());
  ReportBuilder b;
  StepRecords s;
  for (int64_t step = 0; step < 60; ++step) {
    const double loss = step >= 58 ? std::nan("") : step >= 46 ? 40.0 + step : step == 30 ? 9.0 : 3.0 - 0.01 * step + 0.01 * (step % 2);
    s.scalars.push_back({step, kLossSeries, loss});
    s.scalars.push_back({step, kGradNormSeries, step == 45 ? 400.0 : 1.0 + 0.1 * (step % 3)});
    s.scalars.push_back({step, kBatchSeries, static_cast<double>(step % 17)});
    if (step % 3 != 2) continue;
    s.step = step;
    // The sampled step's record: rnn's gradient, with the burst at step 44.
    s.records.push_back(grad(step, "rnn", step == 44 ? 500.0 : 2.0 + 0.01 * (step % 5)));
    for (const Record& r : s.records) b.add(r);
    for (const StepScalar& x : s.scalars) b.add(x);
    if (written) written->insert(written->end(), s.scalars.begin(), s.scalars.end());
    w.add_step(s);
    s = StepRecords{};
  }
  w.close();
  if (in_memory) *in_memory = b.build();
  return dir;
}

struct Read {
  int64_t steps = 0;
  std::vector<StepScalar> scalars;
  std::vector<std::string> warnings;
};

Read read(const fs::path& dir, bool partial) {
  RunReader r(dir.string(), ReadOptions{partial});
  Read out;
  RunVisitor v;
  v.record = [](const Record&) {};
  v.scalar = [&](const StepScalar& x) { out.scalars.push_back(x); };
  out.steps = r.for_each(v);
  out.warnings = r.warnings();
  return out;
}

bool same_value(double a, double b) { return (std::isnan(a) && std::isnan(b)) || a == b; }

TEST(ScalarStore, ScalarsComeBackExactlyAndTheSavedReportJudgesTheSame) {
  std::vector<StepScalar> written;
  Report in_memory;
  const fs::path dir = run_with_scalars("ss-roundtrip", &written, &in_memory);
  const Read r = read(dir, false);
  EXPECT_EQ(r.steps, 20);
  EXPECT_TRUE(r.warnings.empty());
  ASSERT_EQ(r.scalars.size(), written.size());
  ASSERT_EQ(written.size(), 180u);
  for (std::size_t i = 0; i < written.size(); ++i) {
    EXPECT_EQ(r.scalars[i].step, written[i].step);
    EXPECT_EQ(r.scalars[i].name, written[i].name);
    EXPECT_TRUE(same_value(r.scalars[i].value, written[i].value)) << i;
  }
  RunReader run(dir.string());
  SavedReportBuilder b(run.summary());
  run.for_each(b.visitor());
  const Report saved = b.build();
  const SeriesReport& a = saved.series;
  const SeriesReport& m = in_memory.series;
  EXPECT_EQ(a.loss_steps, 60);
  ASSERT_TRUE(a.diverged());
  EXPECT_EQ(a.divergence_step, 46);
  EXPECT_EQ(a.divergence_step, m.divergence_step);
  EXPECT_EQ(a.first_nonfinite_loss, 58);
  ASSERT_EQ(a.spike_count, 1);
  EXPECT_EQ(a.spikes[0].step, 30);
  EXPECT_EQ(a.spikes[0].batch, 30 % 17);
  EXPECT_EQ(a.spikes[0].z, m.spikes[0].z);
  EXPECT_EQ(a.grad_norm_max, 400);
  EXPECT_EQ(a.grad_norm_max_step, 45);
  EXPECT_EQ(a.grad_norm_median, m.grad_norm_median);
  ASSERT_EQ(a.leads.size(), 1u);
  EXPECT_EQ(a.leads[0].node, "rnn");
  EXPECT_EQ(a.leads[0].step, 44);
  EXPECT_EQ(a.leads[0].lead, 2);
  fs::remove_all(dir);
}

TEST(ScalarStore, ASchema6RunWithoutTheTableStillReads) {
  const fs::path dir = run_with_scalars("ss-schema6");
  test::Edit(dir).older_schema(6, "DROP TABLE scalars; DELETE FROM meta WHERE key = 'scalar_steps';");
  const Read r = read(dir, false);
  EXPECT_EQ(r.steps, 20);
  EXPECT_TRUE(r.scalars.empty());
  EXPECT_TRUE(r.warnings.empty()) << r.warnings[0];
  fs::remove_all(dir);
}

TEST(ScalarStore, ADamagedRowIsAnErrorAndPartialSkipsIt) {
  const fs::path dir = run_with_scalars("ss-damaged");
  test::Edit(dir).sql("UPDATE scalars SET checksum = checksum + 1 WHERE step = 29");
  EXPECT_THAT(test::error_of([&] { read(dir, false); }),
              HasSubstr("run database '" + (dir / "run.db").string() +
                        "': table scalars, row step 29: damaged (checksum mismatch)"));
  const Read r = read(dir, true);
  EXPECT_EQ(r.steps, 20);
  ASSERT_EQ(r.scalars.size(), 171u);  // the 9 scalars of steps 27-29 are gone
  for (const StepScalar& x : r.scalars) EXPECT_TRUE(x.step < 27 || x.step > 29) << x.step;
  ASSERT_EQ(r.warnings.size(), 1u);
  fs::remove_all(dir);
}

TEST(ScalarStore, MalformedBlobsAreRefused) {
  std::string blob;
  internal::append_scalar(blob, 10, {8, kLossSeries, 2.5});
  internal::append_scalar(blob, 10, {10, kLossSeries, 2.4});
  std::vector<StepScalar> out;
  ASSERT_TRUE(internal::decode_scalars(blob, 2, 10, out));
  EXPECT_EQ(out[0].step, 8);
  EXPECT_EQ(out[1].value, 2.4);
  EXPECT_FALSE(internal::decode_scalars(blob.substr(0, blob.size() - 1), 2, 10, out));  // truncated
  EXPECT_FALSE(internal::decode_scalars(blob + "x", 2, 10, out));                       // trailing
  EXPECT_FALSE(internal::decode_scalars(blob, 2, 1, out));  // 2 steps back from row step 1: below 0
  std::string back;
  internal::append_scalar(back, 10, {9, kLossSeries, 1});
  internal::append_scalar(back, 10, {8, kLossSeries, 1});
  EXPECT_FALSE(internal::decode_scalars(back, 2, 10, out));  // steps go back
  std::string long_name;
  internal::append_scalar(long_name, 1, {1, std::string(300, 'x'), 1});
  EXPECT_FALSE(internal::decode_scalars(long_name, 1, 1, out));
  EXPECT_FALSE(internal::decode_scalars(blob, uint64_t{1} << 60, 10, out));  // a count past the bytes
}

TEST(ScalarStore, TheWriterRefusesScalarsThatGoBackOrHaveNoName) {
  const fs::path dir = test::fresh_dir("ss-writer");
  RunWriter w(dir.string());
  w.add(StepScalar{3, kLossSeries, 1.0});
  w.add(Record{5, "n", Site::kParamGrad, {}});
  w.add(StepScalar{4, kLossSeries, 1.0});  // an unsampled step before the open one: kept
  w.end_step();
  EXPECT_THAT(test::error_of([&] { w.add(StepScalar{5, kLossSeries, 1.0}); }), HasSubstr("steps must not decrease"));
  EXPECT_THAT(test::error_of([&] { w.add(StepScalar{9, "", 1.0}); }), HasSubstr("name must have 1 to 256 bytes"));
  EXPECT_THAT(test::error_of([&] { w.add(StepScalar{-1, kLossSeries, 1.0}); }), HasSubstr("negative step"));
  w.close();
  const Read r = read(dir, false);
  ASSERT_EQ(r.scalars.size(), 2u);
  EXPECT_EQ(r.scalars[0].step, 3);
  EXPECT_EQ(r.scalars[1].step, 4);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
