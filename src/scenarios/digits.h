// The sklearn digits data set (1797 8x8 images, 10 classes) as tensors, from the CSV that
// scripts/fetch-data.sh extracts from Debian's python3-sklearn.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace gradscope::cli {

/// The rows of digits.csv as they are: 64 pixel values (0..16) per image, row-major, and
/// the labels 0..9.
struct DigitsCsv {
  std::vector<float> pixels;
  std::vector<int64_t> labels;
};

/// Reads `path` (a trailing CR on a line is dropped). Throws Error naming the file and line
/// on bad input: a field that is not a number, a pixel outside 0..16, a label not 0..9.
DigitsCsv read_digits_csv(const std::string& path);

struct Digits {
  at::Tensor x_train, y_train;  // float32 [n, 64] standardised; int64 [n]
  at::Tensor x_test, y_test;
};

/// Reads `path` (rows of 64 pixel values 0..16 then the label 0..9), shuffles with `seed`,
/// holds out `test_fraction` (at least one row) and standardises each pixel with the training
/// split's mean and std. Throws Error naming the file and line on bad input, and naming the
/// file when fewer than max(10, digits_rows_needed(min_train_rows, test_fraction)) rows.
Digits load_digits(const std::string& path, double test_fraction, uint64_t seed, int64_t min_train_rows = 1);

/// The fewest rows from which load_digits leaves `train_rows` rows to train on.
int64_t digits_rows_needed(int64_t train_rows, double test_fraction);

}  // namespace gradscope::cli
