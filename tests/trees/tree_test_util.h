// What the tree tests share: where the fixtures and the real data sets are, reading the
// fixtures' whitespace-separated tables, and the one tolerance every prediction is held to.
//
//   GRADSCOPE_REQUIRE_DATA(fixture("lightgbm/lgmulticlass.model"));
//   const auto rows = read_table(fixture("lightgbm/multiclass_test.tsv"));
//   EXPECT_TRUE(close(ours, theirs)) << ours << " vs " << theirs;
#pragma once

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "../common/require_data.h"
#include "gradscope/core/trees/model.h"

namespace gradscope::test {

/// Every prediction must match the library's to this relative difference (issue 12).
constexpr double kRelative = 1e-6;

/// |a - b| <= 1e-6 max(|a|, |b|): relative, so a raw score near zero is held as tightly as a
/// large one (a reader that drops a tree changes small scores the most).
inline bool close(double a, double b) {
  return std::fabs(a - b) <= kRelative * std::max(std::fabs(a), std::fabs(b));
}

/// tests/data/trees/<name>: the LightGBM and CatBoost fixtures, in the repository.
inline std::string fixture(const std::string& name) {
  return std::string(GRADSCOPE_TREE_FIXTURE_DIR) + "/" + name;
}

/// <data dir>/<name>: GRADSCOPE_DATA_DIR, else the checkout's data/ (scripts/fetch-data.sh).
inline std::string data_file(const std::string& name) {
  const char* env = std::getenv("GRADSCOPE_DATA_DIR");
  return std::string(env ? env : GRADSCOPE_DEFAULT_DATA_DIR) + "/" + name;
}

/// The rows of a table of numbers separated by tabs or spaces (the fixtures' .tsv and
/// prediction files), each row as written. Throws std::runtime_error for a missing file or a
/// cell that is not a number, so a damaged fixture fails the test instead of comparing zeros.
std::vector<std::vector<double>> read_table(const std::string& path);

/// Every field of every tree of `a` equals that of `b` exactly (NaN equal to NaN): for models
/// that must be the same bits, however they were read. Adds gtest failures naming the tree.
void expect_same_model(const TreeEnsemble& a, const TreeEnsemble& b);

/// A folder of its own under the system's temporary folder, removed with the object: files a
/// test writes (damaged models, CSV) go there.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  /// `dir/name`.
  std::string path(const std::string& name) const;
  /// Writes `bytes` as `dir/name`, replacing it; returns its path.
  std::string write(const std::string& name, const std::string& bytes) const;
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
};

/// The whole file as bytes; std::runtime_error when it cannot be read.
std::string read_text(const std::string& path);

}  // namespace gradscope::test
