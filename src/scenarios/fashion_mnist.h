// Fashion-MNIST (Xiao et al. 2017: 60,000 + 10,000 28x28 grey images, 10 classes) from the IDX
// files scripts/fetch-data.sh decompresses out of Debian's dataset-fashion-mnist.
//
//   cli::Digits d = load_fashion_mnist("data/fashion-mnist", /*train_rows=*/20000, /*seed=*/1);
//   // d.x_train: float32 [20000, 784] standardised; d.x_test: [10000, 784]
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "digits.h"

namespace gradscope::scenarios {

/// One IDX file's contents: dimensions and the unsigned bytes.
struct Idx {
  std::vector<int64_t> dims;
  std::vector<uint8_t> data;
};

/// Reads an IDX file of unsigned bytes (magic 0x0000080N, N dimensions, big-endian sizes).
/// Throws Error naming the file for a bad magic number, a size that does not match, or a
/// missing file (with the fetch-data hint).
Idx read_idx(const std::string& path);

/// The training images (the first `train_rows` of a `seed` shuffle; 0 = all) and the whole
/// test set, pixels / 255 standardised with the training split's mean and std over all pixels.
/// Throws Error naming the file on bad data or labels outside 0..9.
cli::Digits load_fashion_mnist(const std::string& dir, int64_t train_rows, uint64_t seed);

}  // namespace gradscope::scenarios
