// What the packer (packed.cpp) and the unpacker (unpack.cpp) share of the packed layout
// (gradscope/core/compress/packed.h): codes laid out bit by bit, a weight's integer as its code,
// the kept elements of a node's weight, the scales a reader accepts, and sizes in arithmetic
// that saturates instead of wrapping, so that a manifest's 2^62 x 4 reads as too large, never
// as a small number that matches a tensor.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gradscope::compress::internal {

/// What a saturated size reads as: no tensor holds that many bytes.
constexpr int64_t kTooLarge = std::numeric_limits<int64_t>::max();

/// a * b for a, b >= 0, kTooLarge when it does not fit (0 when either is 0).
inline int64_t mul_sat(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? kTooLarge : r;
}

/// a + b for a, b >= 0, kTooLarge when it does not fit.
inline int64_t add_sat(int64_t a, int64_t b) {
  int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? kTooLarge : r;
}

/// Elements of `shape` from dimension `from` on (dimensions >= 0), saturating.
inline int64_t product(const std::vector<int64_t>& shape, std::size_t from = 0) {
  int64_t n = 1;
  for (std::size_t i = from; i < shape.size(); ++i) n = mul_sat(n, shape[i]);
  return n;
}

/// Bytes of `count` values of `bits` bits laid one after another, saturating.
inline int64_t bits_bytes(int64_t count, int64_t bits) {
  const int64_t total = mul_sat(count, bits);
  return total == kTooLarge ? kTooLarge : total / 8 + (total % 8 != 0);
}

inline std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// The value of `bits` bits (at most 32) that starts at bit `at`, least significant bit first
/// (it spans at most 5 bytes, all present).
inline uint32_t read_bits_at(const std::vector<uint8_t>& bytes, int bits, int64_t at) {
  const auto first = static_cast<std::size_t>(at / 8);
  const int shift = static_cast<int>(at % 8);
  uint64_t word = 0;
  for (int k = 0; k * 8 < shift + bits; ++k) word |= static_cast<uint64_t>(bytes[first + k]) << (8 * k);
  return static_cast<uint32_t>((word >> shift) & ((uint64_t{1} << bits) - 1));
}

/// A weight's integer q stored as the code q + 2^(bits-1): -qmax..qmax are 1..2^bits - 1.
inline uint32_t code_of(int32_t q, int bits) { return static_cast<uint32_t>(q + (1 << (bits - 1))); }
inline int32_t q_of(uint32_t code, int bits) { return static_cast<int32_t>(code) - (1 << (bits - 1)); }

/// Whether a stored scale of a grid of +-qmax levels is one the packer can write: finite, at
/// least 0 (0 for an all-zero unit or row), and qmax times it finite, so that every value
/// q * scale is a float (3e38 at INT8 is Inf at the top code).
inline bool scale_fits(float scale, int qmax) {
  return scale >= 0 && std::isfinite(scale * static_cast<float>(qmax));
}

/// Whether bit `i` of `bitmap` is set.
inline bool bit_set(const std::vector<uint8_t>& bitmap, int64_t i) {
  return (bitmap[static_cast<std::size_t>(i / 8)] >> (i % 8)) & 1u;
}

/// The kept elements of a weight of `shape` ([units, inputs, per-input...]), unit by unit:
/// units not in `pruned_units`, input indices not in `pruned_inputs` (both in range), and with
/// a `bitmap` (one bit per weight) only the weights it keeps. `visit(unit_position, flat_index)`.
template <class Visit>
void for_kept(const std::vector<int64_t>& shape, const std::vector<int64_t>& pruned_units,
              const std::vector<int64_t>& pruned_inputs, const std::vector<uint8_t>* bitmap, Visit visit) {
  const int64_t units = shape[0];
  const int64_t inputs = shape.size() < 2 ? 1 : shape[1];
  const int64_t per_input = product(shape, 2);
  std::vector<char> unit_gone(static_cast<std::size_t>(units), 0), input_gone(static_cast<std::size_t>(inputs), 0);
  for (int64_t j : pruned_units) unit_gone[static_cast<std::size_t>(j)] = 1;
  for (int64_t i : pruned_inputs) input_gone[static_cast<std::size_t>(i)] = 1;
  int64_t kept_unit = 0;
  for (int64_t j = 0; j < units; ++j) {
    if (unit_gone[static_cast<std::size_t>(j)]) continue;
    for (int64_t i = 0; i < inputs; ++i) {
      if (input_gone[static_cast<std::size_t>(i)]) continue;
      for (int64_t k = 0; k < per_input; ++k) {
        const int64_t flat = (j * inputs + i) * per_input + k;
        if (!bitmap || bit_set(*bitmap, flat)) visit(kept_unit, flat);
      }
    }
    ++kept_unit;
  }
}

}  // namespace gradscope::compress::internal
