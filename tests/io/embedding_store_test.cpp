// embedding.json beside a run: exact round trips (NaN too), missing, malformed and newer files,
// every field checked where the file is read (exact integers, ranges, histogram and Lorenz
// invariants), and only regular files of bounded size read at all.
#include "gradscope/io/embedding/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <fcntl.h>
#include <fstream>
#include <functional>
#include <future>
#include <limits>
#include <nlohmann/json.hpp>

#include "../common/error_of.h"
#include "gradscope/core/embedding/rows.h"
#include "gradscope/core/error.h"
#include "gradscope/io/store/run_writer.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using test::error_of;
using test::fresh_dir;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

void expect_same(double a, double b, const std::string& what) {
  if (std::isnan(b)) EXPECT_TRUE(std::isnan(a)) << what << ": " << a;
  else EXPECT_EQ(a, b) << what;
}

void expect_same(const Histogram& a, const Histogram& b) {
  EXPECT_EQ(a.edges, b.edges);
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a.below, b.below);
  EXPECT_EQ(a.nonfinite, b.nonfinite);
}

EmbeddingRunSummary sample() {
  EmbeddingReport r;
  r.layer = "item \"tower\"\n</script>";
  EmbeddingStats& s = r.stats;
  s.num_embeddings = 6170;
  s.dim = 32;
  s.tracked_steps = 1500;
  s.exposed_rows = 6000;
  s.active_coverage_pct = 97.24473257698541;
  s.popularity_gini = kNaN;
  s.exposure_entropy = 0.1 + 0.2;  // not a short decimal: must come back to the last bit
  s.never_exposed_rows = 170;
  s.never_updated_rows = 3;
  s.zombie_rows = 2;
  s.zombie_rows_stopped = 4;
  s.zombie_rows_unjudged = 11;
  s.zombie_rows_judged_short = 7;
  s.zombie_stopped_rows = {40, 41, 99, 5000, 6001};
  s.zombie_stopped_step = 0;  // a step, not "none" (-1, written as null)
  s.median_velocity = 1e-300;
  s.saliency_median = std::numeric_limits<double>::infinity();  // non-finite: NaN back
  s.effective_rank = -1;  // not measured
  s.effective_rank_rows = 0;
  s.state_bytes = 6170 * 220;
  s.lowest_saliency_rows = {5, 3, 9};
  EmbeddingDiagnostic d;
  d.type = "ZOMBIE_ROWS";
  d.premise = "2 of 6000 exposed rows oscillate";
  d.implies = "they thrash";
  d.action = "LOWER_EMBEDDING_LR_OR_ENABLE_AUTO_FIX";
  d.expected_effect = "settle";
  d.confidence = kNaN;
  d.evidence = {{"zombie_rows", 2}, {"exposed_rows", 6000}, {"median_velocity", kNaN}};  // not sorted
  d.example_rows = {17, 4};
  d.rows = {4, 17};
  r.diagnostics = {d};

  EmbeddingProfile p;
  p.layer = r.layer;
  p.num_embeddings = 6170;
  p.exposed_rows = 6000;
  p.lorenz = {{0, 0}, {0.5, 1 / 3.0}, {1, 1}};
  p.popularity_gini = 0.6818181818181818;
  p.exposure = {{1, 10, 100}, {3, 1}, 0, 0};
  p.velocity = {{0.1, 1, 10}, {2, 1}, 4, 1};
  p.oscillation = {};  // empty histogram

  EmbeddingReport user;
  user.layer = "user";
  user.stats.effective_rank = 12.5;
  user.stats.effective_rank_rows = 671;
  EmbeddingProfile user_profile;
  user_profile.layer = "user";
  user_profile.popularity_gini = kNaN;

  EmbeddingRunSummary out;
  out.tables = {{user, user_profile}, {r, p}};
  out.correlations = {{"user", "item \"tower\"\n</script>", kNaN, 0}, {"user", "user", 0.25, 1500}};
  return out;
}

void expect_same(const EmbeddingRunSummary& a, const EmbeddingRunSummary& b) {
  ASSERT_EQ(a.tables.size(), b.tables.size());
  for (std::size_t t = 0; t < a.tables.size(); ++t) {
    const EmbeddingReport &x = a.tables[t].report, &y = b.tables[t].report;
    EXPECT_EQ(x.layer, y.layer);
    const EmbeddingStats &s = x.stats, &u = y.stats;
    EXPECT_EQ(s.num_embeddings, u.num_embeddings);
    EXPECT_EQ(s.dim, u.dim);
    EXPECT_EQ(s.tracked_steps, u.tracked_steps);
    EXPECT_EQ(s.exposed_rows, u.exposed_rows);
    expect_same(s.active_coverage_pct, u.active_coverage_pct, "coverage");
    expect_same(s.popularity_gini, u.popularity_gini, "gini");
    expect_same(s.exposure_entropy, u.exposure_entropy, "entropy");
    EXPECT_EQ(s.never_exposed_rows, u.never_exposed_rows);
    EXPECT_EQ(s.never_updated_rows, u.never_updated_rows);
    EXPECT_EQ(s.zombie_rows, u.zombie_rows);
    EXPECT_EQ(s.zombie_rows_stopped, u.zombie_rows_stopped);
    EXPECT_EQ(s.zombie_rows_unjudged, u.zombie_rows_unjudged);
    EXPECT_EQ(s.zombie_rows_judged_short, u.zombie_rows_judged_short);
    EXPECT_EQ(s.zombie_stopped_rows, u.zombie_stopped_rows);
    EXPECT_EQ(s.zombie_stopped_step, u.zombie_stopped_step);
    expect_same(s.median_velocity, u.median_velocity, "median velocity");
    expect_same(s.effective_rank, u.effective_rank, "effective rank");
    EXPECT_EQ(s.effective_rank_rows, u.effective_rank_rows);
    EXPECT_EQ(s.state_bytes, u.state_bytes);
    EXPECT_EQ(s.lowest_saliency_rows, u.lowest_saliency_rows);
    ASSERT_EQ(x.diagnostics.size(), y.diagnostics.size());
    for (std::size_t i = 0; i < x.diagnostics.size(); ++i) {
      const EmbeddingDiagnostic &d = x.diagnostics[i], &e = y.diagnostics[i];
      EXPECT_EQ(d.type, e.type);
      EXPECT_EQ(d.premise, e.premise);
      EXPECT_EQ(d.implies, e.implies);
      EXPECT_EQ(d.action, e.action);
      EXPECT_EQ(d.expected_effect, e.expected_effect);
      expect_same(d.confidence, e.confidence, "confidence");
      ASSERT_EQ(d.evidence.size(), e.evidence.size());
      for (std::size_t k = 0; k < d.evidence.size(); ++k) {
        EXPECT_EQ(d.evidence[k].first, e.evidence[k].first);
        expect_same(d.evidence[k].second, e.evidence[k].second, d.evidence[k].first);
      }
      EXPECT_EQ(d.example_rows, e.example_rows);
      EXPECT_EQ(d.rows, e.rows);
    }
    const EmbeddingProfile &p = a.tables[t].profile, &q = b.tables[t].profile;
    EXPECT_EQ(p.layer, q.layer);
    EXPECT_EQ(p.num_embeddings, q.num_embeddings);
    EXPECT_EQ(p.exposed_rows, q.exposed_rows);
    EXPECT_EQ(p.lorenz, q.lorenz);
    expect_same(p.popularity_gini, q.popularity_gini, "profile gini");
    expect_same(p.exposure, q.exposure);
    expect_same(p.velocity, q.velocity);
    expect_same(p.oscillation, q.oscillation);
  }
  ASSERT_EQ(a.correlations.size(), b.correlations.size());
  for (std::size_t i = 0; i < a.correlations.size(); ++i) {
    EXPECT_EQ(a.correlations[i].a, b.correlations[i].a);
    EXPECT_EQ(a.correlations[i].b, b.correlations[i].b);
    expect_same(a.correlations[i].pearson, b.correlations[i].pearson, "pearson");
    EXPECT_EQ(a.correlations[i].steps, b.correlations[i].steps);
  }
}

TEST(EmbeddingStore, RoundTripIsExactNaNForNaN) {
  const fs::path dir = fresh_dir("emb-roundtrip") / "run";  // created by save
  EmbeddingRunSummary want = sample();
  save_embedding_summary(dir.string(), want);
  const std::optional<EmbeddingRunSummary> got = load_embedding_summary(dir.string());
  ASSERT_TRUE(got.has_value());
  want.tables[1].report.stats.saliency_median = kNaN;  // Inf is written as null
  expect_same(*got, want);
  // Nothing but the file is left behind (the temporary was renamed).
  int files = 0;
  for (const auto& entry : fs::directory_iterator(dir)) files += entry.path().filename() == "embedding.json" ? 1 : 100;
  EXPECT_EQ(files, 1);
  fs::remove_all(dir.parent_path());
}

TEST(EmbeddingStore, TheFileHasTheDocumentedShape) {
  const fs::path dir = fresh_dir("emb-shape");
  save_embedding_summary(dir.string(), sample());
  std::ifstream in(dir / "embedding.json");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_THAT(text, HasSubstr("\"gradscope_embedding_run\""));
  EXPECT_THAT(text, HasSubstr("\"version\": 1"));
  EXPECT_THAT(text, HasSubstr("\"gradient_norm_correlations\""));
  EXPECT_THAT(text, HasSubstr("\"popularity_gini\": null"));
  EXPECT_EQ(text.find("NaN"), std::string::npos);
  fs::remove_all(dir);
}

TEST(EmbeddingStore, RunDatabasePathNamesItsFolder) {
  const fs::path dir = fresh_dir("emb-rundb");
  RunWriter(dir.string(), {}).close();
  save_embedding_summary((dir / "run.db").string(), sample());
  EXPECT_FALSE(fs::exists(dir / "embedding.json"));  // a run keeps it inside run.db
  const auto got = load_embedding_summary((dir / "run.db").string());
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(got->tables.size(), 2u);
  fs::remove_all(dir);
}

TEST(EmbeddingStore, MissingFileIsNullopt) {
  const fs::path dir = fresh_dir("emb-missing");
  EXPECT_FALSE(load_embedding_summary(dir.string()).has_value());
  EXPECT_FALSE(load_embedding_summary((dir / "nope").string()).has_value());
  EXPECT_FALSE(load_embedding_summary((dir / "nope" / "run.db").string()).has_value());
  fs::remove_all(dir);
}

void expect_load_error(const fs::path& dir, const std::string& text, const std::string& message) {
  std::ofstream(dir / "embedding.json") << text;
  try {
    load_embedding_summary(dir.string());
    ADD_FAILURE() << "loaded: " << text;
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("embedding file '" + (dir / "embedding.json").string() + "': "));
    EXPECT_THAT(e.what(), HasSubstr(message)) << text;
  }
}

TEST(EmbeddingStore, MalformedOrNewerFilesThrowNamingTheFile) {
  const fs::path dir = fresh_dir("emb-bad");
  expect_load_error(dir, "{not json", "malformed: parse error");
  expect_load_error(dir, "", "malformed: parse error");
  expect_load_error(dir, "{\"something_else\": 1}", "': gradscope_embedding_run: missing");
  expect_load_error(dir, "[1]", "': the document: must be an object, got an array");
  expect_load_error(dir, R"({"gradscope_embedding_run": {"version": 1, "tables": [{"report": 3}],
                            "gradient_norm_correlations": []}})",
                    "': gradscope_embedding_run.tables[0].report: must be an object, got 3");
  expect_load_error(dir, R"({"gradscope_embedding_run": {"version": 2, "tables": [],
                            "gradient_norm_correlations": []}})",
                    "': gradscope_embedding_run.version: 2 is newer than this gradscope reads (1)");
  // Histogram edges that do not bound its bins.
  save_embedding_summary(dir.string(), sample());
  std::ifstream in(dir / "embedding.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["gradscope_embedding_run"]["tables"][1]["profile"]["exposure"]["edges"] = {1, 10};
  expect_load_error(dir, doc.dump(), "': gradscope_embedding_run.tables[1].profile.exposure: 2 histogram edges for 2 bins");
  fs::remove_all(dir);
}

// The sample as saved, then edited by `edit` and written back over embedding.json; the
// message of the Error loading it throws ("no error" when it loads).
std::string error_after_edit(const fs::path& dir, const std::function<void(nlohmann::ordered_json&)>& edit) {
  save_embedding_summary(dir.string(), sample());
  nlohmann::ordered_json doc;
  {
    std::ifstream in(dir / "embedding.json");
    doc = nlohmann::ordered_json::parse(in);
  }
  edit(doc);
  std::ofstream(dir / "embedding.json", std::ios::trunc) << doc.dump(1);
  return error_of([&] { load_embedding_summary(dir.string()); });
}

// The message for `field` of the file in `dir`.
std::string message(const fs::path& dir, const std::string& field, const std::string& what) {
  return "embedding file '" + (dir / "embedding.json").string() + "': gradscope_embedding_run." + field + ": " + what;
}

// The same, for a JSON literal put at a field of the saved sample.
std::string error_with(const fs::path& dir, const nlohmann::ordered_json::json_pointer& at, const std::string& literal) {
  return error_after_edit(dir, [&](nlohmann::ordered_json& doc) { doc[at] = nlohmann::ordered_json::parse(literal); });
}

using Pointer = nlohmann::ordered_json::json_pointer;
const std::string kInteger = "must be an integer from 0 to 9223372036854775807, got ";

TEST(EmbeddingStore, HistogramEdgesMustBoundEveryBin) {
  const fs::path dir = fresh_dir("emb-edges");
  const Pointer exposure("/gradscope_embedding_run/tables/1/profile/exposure");
  // The file `gradscope html` crashed on: bins without edges.
  EXPECT_EQ(error_with(dir, exposure / "edges", "[]"), message(dir, "tables[1].profile.exposure", "0 histogram edges for 2 bins"));
  EXPECT_EQ(error_with(dir, exposure / "edges", "[1, 10, 100, 1000]"),
            message(dir, "tables[1].profile.exposure", "4 histogram edges for 2 bins"));
  EXPECT_EQ(error_after_edit(dir, [&](auto& doc) { doc[exposure / "edges"] = {5}; doc[exposure / "counts"] = nlohmann::ordered_json::array(); }),
            message(dir, "tables[1].profile.exposure", "1 histogram edges for 0 bins"));
  EXPECT_EQ(error_with(dir, exposure / "edges", "[1, 100, 10]"),
            message(dir, "tables[1].profile.exposure.edges[2]", "10 is below the edge before it, 100"));
  EXPECT_EQ(error_with(dir, exposure / "edges", "[1, null, 100]"),
            message(dir, "tables[1].profile.exposure.edges[1]", "must be a finite number, got null"));
  EXPECT_EQ(error_with(dir, exposure / "edges", "[0, 10, 100]"),
            message(dir, "tables[1].profile.exposure.edges[0]", "must be above 0 (a log axis), got 0"));
  EXPECT_EQ(error_with(dir, exposure / "counts", "[3, -1]"),
            message(dir, "tables[1].profile.exposure.counts[1]", kInteger + "-1"));
  EXPECT_EQ(error_with(dir, exposure / "below", "0.5"), message(dir, "tables[1].profile.exposure.below", kInteger + "0.5"));
  EXPECT_EQ(error_with(dir, exposure / "edges", "{}"),
            message(dir, "tables[1].profile.exposure.edges", "must be an array, got an object"));
  // Oscillation is drawn on a linear axis: edges at or below 0 are fine there.
  EXPECT_EQ(error_after_edit(dir, [](auto& doc) {
              doc[Pointer("/gradscope_embedding_run/tables/1/profile/oscillation")] = {
                  {"edges", {-1, 0, 1}}, {"counts", {2, 3}}, {"below", 0}, {"nonfinite", 1}};
            }),
            "no error");
  fs::remove_all(dir);
}

TEST(EmbeddingStore, IntegersMustBeExactAndInRange) {
  const fs::path dir = fresh_dir("emb-integers");
  const Pointer version("/gradscope_embedding_run/version");
  for (const char* bad : {"1e300", "1.5", "1.0", "-1", "18446744073709551615", "18446744073709551616"}) {
    SCOPED_TRACE(bad);
    const std::string shown = nlohmann::ordered_json::parse(bad).dump();
    EXPECT_EQ(error_with(dir, version, bad), message(dir, "version", kInteger + shown));
  }
  EXPECT_EQ(error_with(dir, version, "\"1\""), message(dir, "version", kInteger + "a string"));
  EXPECT_EQ(error_with(dir, version, "true"), message(dir, "version", kInteger + "a boolean"));
  EXPECT_EQ(error_with(dir, version, "0"), message(dir, "version", "must be at least 1, got 0"));
  EXPECT_EQ(error_with(dir, version, "2"), message(dir, "version", "2 is newer than this gradscope reads (1)"));
  const Pointer stats("/gradscope_embedding_run/tables/1/report/embedding_stats");
  EXPECT_EQ(error_with(dir, stats / "num_embeddings", "1e300"),
            message(dir, "tables[1].report.embedding_stats.num_embeddings", kInteger + "1e+300"));
  EXPECT_EQ(error_with(dir, stats / "state_bytes", "9223372036854775808"),
            message(dir, "tables[1].report.embedding_stats.state_bytes", kInteger + "9223372036854775808"));
  EXPECT_EQ(error_with(dir, stats / "lowest_saliency_rows", "[5, 3.5]"),
            message(dir, "tables[1].report.embedding_stats.lowest_saliency_rows[1]", kInteger + "3.5"));
  EXPECT_EQ(error_with(dir, Pointer("/gradscope_embedding_run/tables/1/report/diagnostics/0/evidence/example_rows"), "[-3]"),
            message(dir, "tables[1].report.diagnostics[0].evidence.example_rows[0]", kInteger + "-3"));
  EXPECT_EQ(error_with(dir, Pointer("/gradscope_embedding_run/gradient_norm_correlations/1/steps"), "-2"),
            message(dir, "gradient_norm_correlations[1].steps", kInteger + "-2"));
  EXPECT_EQ(error_with(dir, Pointer("/gradscope_embedding_run/tables/0/profile/exposed_rows"), "null"),
            message(dir, "tables[0].profile.exposed_rows", kInteger + "null"));
  // The largest int64 is a valid count.
  EXPECT_EQ(error_with(dir, stats / "state_bytes", "9223372036854775807"), "no error");
  fs::remove_all(dir);
}

TEST(EmbeddingStore, FractionsLorenzPointsAndTextAreChecked) {
  const fs::path dir = fresh_dir("emb-ranges");
  const Pointer table("/gradscope_embedding_run/tables/1");
  const Pointer lorenz = table / "profile" / "lorenz";
  EXPECT_EQ(error_with(dir, table / "profile" / "popularity_gini", "1.5"),
            message(dir, "tables[1].profile.popularity_gini", "must be from 0 to 1 or null, got 1.5"));
  EXPECT_EQ(error_with(dir, table / "report" / "embedding_stats" / "active_coverage_pct", "100.5"),
            message(dir, "tables[1].report.embedding_stats.active_coverage_pct", "must be from 0 to 100 or null, got 100.5"));
  EXPECT_EQ(error_with(dir, table / "report" / "embedding_stats" / "median_velocity", "-1"),
            message(dir, "tables[1].report.embedding_stats.median_velocity", "must be at least 0 or null, got -1"));
  EXPECT_EQ(error_with(dir, table / "report" / "diagnostics" / "0" / "confidence", "-0.5"),
            message(dir, "tables[1].report.diagnostics[0].confidence", "must be from 0 to 1 or null, got -0.5"));
  EXPECT_EQ(error_with(dir, Pointer("/gradscope_embedding_run/gradient_norm_correlations/1/pearson"), "2"),
            message(dir, "gradient_norm_correlations[1].pearson", "must be from -1 to 1 or null, got 2"));
  EXPECT_EQ(error_with(dir, table / "report" / "diagnostics" / "0" / "evidence" / "zombie_rows", "\"2\""),
            message(dir, "tables[1].report.diagnostics[0].evidence.zombie_rows", "must be a number or null, got a string"));
  EXPECT_EQ(error_with(dir, table / "report" / "layer", "3"), message(dir, "tables[1].report.layer", "must be a string, got 3"));
  EXPECT_EQ(error_with(dir, lorenz, "[[0, 0], [0.5, 1.5], [1, 1]]"),
            message(dir, "tables[1].profile.lorenz[1]", "share of exposures must be from 0 to 1, got 1.5"));
  EXPECT_EQ(error_with(dir, lorenz, "[[0, 0], [0.6, 0.2], [0.5, 0.3], [1, 1]]"),
            message(dir, "tables[1].profile.lorenz[2]", "share of rows 0.5 is not above the point before it, 0.6"));
  EXPECT_EQ(error_with(dir, lorenz, "[[0, 0], [0.5, 0.6], [0.7, 0.3], [1, 1]]"),
            message(dir, "tables[1].profile.lorenz[2]", "share of exposures 0.3 is below the point before it, 0.6"));
  EXPECT_EQ(error_with(dir, lorenz, "[[0, 0], [0.5], [1, 1]]"),
            message(dir, "tables[1].profile.lorenz[1]", "must be [share of rows, share of exposures]"));
  EXPECT_EQ(error_with(dir, lorenz, "[[0, 0], [null, 0.5], [1, 1]]"),
            message(dir, "tables[1].profile.lorenz[1]", "share of rows must be from 0 to 1, got null"));
  EXPECT_EQ(error_with(dir, table / "report", "3"), message(dir, "tables[1].report", "must be an object, got 3"));
  EXPECT_EQ(error_after_edit(dir, [&](auto& doc) { doc[table / "profile"].erase("velocity"); }),
            message(dir, "tables[1].profile.velocity", "missing"));
  // Rounding at the ends of a range is the writer's, not damage: a Gini of equal counts may
  // come out a hair below 0, a Pearson coefficient a hair above 1.
  EXPECT_EQ(error_with(dir, table / "profile" / "popularity_gini", "-1e-17"), "no error");
  EXPECT_EQ(error_with(dir, Pointer("/gradscope_embedding_run/gradient_norm_correlations/1/pearson"), "1.0000000000000002"),
            "no error");
  fs::remove_all(dir);
}

TEST(EmbeddingStore, HugeObjectsAndDeepNestingAreRefusedWhileParsing) {
  const fs::path dir = fresh_dir("emb-shape-limits");
  // Objects keep their order, so each key is looked up one by one: a million members would
  // take hours. This format's largest object has 16 members.
  EXPECT_EQ(error_after_edit(dir, [](auto& doc) {
              auto& evidence = doc[Pointer("/gradscope_embedding_run/tables/1/report/diagnostics/0/evidence")];
              for (int i = 0; evidence.size() < 65; ++i) evidence["extra" + std::to_string(i)] = i;
            }),
            "embedding file '" + (dir / "embedding.json").string() + "': malformed: an object of more than 64 members");
  EXPECT_EQ(error_with(dir, Pointer("/gradscope_embedding_run/tables/1/profile/lorenz"), std::string(20, '[') + std::string(20, ']')),
            "embedding file '" + (dir / "embedding.json").string() + "': malformed: nested more than 16 deep");
  fs::remove_all(dir);
}

TEST(EmbeddingStore, SaveRefusesWhatLoadWouldRefuse) {
  const fs::path dir = fresh_dir("emb-save-checked");
  const std::string file = "embedding file '" + (dir / "embedding.json").string() + "': gradscope_embedding_run.";
  EmbeddingRunSummary s = sample();
  s.tables[1].profile.exposure.edges.clear();
  EXPECT_EQ(error_of([&] { save_embedding_summary(dir.string(), s); }),
            file + "tables[1].profile.exposure: 0 histogram edges for 2 bins");
  s = sample();
  s.tables[1].profile.velocity.edges[1] = kNaN;
  EXPECT_EQ(error_of([&] { save_embedding_summary(dir.string(), s); }),
            file + "tables[1].profile.velocity.edges[1]: must be a finite number, got null");
  s = sample();
  s.tables[0].profile.lorenz = {{0, 0}, {0.5, kNaN}, {1, 1}};
  EXPECT_EQ(error_of([&] { save_embedding_summary(dir.string(), s); }),
            file + "tables[0].profile.lorenz[1]: share of exposures must be from 0 to 1, got null");
  EXPECT_FALSE(fs::exists(dir / "embedding.json"));
  fs::remove_all(dir);
}

// What the tracker really produces loads back: equal exposures (a Gini computed as 0 up to
// rounding), rows that never moved (no velocity bins, all `below`), a table nobody touched
// (no Lorenz curve, no bins).
TEST(EmbeddingStore, SummariesOfRealTablesLoadBack) {
  EmbeddingRows even(7, 2), still(5, 3), untouched(4, 2);
  for (int64_t step = 0; step < 9; ++step) {
    for (int64_t row = 0; row < 6; ++row) {
      even.expose(row, step);
      const float delta[2] = {row % 2 ? 0.25f : -0.5f, step % 2 ? 1.f : -1.f};
      even.record_update(row, delta, 1.0);
    }
    for (int64_t row = 0; row < 5; ++row) still.expose(row, step);
  }
  EmbeddingRunSummary s;
  const std::vector<std::pair<const char*, const EmbeddingRows*>> tables = {
      {"even", &even}, {"still", &still}, {"untouched", &untouched}};
  for (const auto& [name, rows] : tables)
    s.tables.push_back({diagnose_embedding(name, *rows, 9, EmbeddingRuleOptions{}), profile_embedding(name, *rows)});
  ASSERT_TRUE(s.tables[1].profile.velocity.edges.empty());
  ASSERT_EQ(s.tables[1].profile.velocity.below, 5);
  ASSERT_TRUE(s.tables[2].profile.lorenz.empty());
  s.correlations = {{"even", "still", 1.0, 9}};
  const fs::path dir = fresh_dir("emb-real");
  save_embedding_summary(dir.string(), s);
  std::optional<EmbeddingRunSummary> got;
  ASSERT_NO_THROW(got = load_embedding_summary(dir.string()));
  ASSERT_TRUE(got.has_value());
  expect_same(*got, s);
  fs::remove_all(dir);
}

// The text of the Error loading <dir>/embedding.json.
std::string load_error(const fs::path& dir) {
  return error_of([&] { load_embedding_summary(dir.string()); });
}

TEST(EmbeddingStore, OnlyRegularFilesAreRead) {
  const fs::path dir = fresh_dir("emb-kinds");
  const std::string file = "embedding file '" + (dir / "embedding.json").string() + "': ";
  fs::create_directory(dir / "embedding.json");
  EXPECT_EQ(load_error(dir), file + "not a regular file (a directory)");
  fs::remove(dir / "embedding.json");
  fs::create_symlink("/dev/null", dir / "embedding.json");
  EXPECT_EQ(load_error(dir), file + "not a regular file (a character device)");
  fs::remove(dir / "embedding.json");
  // A symlink to a regular file is read.
  save_embedding_summary((dir / "real").string(), sample());
  fs::create_symlink(dir / "real" / "embedding.json", dir / "embedding.json");
  EXPECT_EQ(load_error(dir), "no error");
  fs::remove(dir / "embedding.json");
  // A FIFO nobody writes: refused at once instead of waiting for a writer forever. Were the
  // load to block, the test opens the write end itself after a while so that it ends.
  ASSERT_EQ(mkfifo((dir / "embedding.json").c_str(), 0600), 0);
  std::future<std::string> got = std::async(std::launch::async, [&] { return load_error(dir); });
  if (got.wait_for(std::chrono::seconds(10)) != std::future_status::ready) {
    ADD_FAILURE() << "load_embedding_summary blocked on a FIFO";
    close(open((dir / "embedding.json").c_str(), O_WRONLY | O_NONBLOCK));
  }
  EXPECT_EQ(got.get(), file + "not a regular file (a FIFO)");
  fs::remove_all(dir);
}

TEST(EmbeddingStore, FilesOverTheSizeLimitAreRefusedUnread) {
  const fs::path dir = fresh_dir("emb-size");
  const std::string file = "embedding file '" + (dir / "embedding.json").string() + "': ";
  std::ofstream(dir / "embedding.json").close();
  fs::resize_file(dir / "embedding.json", kMaxEmbeddingFileBytes + 1);  // sparse: nothing written
  EXPECT_EQ(load_error(dir), file + "larger than the limit of 8388608 bytes (8388609 bytes)");
  // At the limit it is read (and these zero bytes are not JSON).
  fs::resize_file(dir / "embedding.json", kMaxEmbeddingFileBytes);
  EXPECT_THAT(load_error(dir), ::testing::StartsWith(file + "malformed: parse error"));
  fs::remove_all(dir);
}

TEST(EmbeddingStore, UnwritableFolderThrowsNamingThePath) {
  const fs::path dir = fresh_dir("emb-unwritable");
  std::ofstream(dir / "file") << "x";
  try {
    save_embedding_summary((dir / "file" / "run").string(), sample());
    ADD_FAILURE() << "saved under a file";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("embedding file '" + (dir / "file" / "run" / "embedding.json").string() + "'"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
