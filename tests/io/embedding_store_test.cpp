// embedding.json beside a run: exact round trips (NaN too), missing, malformed and newer files.
#include "gradscope/io/embedding_store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "gradscope/core/error.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
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
  std::ofstream(dir / "run.db") << "stand-in";
  save_embedding_summary((dir / "run.db").string(), sample());
  EXPECT_TRUE(fs::exists(dir / "embedding.json"));
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
    EXPECT_THAT(e.what(), HasSubstr("embedding summary '" + (dir / "embedding.json").string() + "': "));
    EXPECT_THAT(e.what(), HasSubstr(message)) << text;
  }
}

TEST(EmbeddingStore, MalformedOrNewerFilesThrowNamingTheFile) {
  const fs::path dir = fresh_dir("emb-bad");
  expect_load_error(dir, "{not json", "malformed: parse error");
  expect_load_error(dir, "", "malformed: parse error");
  expect_load_error(dir, "{\"something_else\": 1}", "malformed: key 'gradscope_embedding_run' not found");
  expect_load_error(dir, R"({"gradscope_embedding_run": {"version": 1, "tables": [{"report": 3}],
                            "gradient_norm_correlations": []}})",
                    "malformed:");
  expect_load_error(dir, R"({"gradscope_embedding_run": {"version": 2, "tables": [],
                            "gradient_norm_correlations": []}})",
                    "version 2 is newer than this gradscope reads (1)");
  // Histogram edges that do not bound its bins.
  save_embedding_summary(dir.string(), sample());
  std::ifstream in(dir / "embedding.json");
  nlohmann::json doc = nlohmann::json::parse(in);
  doc["gradscope_embedding_run"]["tables"][1]["profile"]["exposure"]["edges"] = {1, 10};
  expect_load_error(dir, doc.dump(), "2 histogram edges for 2 bins");
  fs::remove_all(dir);
}

TEST(EmbeddingStore, UnwritableFolderThrowsNamingThePath) {
  const fs::path dir = fresh_dir("emb-unwritable");
  std::ofstream(dir / "file") << "x";
  try {
    save_embedding_summary((dir / "file" / "run").string(), sample());
    ADD_FAILURE() << "saved under a file";
  } catch (const Error& e) {
    EXPECT_THAT(e.what(), HasSubstr("embedding summary '" + (dir / "file" / "run" / "embedding.json").string() + "'"));
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace gradscope
