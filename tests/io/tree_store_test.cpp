// A tree run on disk: run.db holds every round's records, trees.json the analysis; both read
// back exactly, and a damaged trees.json is an error naming the file and the field.
#include "gradscope/io/trees/store.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "../common/error_of.h"
#include "../core/tree_builders.h"
#include "gradscope/core/audit/rules.h"
#include "gradscope/io/store/run_reader.h"
#include "trees/internal/codec.h"
#include "store_test_util.h"

namespace gradscope {
namespace {

using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

// A small two-class model with every kind of content: gains and covers, data and validation
// losses, windows, a finding (CONCENTRATED with its threshold at a third), interactions.
TreeRunSummary sample() {
  std::mt19937_64 gen(5);
  std::vector<Tree> trees;
  for (int32_t r = 0; r < 12; ++r)
    for (int32_t c = 0; c < 2; ++c) trees.push_back(test::random_tree(gen, r, c, 3, 2));
  TreeEnsemble m = test::ensemble(trees, 3, 2, TreeLink::kSoftmax, "multi:softprob");
  const TreeData train =
      test::random_data(gen, 60, 3, [](const double* x) { return x[0] > 0 ? 1.0 : 0.0; });
  const TreeData valid =
      test::random_data(gen, 30, 3, [](const double* x) { return x[1] > 0 ? 1.0 : 0.0; });
  TreeThresholds t;
  t.concentrated_share = 1.0 / 3;  // some feature of three always holds more
  TreeRunSummary s{"model.json", "train.csv", "valid.csv", "y",
                   analyze_tree_dynamics(m, {&train, &valid}, t)};
  s.report.feature_names = {"age", "income", "tenure"};
  return s;
}

std::string dumped(const TreeRunSummary& s) { return internal::tree_summary_to_json(s).dump(); }

TEST(TreeStore, ARunHoldsEveryRoundsRecordsAndItsAnalysisLoadsBackExactly) {
  const auto dir = test::fresh_dir("tree-run");
  const TreeRunSummary s = sample();
  ASSERT_EQ(s.report.findings.size(), 1u);
  ASSERT_GT(s.report.windows.size(), 1u);
  ASSERT_FALSE(s.report.interactions.kept.empty());
  write_tree_run(dir.string(), s);
  RunReader reader(dir.string());
  EXPECT_EQ(reader.step_count(), 12);
  std::vector<Record> read;
  reader.for_each([&](const Record& r) { read.push_back(r); });
  std::vector<Record> expected;
  for (std::size_t k = 0; k < 12; ++k)
    for (const Record& r : tree_round_records(s.report, k)) expected.push_back(r);
  ASSERT_EQ(read.size(), expected.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].step, expected[i].step);
    EXPECT_EQ(read[i].node, expected[i].node);
    EXPECT_EQ(read[i].site, expected[i].site);
    EXPECT_TRUE(test::same_stats(read[i].stats, expected[i].stats)) << read[i].node;
  }
  // The module rules raise nothing on tree nodes.
  EXPECT_TRUE(build_report(read).healthy());

  const std::optional<TreeRunSummary> back = load_tree_summary(dir.string());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(dumped(*back), dumped(s));
  EXPECT_EQ(back->report.per_round[3].features.size(), s.report.per_round[3].features.size());
  EXPECT_EQ(back->report.feature_name(1), "income");
  EXPECT_EQ(back->label, "y");
  // The run's database names the folder too.
  EXPECT_TRUE(load_tree_summary((dir / "run.db").string()).has_value());
  // One file: the analysis is a document inside run.db, nothing lies beside it.
  EXPECT_FALSE(std::filesystem::exists(dir / "trees.json"));
  EXPECT_EQ(reader.document_names(), std::vector<std::string>{"trees.json"});
  std::filesystem::remove_all(dir);
}

// A version 1 file (before computed confidences) still reads: the new fields take their
// "none" values and the threshold its default; every other number comes back as written.
TEST(TreeStore, AVersion1FileReadsWithoutTheConfidenceFields) {
  const TreeRunSummary s = sample();
  ASSERT_TRUE(std::isfinite(s.report.valid_rise_confidence));
  Json doc = internal::tree_summary_to_json(s);
  Json& body = doc["gradscope_tree_run"];
  body["version"] = 1;
  for (const char* key :
       {"valid_rise_confidence", "valid_rise_rows", "valid_errors_best", "valid_errors_last"})
    body["data"].erase(key);
  body["thresholds"].erase("overfit_large_rise");
  for (Json& f : body["findings"]) f.erase("confidence");
  const TreeRunSummary back = internal::tree_summary_from_json(doc);
  EXPECT_TRUE(std::isnan(back.report.valid_rise_confidence));
  EXPECT_EQ(back.report.valid_rise_rows, -1);
  EXPECT_EQ(back.report.valid_errors_last, -1);
  EXPECT_EQ(back.report.thresholds.overfit_large_rise, TreeThresholds{}.overfit_large_rise);
  EXPECT_EQ(back.report.valid_rise_z, s.report.valid_rise_z);
  ASSERT_EQ(back.report.findings.size(), s.report.findings.size());
  EXPECT_TRUE(std::isnan(back.report.findings[0].confidence));
  // And a version 2 finding's confidence comes back as written.
  Json v2 = internal::tree_summary_to_json(s);
  v2["gradscope_tree_run"]["findings"][0]["confidence"] = 0.75;
  EXPECT_EQ(internal::tree_summary_from_json(v2).report.findings[0].confidence, 0.75);
}

// A binary model on labelled rows: its interaction pairs are tested, and the test's numbers
// (gain, p, the pairs without evidence) come back exactly.
TEST(TreeStore, TestedInteractionsLoadBackExactly) {
  std::mt19937_64 gen(8);
  std::vector<Tree> trees;
  for (int32_t r = 0; r < 6; ++r) trees.push_back(test::random_tree(gen, r, 0, 3, 3));
  const TreeEnsemble m = test::ensemble(trees, 3, 1, TreeLink::kSigmoid, "binary:logistic");
  const TreeData d = test::random_data(gen, 300, 3, [](const double* x) {
    return x[0] * x[1] > 0 ? 1.0 : 0.0;
  });
  TreeRunSummary s{"m.json", "d.csv", "", "y", analyze_tree_dynamics(m, {&d})};
  ASSERT_TRUE(s.report.interactions.tested);
  ASSERT_FALSE(s.report.interactions.kept.empty());
  ASSERT_FALSE(s.report.interactions.no_evidence.empty());
  const TreeRunSummary back = internal::tree_summary_from_json(internal::tree_summary_to_json(s));
  EXPECT_EQ(dumped(back), dumped(s));
  EXPECT_EQ(back.report.interactions.kept[0].p_value, s.report.interactions.kept[0].p_value);
  EXPECT_EQ(back.report.interactions.test_rows, 300);
}

TEST(TreeStore, ARunNeedsARoundAndAMissingFileIsNoSummary) {
  const auto dir = test::fresh_dir("tree-empty");
  TreeRunSummary s;
  s.report.dialect = "xgboost";
  EXPECT_THAT(test::error_of([&] { write_tree_run(dir.string(), s); }),
              HasSubstr("the model has no rounds to record"));
  EXPECT_FALSE(load_tree_summary(dir.string()).has_value());
  std::filesystem::remove_all(dir);
}

// trees.json of the sample with `edit` applied to its body, written into a fresh run folder;
// returns the error load_tree_summary throws.
template <class F>
std::string load_error(const std::string& name, F edit) {
  const auto dir = test::fresh_dir(name);
  Json doc = internal::tree_summary_to_json(sample());
  edit(doc["gradscope_tree_run"]);
  std::ofstream(dir / "trees.json") << doc.dump();
  const std::string error = test::error_of([&] { load_tree_summary(dir.string()); });
  std::filesystem::remove_all(dir);
  return error;
}

TEST(TreeStore, DamagedFilesAreErrorsNamingTheFileAndField) {
  EXPECT_THAT(load_error("tv", [](Json& b) { b["version"] = 3; }),
              HasSubstr("gradscope_tree_run.version: 3 is newer than this gradscope reads (2)"));
  EXPECT_THAT(load_error("tr", [](Json& b) { b["data"]["valid_rise_confidence"] = 1.5; }),
              HasSubstr("data.valid_rise_confidence"));
  EXPECT_THAT(load_error("te", [](Json& b) { b["data"]["valid_errors_last"] = 31; }),
              HasSubstr("data.valid_errors_last: must be an integer from -1 to 30, got 31"));
  EXPECT_THAT(load_error("tk", [](Json& b) { b["findings"][0]["confidence"] = -0.5; }),
              HasSubstr("findings[0].confidence"));
  const std::string short_column =
      load_error("tc", [](Json& b) { b["rounds"]["velocity"].erase(0); });
  EXPECT_THAT(short_column, HasSubstr("tree file '"));
  EXPECT_THAT(
      short_column,
      HasSubstr("trees.json': gradscope_tree_run.rounds.velocity: 11 entries for 12 rounds"));
  EXPECT_THAT(load_error("tg", [](Json& b) { b["windows"].erase(1); }),
              HasSubstr("windows[1].first_round: must be an integer from"));
  EXPECT_THAT(load_error("ts", [](Json& b) { b["features"][0]["share"] = 1.5; }),
              HasSubstr("features[0].share"));
  EXPECT_THAT(load_error("tf",
                         [](Json& b) {
                           b["findings"] = Json::array({{{"flag", "LEAKY"}}});
                         }),
              HasSubstr("findings[0].flag: is not a tree flag"));
  EXPECT_THAT(load_error("ti", [](Json& b) { b["rounds"]["features"][0][0][0] = 3; }),
              HasSubstr("rounds.features[0][0][0]: must be an integer from 0 to 2, got 3"));
  EXPECT_THAT(load_error("tn", [](Json& b) { b["rounds"]["trees"][0] = -1; }),
              HasSubstr("rounds.trees[0]: must be an integer from 0"));
  EXPECT_THAT(load_error("tt", [](Json& b) { b["thresholds"]["overfit_rise"] = -1; }),
              HasSubstr("thresholds: tree threshold overfit_rise"));
  EXPECT_THAT(load_error("tb", [](Json& b) { b["model"]["has_gain"] = 1; }),
              HasSubstr("model.has_gain: must be true or false"));
  EXPECT_THAT(load_error("tp", [](Json& b) { b["interactions"]["kept"][0]["a"] = 2; }),
              HasSubstr("interactions.kept[0].b: must be above a"));
  EXPECT_THAT(load_error("tm", [](Json& b) { b["model"]["feature_names"].erase(0); }),
              HasSubstr("model.feature_names: 2 names for 3 features"));

  const auto dir = test::fresh_dir("tree-cut");
  const std::string whole = internal::tree_summary_to_json(sample()).dump();
  std::ofstream(dir / "trees.json") << whole.substr(0, whole.size() / 2);
  EXPECT_THAT(test::error_of([&] { load_tree_summary(dir.string()); }),
              HasSubstr("trees.json': malformed: "));  std::filesystem::remove_all(dir);
}

// Names from a model file need not be UTF-8 (a UBJSON model holds bytes): the run is written,
// the names replaced (U+FFFD) in its analysis; and a run whose analysis cannot be written is
// not left behind as rounds alone, which would read as healthy.
TEST(TreeStore, NamesThatAreNotUtf8AreReplacedAndNoHalfRunIsLeft) {
  const auto dir = test::fresh_dir("tree-utf8");
  TreeRunSummary s = sample();
  s.report.feature_names = {"age", "in\xff" "come", "tenure"};
  write_tree_run((dir / "run").string(), s);
  const std::optional<TreeRunSummary> back = load_tree_summary((dir / "run").string());
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->report.feature_names[1], "in\xEF\xBF\xBD" "come");
  TreeRunSummary bad = sample();
  bad.report.windows[1].first_round = 7;  // a gap after window 0: save refuses it
  EXPECT_THAT(test::error_of([&] { write_tree_run((dir / "bad").string(), bad); }), HasSubstr("windows[1].first_round"));
  EXPECT_FALSE(std::filesystem::exists(dir / "bad" / "run.db"));
  std::filesystem::remove_all(dir);
}

TEST(TreeStore, OnlyARegularFileIsReadAndSaveRefusesWhatLoadWould) {
  const auto dir = test::fresh_dir("tree-fifo");
  ASSERT_EQ(mkfifo((dir / "trees.json").c_str(), 0600), 0);
  EXPECT_THAT(test::error_of([&] { load_tree_summary(dir.string()); }),
              HasSubstr("not a regular file"));
  TreeRunSummary bad = sample();
  bad.report.windows[1].first_round = 7;  // a gap after window 0
  const auto out = test::fresh_dir("tree-bad");
  EXPECT_THAT(test::error_of([&] { save_tree_summary(out.string(), bad); }),
              HasSubstr("windows[1].first_round"));
  EXPECT_FALSE(std::filesystem::exists(out / "trees.json"));
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace gradscope
