// The ATen statistics path in chunks (docs/devices.md, device memory): with the chunk capped
// at 1000 elements, every tensor here is split, and its merged summary must equal the
// unchunked one (one chunk: these tensors are far below the 1 MiB budget) and the fused
// kernel's: counts, min, max exact, sums within the documented tolerance. Sizes sit just
// below, at and above multiples of the chunk; NaN and +-Inf are placed in the last chunk.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "aten_stats.h"  // src/torch, internal
#include "aten_stats_expect.h"
#include "audit/channel_math.h"
#include "gradscope/torch/tensor.h"

namespace gradscope::torch {
namespace {

using test::expect_agree;
using test::ForceAten;
using test::kInf;

constexpr int64_t kChunk = 1000;

// Caps the chunk for one scope.
class ChunkLimit {
 public:
  explicit ChunkLimit(int64_t elements) { internal::set_aten_stats_chunk_limit(elements); }
  ~ChunkLimit() { internal::set_aten_stats_chunk_limit(0); }
  ChunkLimit(const ChunkLimit&) = delete;
  ChunkLimit& operator=(const ChunkLimit&) = delete;
};

// Chunked against unchunked and against the fused kernel, on the same tensor.
void expect_chunks_agree(const at::Tensor& t, const StatsOptions& o = {}) {
  SCOPED_TRACE(std::string(c10::toString(t.scalar_type())) + " " + shape_of(t));
  ASSERT_LT(t.numel(), internal::aten_stats_chunk_elements(t)) << "the reference must be one chunk";
  const Stats whole = internal::aten_stats(t, "t", o);
  ChunkLimit limit(kChunk);
  ASSERT_EQ(internal::aten_stats_chunk_elements(t), kChunk);
  const Stats chunked = internal::aten_stats(t, "t", o);
  expect_agree(whole, chunked);
  expect_agree(compute(view_of(t, "t"), o), chunked);
}

// n values; the last three are NaN, +Inf, -Inf (the last chunk) unless n is smaller.
at::Tensor with_non_finite_at_the_end(int64_t n, at::ScalarType type) {
  at::Tensor t = at::randn({n}, at::kDouble) * 60;  // some saturated (|x| > 50)
  t[0] = 0.0;
  if (n > 3) {
    t[n - 1] = NAN;
    t[n - 2] = kInf;
    t[n - 3] = -kInf;
  }
  return t.to(type);
}

TEST(AtenStatsChunks, TheChunkFollowsTheBudget) {
  const at::Tensor big = at::empty({int64_t{1} << 24});  // 64 MiB of float32
  EXPECT_EQ(internal::aten_stats_budget(big), std::size_t{64} << 20);
  EXPECT_EQ(internal::aten_stats_chunk_elements(big), (int64_t{64} << 20) / 13);
  EXPECT_EQ(internal::aten_stats_budget(at::empty({1 << 20})), std::size_t{4} << 20);  // its own size
  EXPECT_EQ(internal::aten_stats_budget(at::empty({int64_t{1} << 28}, at::TensorOptions().device(at::kMeta))),
            std::size_t{64} << 20);  // 1 GiB: capped
  EXPECT_EQ(internal::aten_stats_budget(at::empty({10})), std::size_t{1} << 20);  // the floor
  ChunkLimit limit(kChunk);
  EXPECT_EQ(internal::aten_stats_chunk_elements(big), kChunk);
}

TEST(AtenStatsChunks, SizesAroundChunkMultiplesMergeToTheUnchunkedResult) {
  at::manual_seed(21);
  for (auto type : {at::kFloat, at::kDouble, at::kHalf, at::kBFloat16})
    for (int64_t n : {999, 1000, 1001, 1999, 2000, 2001, 2999, 3000, 3001, 10007})
      expect_chunks_agree(with_non_finite_at_the_end(n, type));
}

TEST(AtenStatsChunks, ALastChunkOfOnlyNonFiniteValuesChangesNoExtreme) {
  at::manual_seed(22);
  // 2001 elements: the last chunk is one NaN; before it only positive values, so a 0 or an
  // Inf leaking into min or max would show.
  at::Tensor t = at::rand({2001}) + 1;
  t[2000] = NAN;
  expect_chunks_agree(t);
  t[2000] = -kInf;
  expect_chunks_agree(-t);
  // Every chunk without a finite value: the empty extremes, as Stats.
  const at::Tensor none = at::full({2500}, NAN);
  expect_chunks_agree(none);
  ChunkLimit limit(kChunk);
  const Stats s = internal::aten_stats(none, "t", {});
  EXPECT_EQ(s.min, kInf);
  EXPECT_EQ(s.max, -kInf);
  EXPECT_EQ(s.max_abs, 0.0);
}

TEST(AtenStatsChunks, ThresholdsCountTheSameAcrossChunks) {
  StatsOptions wide;
  wide.dead_eps = 0.5;
  wide.saturation = 1.0;
  at::manual_seed(23);
  expect_chunks_agree(with_non_finite_at_the_end(3001, at::kFloat), wide);
  expect_chunks_agree(at::zeros({2000}));
}

TEST(AtenStatsChunks, NonContiguousViewsAreSplitWithoutACopyOfTheWhole) {
  at::manual_seed(24);
  const at::Tensor base = with_non_finite_at_the_end(3 * 5000, at::kFloat).view({3, 5000});
  expect_chunks_agree(base.slice(1, 0, 5000, 2));   // rows of 2500 > the chunk: each in pieces
  expect_chunks_agree(at::randn({50, 70}).t());     // runs of 20 rows of 50
  expect_chunks_agree(base.select(1, 4999).unsqueeze(1).expand({3, 1500}));  // stride 0
  expect_chunks_agree(base.t());                     // 5000 rows of 3, the last holds NaN and Inf
  expect_chunks_agree(at::randn({10, 20, 30}, at::kDouble).permute({2, 0, 1}));
  expect_chunks_agree(base.flip({1}).to(at::kHalf).t());
}

TEST(AtenStatsChunks, PerChannelStatsInChunksEqualTheFusedKernel) {
  at::manual_seed(25);
  at::Tensor wide = at::randn({7, 3001}) * 60;  // a channel of 3001 > the chunk along dim 0
  wide[6][3000] = NAN;
  wide[6][2999] = -kInf;
  at::Tensor cube = at::randn({40, 30, 20}) * 60;  // channels of 800 < the chunk along dim 1
  cube[39][29][19] = kInf;
  for (const auto& [x, dim] : std::vector<std::pair<at::Tensor, int64_t>>{{wide, 0}, {wide, 1}, {cube, 1}, {cube, -1}}) {
    SCOPED_TRACE(shape_of(x) + " dim " + std::to_string(dim));
    const std::vector<Stats> fused = [&] {
      ForceAten off(false);
      return internal::per_channel_stats(x, dim, {});
    }();
    ForceAten on(true);
    const std::vector<Stats> whole = internal::per_channel_stats(x, dim, {});
    ChunkLimit limit(kChunk);
    const std::vector<Stats> chunked = internal::per_channel_stats(x, dim, {});
    ASSERT_EQ(chunked.size(), fused.size());
    ASSERT_EQ(whole.size(), fused.size());
    for (std::size_t c = 0; c < fused.size(); ++c) {
      expect_agree(whole[c], chunked[c]);
      expect_agree(fused[c], chunked[c]);
    }
  }
}

TEST(AtenStatsChunks, ABatchOfChunkedTensorsStillCopiesOnce) {
  at::manual_seed(26);
  const at::Tensor a = with_non_finite_at_the_end(2500, at::kFloat), b = at::randn({30, 100}).t();
  ChunkLimit limit(kChunk);
  internal::AtenStatsBatch batch({});
  batch.add(a, "a");
  batch.add_slices(b, 1, "b");
  batch.add(b, "b");
  const std::vector<Stats> all = batch.resolve();
  EXPECT_EQ(batch.copies(), 1u);
  ASSERT_EQ(all.size(), 32u);
  expect_agree(compute(view_of(a, "a")), all[0]);
  expect_agree(compute(view_of(b, "b")), all[31]);
}

}  // namespace
}  // namespace gradscope::torch
