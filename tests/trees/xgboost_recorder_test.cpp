// XGBoostRecorder: a live XGBoost training recorded as a run must hold exactly what
// `gradscope trees` makes of the booster's saved model with the same rows (every round's
// records, the analysis, the findings), also when training stops with an exception.
#include "gradscope/trees/xgboost_recorder.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "../common/error_of.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/read_model.h"
#include "tree_test_util.h"

namespace gradscope::test {
namespace {

struct Rows {
  TreeData train, valid;
};

Rows cancer() {
  auto [train, valid] = split_rows(read_sklearn_csv(data_file("breast_cancer.csv")), 0.3, 9);
  return {std::move(train), std::move(valid)};
}

void set_params(XGBoostBooster& b, const char* eta) {
  b.set_params({{"objective", "binary:logistic"}, {"max_depth", "3"}, {"eta", eta},
                {"nthread", "1"}, {"seed", "1"}});
}

TEST(XGBoostRecorder, TheRunIsWhatGradscopeTreesMakesOfTheSavedModel) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  const Rows d = cancer();
  const ScratchDir scratch;
  const std::string dir = scratch.path("run");
  XGBoostMatrix train(d.train), valid(d.valid);
  XGBoostBooster booster({&train, &valid});
  set_params(booster, "1e-4");  // planted: a learning rate so small that the rounds stall
  XGBoostRecorder rec(booster, dir, {&d.train, &d.valid}, {});
  constexpr int kRounds = 30;
  for (int i = 0; i < kRounds; ++i) rec.update(i, train);
  const TreeRunSummary& s = rec.finish();

  // Independent of the recorder: the booster's own saved model, analysed with the same rows.
  const TreeEnsemble saved = parse_xgboost_json(booster.save_json(), "saved");
  const TreeDynamicsReport expected = analyze_tree_dynamics(saved, {&d.train, &d.valid});
  ASSERT_EQ(s.report.rounds, kRounds);
  ASSERT_EQ(s.report.per_round.size(), expected.per_round.size());
  for (std::size_t k = 0; k < expected.per_round.size(); ++k) {
    EXPECT_EQ(s.report.per_round[k].contribution, expected.per_round[k].contribution) << k;
    EXPECT_EQ(s.report.per_round[k].train_loss, expected.per_round[k].train_loss) << k;
    EXPECT_EQ(s.report.per_round[k].valid_loss, expected.per_round[k].valid_loss) << k;
  }
  ASSERT_EQ(s.report.findings.size(), expected.findings.size());
  ASSERT_FALSE(s.report.findings.empty());
  EXPECT_EQ(s.report.findings[0].flag, TreeFlag::kStagnant);

  RunReader reader(dir);
  EXPECT_EQ(reader.step_count(), kRounds);  // one step per round
  const std::optional<TreeRunSummary> back = load_tree_summary(dir);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->report.findings.size(), s.report.findings.size());
  EXPECT_EQ(back->data, "training rows");
  EXPECT_EQ(back->validation, "validation rows");
  expect_same_model(read_tree_model(dir + "/model.json"), saved);
  EXPECT_EQ(&rec.finish(), &s);  // a second call writes nothing new
}

TEST(XGBoostRecorder, TrainingThatThrowsStillLeavesTheRoundsTrainedAsARun) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  const Rows d = cancer();
  const ScratchDir scratch;
  const std::string dir = scratch.path("run");
  XGBoostMatrix train(d.train);
  XGBoostBooster booster({&train});
  set_params(booster, "0.3");
  try {
    XGBoostRecorder rec(booster, dir, {&d.train, nullptr});
    for (int i = 0; i < 20; ++i) {
      if (i == 12) throw std::runtime_error("the training loop failed");
      rec.update(i, train);
    }
  } catch (const std::runtime_error&) {
  }
  RunReader reader(dir);
  EXPECT_EQ(reader.step_count(), 12);
  const std::optional<TreeRunSummary> back = load_tree_summary(dir);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(back->report.rounds, 12);
  EXPECT_EQ(back->validation, "");
}

TEST(XGBoostRecorder, BadInputIsAnErrorNamingIt) {
  GRADSCOPE_REQUIRE_DATA(data_file("breast_cancer.csv"));
  const Rows d = cancer();
  const ScratchDir scratch;
  XGBoostMatrix train(d.train);
  XGBoostBooster booster({&train});
  set_params(booster, "0.3");
  EXPECT_EQ(error_of([&] { XGBoostRecorder(booster, ""); }),
            "XGBoostRecorder: the run folder is empty");
  XGBoostRecorder idle(booster, scratch.path("idle"));
  EXPECT_EQ(error_of([&] { idle.finish(); }),
            "XGBoostRecorder '" + scratch.path("idle") +
                "': no round was trained, nothing to record");
  // Rows of another shape: analysis names the mismatch, and nothing is written.
  const TreeData narrow = read_csv_data(data_file("diabetes.csv"), "target");
  XGBoostRecorder wrong(booster, scratch.path("wrong"), {&narrow, nullptr});
  wrong.update(0, train);
  EXPECT_NE(error_of([&] { wrong.finish(); }).find("feature columns"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(scratch.path("wrong") + "/run.db"));
}

}  // namespace
}  // namespace gradscope::test
