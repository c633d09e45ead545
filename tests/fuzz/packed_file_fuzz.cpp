// libFuzzer target: the input is a packed model file (io/compress/packed_file.h), loaded the way
// compress::load loads one, without LibTorch: the bytes read as read_packed reads a file, the
// state unpacked, its entries compared with a small model's (packed_sample.h). A
// gradscope::Error is an answer; anything else (a crash, a sanitizer report, another exception,
// an input over its time budget, 2 GB of memory) is a bug, and so is an unpacked entry that
// check_packed did not announce or whose bytes are not its shape times its dtype's size.
//
// Pruned units, inputs and rows store nothing, so a valid file may declare a dense state far
// beyond its size; a loader's model bounds what it can take, here kMaxDenseBytes does (a model
// of 16 MB): a file beyond it is checked, not unpacked.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz_support.h"
#include "gradscope/core/compress/packed.h"
#include "gradscope/core/error.h"
#include "gradscope/io/compress/packed_file.h"
#include "packed_sample.h"

namespace {

using namespace gradscope;

constexpr int64_t kMaxDenseBytes = int64_t{16} << 20;

void require(bool ok, const std::string& what) {
  if (ok) return;
  std::fprintf(stderr, "packed_file_fuzz: invariant broken: %s\n", what.c_str());
  std::abort();
}

// Elements of `shape`, or -1 for a negative dimension or beyond int64 (a bug, once
// check_packed announced it); a dimension of 0 makes 0 however large the others.
int64_t elements(const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d <= 0) return d < 0 ? -1 : 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return -1;
  return n;
}

void load(const std::string& bytes) {
  const compress::PackedModel p = parse_packed(bytes, "packed model 'fuzz'");
  const std::vector<compress::EntryShape> shapes = compress::check_packed(p);
  int64_t dense = 0;  // at most 8 bytes an element
  for (const compress::EntryShape& e : shapes) {
    const int64_t n = elements(e.shape);
    require(n >= 0, "entry '" + e.name + "' announced with more than 2^63 elements");
    if (__builtin_add_overflow(dense, n, &dense) || dense > kMaxDenseBytes / 8) return;
  }
  const std::vector<compress::StoredTensor> state = compress::unpack(p);
  require(state.size() == shapes.size(), "unpack gives the entries check_packed announced");
  std::vector<compress::EntryShape> got;
  for (std::size_t i = 0; i < state.size(); ++i) {
    const compress::StoredTensor& t = state[i];
    require(t.name == shapes[i].name && t.dtype == shapes[i].dtype && t.shape == shapes[i].shape,
            "entry '" + t.name + "' as announced");
    require(static_cast<int64_t>(t.data.size()) == elements(t.shape) * compress::stored_dtype_size(t.dtype),
            "entry '" + t.name + "' holds its shape times its dtype's size");
    got.push_back({t.name, t.dtype, t.shape});
  }
  compress::check_state_fits(fuzz::packed_sample_entries(), got, "packed model 'fuzz'");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::silence_standard_streams();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  fuzz::within_budget(size, [&] {
    try {
      load(bytes);
    } catch (const Error&) {
    }
  });
  return 0;
}
