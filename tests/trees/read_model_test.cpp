// Bad model files: each is an Error that names the file and where in it the damage is (a
// line of a text model, a byte or a field path of a JSON one), never a crash and never a
// model that evaluates wrongly. The damage is done to the real fixtures.
#include "gradscope/trees/read_model.h"

#include <gtest/gtest.h>

#include <regex>

#include "../common/error_of.h"
#include "tree_test_util.h"

namespace gradscope::test {
namespace {

// Damaged copies of the fixtures, written to a scratch folder and read back by path.
class BadModels : public ::testing::Test {
 protected:
  std::string write(const std::string& name, const std::string& bytes) const {
    return scratch_.write(name, bytes);
  }
  std::string read_error(const std::string& name, const std::string& bytes) const {
    const std::string path = write(name, bytes);
    return error_of([&] { read_tree_model(path); });
  }

  ScratchDir scratch_;
};

// `text` with the first occurrence of `from` replaced by `to` (which must be there).
std::string edit(std::string text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at != std::string::npos) text.replace(at, from.size(), to);
  return text;
}

// The 1-based number of the line where `needle` first appears.
std::size_t line_of(const std::string& text, const std::string& needle) {
  const auto at = text.find(needle);
  return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + at, '\n'));
}

TEST_F(BadModels, MissingUnreadableEmptyAndForeignFiles) {
  EXPECT_EQ(error_of([] { read_tree_model("/nonexistent/gradscope/m.json"); }),
            "model '/nonexistent/gradscope/m.json': no such file");
  EXPECT_EQ(error_of([&] { read_tree_model(scratch_.dir()); }),
            "model '" + scratch_.dir() + "': not a regular file (a directory)");
  EXPECT_EQ(read_error("empty.txt", " \n"),
            "model '" + scratch_.path("empty.txt") + "': empty file");
  const std::string csv = scratch_.path("data.csv");
  EXPECT_EQ(read_error("data.csv", "a,b\n1,2\n"),
            "model '" + csv +
                "': not a model gradscope reads (an XGBoost or CatBoost JSON model, "
                "or a LightGBM text or dump_model JSON model)");
  EXPECT_EQ(read_error("other.json", "{\"weights\": [1, 2]}"),
            "model '" + scratch_.path("other.json") +
                "': JSON with none of \"learner\" (XGBoost), \"oblivious_trees\" (CatBoost) or "
                "\"tree_info\" (LightGBM dump_model)");
  // UBJSON: '{', then binary lengths; with XGBoost's first key it is read as XGBoost's.
  EXPECT_EQ(read_error("model.ubj", std::string("{L\0\0\0\0\0\0\0\x07learner{", 18)),
            "xgboost model '" + scratch_.path("model.ubj") +
                "': byte 18: malformed UBJSON: value: unexpected end of input");
  EXPECT_EQ(read_error("other.ubj", std::string("{L\0\0\0\0\0\0\0\x07weights[", 18)),
            "model '" + scratch_.path("other.ubj") +
                "': not a model gradscope reads (a binary file; XGBoost's old binary models: "
                "save them as .json or .ubj)");
  EXPECT_EQ(read_error("cut.json", "{\"name\": \"tree\", \"vers"),
            "model '" + scratch_.path("cut.json") +
                "': byte 22 (line 1, column 22): malformed JSON: syntax error while parsing "
                "object key - invalid string: missing closing quote; last read: '\"vers'; "
                "expected string literal");
  EXPECT_EQ(read_error("model.bin", std::string("\x01\x02\x03", 3)),
            "model '" + scratch_.path("model.bin") +
                "': not a model gradscope reads (a binary file; XGBoost's old binary models: "
                "save them as .json or .ubj)");
}

// Every cut of every fixture model, at 40 places, is an Error naming the file and a position
// (with the format when the cut leaves enough of the file to tell it).
TEST_F(BadModels, TruncatedFixturesNameTheFileAndThePosition) {
  const std::vector<std::string> models = {
      "lightgbm/lg_breast_cancer.txt", "lightgbm/lgmulticlass.model",
      "lightgbm/lg_kddcup99.model",    "lightgbm/lg_dart_breast_cancer.json",
      "lightgbm/lg_1tree.json",        "catboost/and-model.json",
      "catboost/regression-model.json"};
  for (const std::string& name : models) {
    GRADSCOPE_REQUIRE_DATA(fixture(name));
    const std::string text = read_text(fixture(name));
    const bool json = text[0] == '{';
    // A text model's parameters after "end of trees" are optional: cut only before them.
    const std::size_t end = json ? text.size() : text.find("end of trees");
    for (int k = 1; k < 40; ++k) {
      const std::size_t cut = end * static_cast<std::size_t>(k) / 40;
      const std::string path = write("cut.model", text.substr(0, cut));
      const std::string e = error_of([&] { read_tree_model(path); });
      const std::string where =
          json ? "': byte [0-9]+ \\(line [0-9]+, column [0-9]+\\): " : "': line [0-9]+: ";
      EXPECT_TRUE(std::regex_search(e, std::regex("^([a-z]+ )?model '" + path + where)))
          << name << " cut at " << cut << ": " << e;
    }
  }
}

TEST_F(BadModels, LightGBMTextErrorsNameTheLine) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lg_breast_cancer.txt"));
  const std::string text = read_text(fixture("lightgbm/lg_breast_cancer.txt"));
  const std::string path = scratch_.path("m.txt");
  const std::string head = "lightgbm model '" + path + "': line ";

  const std::size_t leaf_line = line_of(text, "leaf_value=");
  std::string e = read_error("m.txt", edit(text, "leaf_value=", "leaf_value=x"));
  EXPECT_EQ(e.substr(0, head.size() + std::to_string(leaf_line).size()),
            head + std::to_string(leaf_line));
  EXPECT_NE(e.find("leaf_value: \"x"), std::string::npos) << e;

  const std::string first_split = text.substr(text.find("split_feature="));
  const std::string features = first_split.substr(0, first_split.find('\n'));
  e = read_error("m.txt",
                 edit(text, features, "split_feature=99" + features.substr(features.find(' '))));
  EXPECT_EQ(e, head + std::to_string(line_of(text, "split_feature=")) +
                   ": tree 0: split feature 99 outside the model's 30 features");

  // Node 1's left child made the root: a cycle.
  const std::string lefts = text.substr(text.find("left_child="));
  const std::string line = lefts.substr(0, lefts.find('\n'));
  std::string cyclic = line;
  const auto second = cyclic.find(' ') + 1;
  cyclic.replace(second, cyclic.find(' ', second) - second, "0");
  e = read_error("m.txt", edit(text, line, cyclic));
  EXPECT_EQ(e, head + std::to_string(line_of(text, "left_child=")) +
                   ": tree 0: node 1: child 0 is reached twice (not a tree)");

  e = read_error("m.txt", edit(text, "num_leaves=", "num_leaves=-"));
  EXPECT_NE(e.find("num_leaves: \"-"), std::string::npos) << e;
  e = read_error("m.txt", edit(text, "version=v3", "version=v9"));
  EXPECT_EQ(e, head + "2: version \"v9\" (gradscope reads v2 to v4)");
  e = read_error("m.txt", edit(text, "max_feature_idx=29\n", ""));
  EXPECT_EQ(e, head + "1: header: missing max_feature_idx");
  e = read_error("m.txt", edit(text, "Tree=1\n", "Tree=1\nnonsense\n"));
  EXPECT_EQ(e, head + std::to_string(line_of(text, "Tree=1\n") + 1) + ": expected key=value");
}

TEST_F(BadModels, LightGBMJsonErrorsNameTheField) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lg_1tree.json"));
  const std::string text = read_text(fixture("lightgbm/lg_1tree.json"));
  const std::string head = "lightgbm model '" + scratch_.path("m.json") + "': tree_info[0].";
  EXPECT_EQ(read_error("m.json", edit(text, "\"split_feature\": 0", "\"split_feature\": 7")),
            head + "tree_structure.split_feature: feature 7 outside the model's 2 features");
  EXPECT_EQ(read_error("m.json", edit(text, "\"leaf_value\": 0.4703", "\"leaf_value\": \"x\"")),
            head +
                "tree_structure.left_child.left_child.leaf_value: must be a finite number, "
                "got a string");
  EXPECT_EQ(
      read_error("m.json", edit(text, "\"decision_type\": \"<=\"", "\"decision_type\": \"<\"")),
      head + "tree_structure.decision_type: must be \"<=\" or \"==\", got \"<\"");
  EXPECT_EQ(read_error("m.json", edit(text, "\"1||10||100\"", "\"1||x\"")),
            head +
                "tree_structure.left_child.threshold: must be categories joined by \"||\", "
                "got \"1||x\"");
  EXPECT_EQ(read_error("m.json", edit(text, "\"missing_type\": \"None\"", "\"missing_type\": 3")),
            head + "tree_structure.missing_type: must be a string, got 3");
}

TEST_F(BadModels, CatBoostErrorsNameTheField) {
  GRADSCOPE_REQUIRE_DATA(fixture("catboost/and-model.json"));
  const std::string text = read_text(fixture("catboost/and-model.json"));
  const std::string head = "catboost model '" + scratch_.path("m.json") + "': ";
  EXPECT_EQ(read_error("m.json", edit(text, "\"border\":0.5", "\"border\":\"x\"")),
            head + "oblivious_trees[0].splits[0].border: must be a finite number, got a string");
  EXPECT_EQ(
      read_error("m.json", edit(text, "\"float_feature_index\":0", "\"float_feature_index\":5")),
      head + "oblivious_trees[0].splits[0].float_feature_index: float feature 5 of 2");
  EXPECT_EQ(read_error("m.json", edit(text, "\"FloatFeature\"", "\"OnlineCtr\"")),
            head +
                "oblivious_trees[0].splits[0].split_type: \"OnlineCtr\" splits are not "
                "supported (float features only)");
  EXPECT_EQ(read_error("m.json", edit(text, "0.5,\n            0.5\n", "0.5\n")),
            head + "oblivious_trees[0].leaf_values: 1 values for 2 leaves");
  EXPECT_EQ(read_error("m.json", edit(text, "\"oblivious_trees\"", "\"oblivious_treez\"")),
            "model '" + scratch_.path("m.json") +
                "': JSON with none of \"learner\" (XGBoost), \"oblivious_trees\" (CatBoost) or "
                "\"tree_info\" (LightGBM dump_model)");
}

// Counts in a file bound what a reader allocates only after the data they count is there, and
// within limits: a few bytes must not make the reader take gigabytes (found by fuzzing).
TEST_F(BadModels, CountsCannotMakeTheReaderAllocateWhatTheFileDoesNotHold) {
  GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/tree_3leaves.txt"));
  const std::string header =
      "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=1\n\n";
  const std::string tree = read_text(fixture("lightgbm/tree_3leaves.txt"));
  const std::string model = header + tree + "\nend of trees\n";
  const std::string path = scratch_.path("m.txt");
  // 2^30 leaves would be 2^31 nodes (over 100 GB) if sized before the leaf values are read.
  EXPECT_EQ(read_error("m.txt", edit(model, "num_leaves=3", "num_leaves=1073741824")),
            "lightgbm model '" + path + "': line " + std::to_string(line_of(model, "leaf_value")) +
                ": leaf_value: 3 values, expected 1073741824");
  EXPECT_EQ(read_error("m.txt",
                       edit(model, "num_tree_per_iteration=1", "num_tree_per_iteration=1000000")),
            "lightgbm model '" + path +
                "': line 4: num_tree_per_iteration: \"1000000\" is not an "
                "integer from 1 to 65536");
  EXPECT_EQ(read_error("m.txt", edit(model, "max_feature_idx=1", "max_feature_idx=2000000000")),
            "lightgbm model '" + path +
                "': line 5: max_feature_idx: \"2000000000\" is not an "
                "integer from -1 to 67108863");

  // Three splits on one category set keep one copy of its categories, not three: a set of
  // 10^5 words shared by 10^3 nodes would otherwise take 10^8 entries.
  const std::string shared =
      header +
      "Tree=0\nnum_leaves=4\nnum_cat=1\nsplit_feature=1 1 1\nthreshold=0 0 0\n"
      "decision_type=1 1 1\nleft_child=1 2 -1\nright_child=-2 -3 -4\n"
      "leaf_value=1 2 3 4\ncat_boundaries=0 2\ncat_threshold=6 1\n\nend of trees\n";
  const TreeEnsemble m = parse_tree_model(shared, "shared");
  EXPECT_EQ(m.trees[0].categories, (std::vector<int32_t>{1, 2, 32}));
  const double in[2] = {0, 32}, out[2] = {0, 3};
  EXPECT_EQ(predict_raw(m, in)[0], 1);   // in the set at all three nodes: left to leaf 0
  EXPECT_EQ(predict_raw(m, out)[0], 2);  // not in it: right at the root

  GRADSCOPE_REQUIRE_DATA(fixture("catboost/and-model.json"));
  const std::string cat = read_text(fixture("catboost/and-model.json"));
  EXPECT_EQ(read_error("c.json", edit(cat, "\"flat_feature_index\":1",
                                      "\"flat_feature_index\": 2000000000, \"feature_id\": \"x\"")),
            "catboost model '" + scratch_.path("c.json") +
                "': features_info.float_features[1].flat_feature_index: column 2000000000, above "
                "the limit of 67108864 features");
}

TEST(ModelFormat, DetectedFromTheContent) {
  EXPECT_EQ(detect_model_format("tree\nversion=v3\n", "m"), ModelFormat::kLightGBMText);
  EXPECT_EQ(detect_model_format(" {\"learner\" : {}}", "m"), ModelFormat::kXGBoostJson);
  EXPECT_EQ(detect_model_format("{\"oblivious_trees\":[]}", "m"), ModelFormat::kCatBoostJson);
  EXPECT_EQ(detect_model_format("{\"name\":\"tree\",\"tree_info\":[]}", "m"),
            ModelFormat::kLightGBMJson);
  // A key named only inside a string value is not the key.
  EXPECT_EQ(error_of([] { detect_model_format("{\"a\": \"learner\"}", "m"); }).substr(0, 28),
            "model 'm': JSON with none of");
}

}  // namespace
}  // namespace gradscope::test
