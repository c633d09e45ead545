// Reading the rows a tree model is judged on from CSV files: `gradscope trees --data` and the
// scikit-learn data sets scripts/fetch-data.sh extracts.
//
//   gradscope::TreeData train = gradscope::read_csv_data("train.csv", "label");
//   gradscope::TreeData cancer = gradscope::read_sklearn_csv("data/breast_cancer.csv");
#pragma once

#include <string>

#include "gradscope/core/trees/data.h"

namespace gradscope {

/// The largest data file read: 2 GiB.
constexpr std::uintmax_t kMaxDataFileBytes = std::uintmax_t{2} << 30;

/// A comma-separated file with a header row of column names. `label` names the label column
/// ("" for none: every column is a feature). Empty cells and NA, NaN, nan are missing values.
/// Throws Error "data file '<path>': line N: ..." for a row with the wrong number of fields,
/// "line N, column '<name>': \"x\" is not a number", or a label column that does not exist.
TreeData read_csv_data(const std::string& path, const std::string& label);

/// scikit-learn's bundled CSV layout (sklearn/datasets/data/*.csv): optionally a first line
/// "n_samples,n_features,..." (recognised by having fewer fields than the rows), then rows
/// with the label in the last column. Columns are named f0, f1, ...
TreeData read_sklearn_csv(const std::string& path);

/// `data` without labels and names, written as a CSV with a header (names, or f0, f1, ...)
/// and, when labelled, a last column `label`: what read_csv_data(path, label) reads back.
void write_csv_data(const std::string& path, const TreeData& data,
                    const std::string& label = "label");

}  // namespace gradscope
