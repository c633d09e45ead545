// The small model that the packed_file target loads its input into, as compress::load would
// load a file into a LibTorch model: two linear nodes with biases, an embedding table packed
// row by row and a plain integer buffer. Its seeds (packed_seeds.cpp) are packed from it, so
// that a seed fits and a mutation mostly does not.
#pragma once

#include <vector>

#include "gradscope/core/compress/packed.h"

namespace gradscope::fuzz {

/// The model's entries, dtypes and shapes, in the order its state lists them.
inline const std::vector<compress::EntryShape>& packed_sample_entries() {
  static const std::vector<compress::EntryShape> entries = {
      {"fc1.weight", "F32", {6, 4}}, {"fc1.bias", "F32", {6}},        {"fc2.weight", "F32", {3, 6}},
      {"fc2.bias", "F32", {3}},      {"item.weight", "F32", {8, 3}}, {"norm.count", "I64", {1}}};
  return entries;
}

}  // namespace gradscope::fuzz
