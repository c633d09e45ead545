// The tree-reader seeds (tree_*): the fixture models of tests/data/trees (the 992-tree
// CatBoost model cut to 24 trees), XGBoost models trained here through its C API on the real
// data sets (scripts/fetch-data.sh), and the first rows of those data sets as CSV. Without the
// data fuzz_seeds fails, saying what to run: no fuzz test skips (tests/common/require_data.h).
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gradscope/core/error.h"
#include "gradscope/trees/data_files.h"
#include "gradscope/trees/xgboost_api.h"
#include "seeds.h"

namespace gradscope::fuzz {
namespace {

namespace fs = std::filesystem;

// The seed under its own target and under tree_model (every format, detected).
void add(const fs::path& out, const std::string& target, const std::string& name,
         const std::string& bytes) {
  write_seed(out / target, name, bytes);
  write_seed(out / "tree_model", name, bytes);
}

// A CatBoost model cut to its first `n` trees, indented as CatBoost writes it.
std::string first_trees(const fs::path& file, std::size_t n) {
  nlohmann::ordered_json model = nlohmann::ordered_json::parse(read_bytes(file));
  auto& trees = model.at("oblivious_trees");
  if (trees.size() > n) trees.erase(trees.begin() + static_cast<std::ptrdiff_t>(n), trees.end());
  return model.dump(2);
}

void fixture_seeds(const fs::path& fixtures, const fs::path& out) {
  for (const auto& entry : fs::directory_iterator(fixtures / "lightgbm")) {
    const std::string name = entry.path().filename().string();
    const std::string bytes = read_bytes(entry.path());
    if (entry.path().extension() == ".json")
      add(out, "tree_lightgbm_json", name, bytes);
    else if (bytes.rfind("tree\n", 0) == 0)
      add(out, "tree_lightgbm_text", name, bytes);
    else if (name.rfind("tree_", 0) == 0)  // a bare tree block: give it a model's header
      add(out, "tree_lightgbm_text", name,
          "tree\nversion=v3\nnum_class=1\nnum_tree_per_iteration=1\nmax_feature_idx=1\n"
          "objective=binary sigmoid:1\n\n" +
              bytes + "\nend of trees\n");
  }
  for (const auto& entry : fs::directory_iterator(fixtures / "catboost")) {
    const std::string name = entry.path().filename().string();
    if (name.size() > 11 && name.substr(name.size() - 11) == "-model.json")
      add(out, "tree_catboost_json", name, read_bytes(entry.path()));
    else if (name == "creditgermany.json")  // its first 24 of 992 trees: 4 MB slows each input
      add(out, "tree_catboost_json", "creditgermany_24.json", first_trees(entry.path(), 24));
  }
}

// Small models (a few rounds) of each kind the XGBoost reader handles.
void xgboost_seeds(const fs::path& data, const fs::path& out) {
  const TreeData cancer = read_sklearn_csv((data / "breast_cancer.csv").string());
  const TreeData digits = read_sklearn_csv((data / "digits.csv").string());
  const TreeData diabetes = read_sklearn_csv((data / "diabetes.csv").string());
  TreeData holes = cancer;
  for (std::size_t i = 0; i < holes.x.size(); i += 5) holes.x[i] = std::nan("");
  struct Seed {
    std::string name;
    const TreeData* data;
    std::map<std::string, std::string> params;
    bool categorical = false;
  };
  const std::vector<Seed> seeds = {
      {"binary_logistic.json", &cancer, {{"objective", "binary:logistic"}}},
      {"multi_softprob.json", &digits, {{"objective", "multi:softprob"}, {"num_class", "10"}}},
      {"squared_error.json", &diabetes, {{"objective", "reg:squarederror"}}},
      {"poisson.json", &diabetes, {{"objective", "count:poisson"}}},
      {"dart.json",
       &cancer,
       {{"objective", "binary:logistic"},
        {"booster", "dart"},
        {"rate_drop", "0.3"},
        {"skip_drop", "0"}}},
      {"missing.json", &holes, {{"objective", "binary:logistic"}}},
      {"categorical.json",
       &digits,
       {{"objective", "multi:softmax"},
        {"num_class", "10"},
        {"tree_method", "hist"},
        {"max_cat_to_onehot", "1"}},
       true},
      {"parallel.json",
       &cancer,
       {{"objective", "binary:logitraw"}, {"num_parallel_tree", "2"}, {"subsample", "0.7"}}},
  };
  for (const Seed& s : seeds) {
    XGBoostMatrix train(*s.data);
    if (s.categorical) train.set_feature_types(std::vector<std::string>(s.data->cols, "c"));
    XGBoostBooster booster({&train});
    booster.set_params({{"nthread", "1"}, {"max_depth", "3"}, {"seed", "1"}});
    booster.set_params(s.params);
    for (int i = 0; i < 3; ++i) booster.update(i, train);
    add(out, "tree_xgboost_json", s.name, booster.save_json());
    add(out, "tree_xgboost_ubjson", s.name.substr(0, s.name.size() - 5) + ".ubj",
        booster.save_ubjson());
  }
}

// The first lines of each data set, and hand-made CSV with a header, a label and holes.
void csv_seeds(const fs::path& data, const fs::path& out) {
  for (const char* name : {"breast_cancer.csv", "digits.csv", "diabetes.csv"}) {
    std::istringstream in(read_bytes(data / name));
    std::string line, head;
    for (int i = 0; i < 12 && std::getline(in, line); ++i) head += line + "\n";
    write_seed(out / "tree_csv", name, head);
  }
  write_seed(out / "tree_csv", "labelled.csv",
             "a,label,\"b\"\r\n1,0,2\n\n3.5,1,\nNA,1,-1e-320\nnan,0,1e308\n");
  write_seed(out / "tree_csv", "target.csv", "x,target\n1,2\n,3\n");
}

// `env`, else the folder this build was configured with.
fs::path folder(const char* env, const char* built_in) {
  const char* value = std::getenv(env);
  return value && *value ? value : built_in;
}

}  // namespace

void write_tree_seeds(const fs::path& out) {
  const fs::path fixtures = GRADSCOPE_TREE_FIXTURE_DIR;
  const fs::path data = folder("GRADSCOPE_DATA_DIR", GRADSCOPE_DEFAULT_DATA_DIR);
  for (const fs::path& need :
       {fixtures / "lightgbm", fixtures / "catboost" / "creditgermany.json",
        data / "breast_cancer.csv", data / "digits.csv", data / "diabetes.csv"}) {
    if (!fs::exists(need))
      throw Error("'" + need.string() +
                  "' is missing (the tree fixtures are in the repository, tests/data/trees; "
                  "`make data` writes the data sets)");
  }
  fixture_seeds(fixtures, out);
  xgboost_seeds(data, out);
  csv_seeds(data, out);
}

}  // namespace gradscope::fuzz
