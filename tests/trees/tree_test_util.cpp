#include "tree_test_util.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace gradscope::test {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot open " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

namespace {

bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

}  // namespace

ScratchDir::ScratchDir() {
  static int made = 0;
  const auto* test = ::testing::UnitTest::GetInstance()->current_test_info();
  dir_ = (std::filesystem::temp_directory_path() /
          ("gradscope-trees-" + std::to_string(::getpid()) + "-" + std::to_string(++made) + "-" +
           (test ? test->name() : "test")))
             .string();
  std::filesystem::create_directories(dir_);
}

ScratchDir::~ScratchDir() {
  std::error_code ignored;
  std::filesystem::remove_all(dir_, ignored);
}

std::string ScratchDir::path(const std::string& name) const { return dir_ + "/" + name; }

std::string ScratchDir::write(const std::string& name, const std::string& bytes) const {
  const std::string p = path(name);
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << bytes;
  if (!out) throw std::runtime_error("cannot write " + p);
  return p;
}

void expect_same_model(const TreeEnsemble& a, const TreeEnsemble& b) {
  EXPECT_EQ(a.dialect, b.dialect);
  EXPECT_EQ(a.objective, b.objective);
  EXPECT_EQ(a.booster, b.booster);
  EXPECT_EQ(a.link, b.link);
  EXPECT_EQ(a.rounds, b.rounds);
  EXPECT_EQ(a.num_outputs, b.num_outputs);
  EXPECT_EQ(a.num_features, b.num_features);
  EXPECT_EQ(a.base_score, b.base_score);
  EXPECT_EQ(a.feature_names, b.feature_names);
  ASSERT_EQ(a.trees.size(), b.trees.size());
  for (std::size_t t = 0; t < a.trees.size(); ++t) {
    const Tree &x = a.trees[t], &y = b.trees[t];
    EXPECT_EQ(x.round, y.round) << "tree " << t;
    EXPECT_EQ(x.output, y.output) << "tree " << t;
    EXPECT_EQ(x.weight, y.weight) << "tree " << t;
    EXPECT_EQ(x.categories, y.categories) << "tree " << t;
    ASSERT_EQ(x.nodes.size(), y.nodes.size()) << "tree " << t;
    for (std::size_t n = 0; n < x.nodes.size(); ++n) {
      const TreeNode &p = x.nodes[n], &q = y.nodes[n];
      EXPECT_TRUE(p.left == q.left && p.right == q.right && p.feature == q.feature &&
                  same(p.threshold, q.threshold) && p.default_left == q.default_left &&
                  p.value == q.value && same(p.gain, q.gain) && same(p.cover, q.cover) &&
                  p.categorical == q.categorical && p.categories_begin == q.categories_begin &&
                  p.categories_end == q.categories_end)
          << "tree " << t << " node " << n;
    }
  }
}

std::vector<std::vector<double>> read_table(const std::string& path) {
  std::istringstream text(read_text(path));
  std::vector<std::vector<double>> rows;
  std::string line;
  for (std::size_t number = 1; std::getline(text, line); ++number) {
    std::vector<double> row;
    std::size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
      if (i == line.size()) break;
      const char* start = line.c_str() + i;
      char* end = nullptr;
      const double v = std::strtod(start, &end);
      if (end == start)
        throw std::runtime_error(path + ": line " + std::to_string(number) + ": not a number");
      row.push_back(v);
      i += static_cast<std::size_t>(end - start);
    }
    if (!row.empty()) rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace gradscope::test
