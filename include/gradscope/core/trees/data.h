// Rows a tree model is evaluated on: a dense row-major matrix (NaN for missing values) with
// optional labels and column names, and a reproducible train/validation split of it.
//
//   gradscope::TreeData d = gradscope::read_csv_data("train.csv", "label");  // trees/data_files.h
//   auto [train, valid] = gradscope::split_rows(d, 0.25, /*seed=*/7);
//   double x = train.row(3)[2];
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace gradscope {

/// A table of rows x cols features and, optionally, one label per row.
struct TreeData {
  std::size_t rows = 0, cols = 0;
  std::vector<double> x;           ///< rows * cols values, row-major; NaN is missing
  std::vector<double> y;           ///< labels: empty, or one per row
  std::vector<std::string> names;  ///< column names: empty, or cols of them

  const double* row(std::size_t i) const { return x.data() + i * cols; }
  bool labelled() const { return !y.empty(); }
};

/// The rows `index` of `data`, in that order (indexes must be < data.rows).
TreeData select_rows(const TreeData& data, const std::vector<std::size_t>& index);

/// Shuffles the rows with a fixed generator (std::mt19937_64 and Fisher-Yates, the same on
/// every platform) and splits them: the first part keeps 1 - `second_fraction` of the rows,
/// the second the rest. Throws Error for a fraction outside [0, 1].
std::pair<TreeData, TreeData> split_rows(const TreeData& data, double second_fraction,
                                         uint64_t seed);

}  // namespace gradscope
