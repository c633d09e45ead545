// Embedding-table recipes (core/compress/rows.h): sizes by hand, never-exposed rows pruned first,
// frequent rows kept more precise, budgets that cannot be met.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "../common/error_of.h"
#include "gradscope/core/compress/rows.h"

namespace gradscope::compress {
namespace {

using ::testing::HasSubstr;
using test::error_of;

// 8 rows of dim 4, every value at most 1; row 7 never exposed; row i looked up 10^i times.
RowProfile table() {
  RowProfile t;
  t.table = "item";
  t.rows = 8;
  t.dim = 4;
  t.fallback.assign(4, 0.0);
  for (int i = 0; i < 8; ++i) {
    t.lookups.push_back(i == 7 ? 0 : std::pow(10.0, i));
    t.exposed.push_back(i != 7);
    t.max_abs.push_back(1.0);
    t.sum_sq.push_back(2.0);
    t.fallback_sq.push_back(1.0);
  }
  return t;
}

TEST(CompressRows, SizesFollowTheLayout) {
  // Uniform: no codes. INT8: 4 + 4 scale bytes per row; INT4: 2 + 4.
  EXPECT_EQ(uniform_row_recipe(table(), kRowInt8).bytes, 8 * 8);
  EXPECT_EQ(uniform_row_recipe(table(), kRowInt4).bytes, 8 * 6);
  EXPECT_EQ(uniform_row_recipe(table(), kRowInt4).fp32_bytes, 8 * 16);
  // Two levels: a 1-bit code per row (1 byte for 8 rows); one row pruned: nothing for it, 16
  // for the fallback row.
  std::vector<uint8_t> l(8, kRowInt8);
  l[0] = kRowPruned;
  EXPECT_EQ(row_bytes(4, l), 7 * 8 + 1 + 16);
  l[0] = kRowFp16;
  EXPECT_EQ(row_bytes(4, l), 7 * 8 + 8 + 1);
  // Five levels: 3-bit codes (3 bytes for 8 rows).
  l = {kRowFp32, kRowFp16, kRowInt8, kRowInt4, kRowPruned, kRowInt8, kRowInt8, kRowInt8};
  EXPECT_EQ(row_bytes(4, l), 16 + 8 + 4 * 8 + 6 + 3 + 16);
  EXPECT_EQ(row_code_bytes(8, 1), 0);
  EXPECT_EQ(row_code_bytes(8, 4), 2);
  EXPECT_EQ(row_code_bytes(9, 5), 4);
}

TEST(CompressRows, NeverExposedFirstThenTheRarestRowsLoseBits) {
  const RowProfile t = table();
  const RowRecipe r = make_row_recipe(t, 60);
  EXPECT_LE(r.bytes, 60);
  EXPECT_EQ(r.level[7], kRowPruned);
  // The most looked-up row keeps the most bits.
  for (int i = 0; i < 6; ++i) EXPECT_GE(r.level[i], r.level[6]) << i;
  EXPECT_LT(r.level[6], kRowInt4);
  EXPECT_THAT(r.premise, HasSubstr("1 of 8 rows never exposed"));
  // Without the frequency every exposed row looks alike; row 7 is no longer special.
  const RowRecipe s = make_row_recipe(t, 60, RowRuleOptions{false});
  EXPECT_EQ(s.method, "static");
  EXPECT_LE(s.bytes, 60);
}

TEST(CompressRows, BaselinesAndBadBudgets) {
  const RowProfile t = table();
  std::vector<double> key = {5, 4, 3, 2, 1, 0, 6, 7};
  const RowRecipe p = prune_row_recipe(t, key, kRowInt8, 60, "magnitude");
  EXPECT_LE(p.bytes, 60);
  // 60 - codes 1 - fallback 16 = 43: 5 INT8 rows of 8 bytes; rows 5, 4, 3 (smallest keys) go.
  EXPECT_EQ(p.level[5], kRowPruned);
  EXPECT_EQ(p.level[4], kRowPruned);
  EXPECT_EQ(p.level[3], kRowPruned);
  EXPECT_EQ(p.level[2], kRowInt8);
  // Smallest: one INT2 row (1 byte of codes + 4 of scale), 1-bit codes (1), fallback (16).
  EXPECT_THAT(error_of([&] { make_row_recipe(t, 21); }), HasSubstr("smallest reachable size is 22 bytes"));
  EXPECT_LE(make_row_recipe(t, 22).bytes, 22);
  RowProfile bad = t;
  bad.sum_sq.pop_back();
  EXPECT_THAT(error_of([&] { make_row_recipe(bad, 60); }), HasSubstr("embedding table 'item': per-row statistics"));
  bad = t;
  bad.lookups[2] = -1;
  EXPECT_THAT(error_of([&] { make_row_recipe(bad, 60); }), HasSubstr("row 2 has a negative"));
}

TEST(CompressRows, MergedRowsCostTheirCodesAndIndicesOnly) {
  // 4 rows x 4: one FP32 row, two merged into it, one pruned. Three levels: 2-bit codes for 4
  // rows (1 byte), two indices of ceil(log2 4) = 2 bits (1 byte), the FP32 fallback row (16).
  EXPECT_EQ(row_bytes(4, {kRowFp32, kRowMerged, kRowMerged, kRowPruned}), 16 + 1 + 1 + 16);
  // 5 rows need 3-bit indices; two levels, 1-bit codes; no pruned row, no fallback.
  EXPECT_EQ(row_bytes(4, {kRowInt4, kRowMerged, kRowInt4, kRowInt4, kRowInt4}), 4 * 6 + 1 + 1);
  EXPECT_EQ(row_bytes(4, {kRowFp32, kRowInt4, kRowPruned}), 16 + 6 + 1 + 16);
}

}  // namespace
}  // namespace gradscope::compress

namespace gradscope::compress {
namespace {

TEST(CompressRows, TheLadderSkipsStepsThatSaveNothing) {
  const RowProfile t = table();  // dim 4: FP16 and INT8 both take 8 bytes a row
  EXPECT_EQ(uniform_row_recipe(t, kRowInt3).bytes, 8 * 6);  // 12 bits -> 2 bytes + 4 of scale
  EXPECT_EQ(uniform_row_recipe(t, kRowInt2).bytes, 8 * 5);  // 8 bits -> 1 byte + 4
  EXPECT_EQ(uniform_row_recipe(t, kRowInt2).method, "uniform-int2");
  for (int64_t budget : {100, 70, 60, 50, 40, 30}) {
    SCOPED_TRACE(budget);
    const RowRecipe r = make_row_recipe(t, budget);
    EXPECT_LE(r.bytes, budget);
    EXPECT_EQ(r.bytes, row_bytes(4, r.level));
    for (uint8_t l : r.level) {
      EXPECT_NE(l, kRowInt8);  // FP16 -> INT8 saves nothing at dim 4: skipped
      EXPECT_NE(l, kRowInt3);  // nor INT4 -> INT3 (6 bytes each)
    }
  }
  // Four rows, one looked up far more: at 27 bytes (FP16 8 + three INT4 rows of 6 + 1 byte of
  // codes) it keeps FP16. Taking the step that saves nothing would move it to INT8, the same
  // bytes with more error, and on down.
  RowProfile four;
  four.table = "four";
  four.rows = 4;
  four.dim = 4;
  four.lookups = {1000, 0, 0, 0};
  four.exposed = {1, 1, 1, 1};
  four.max_abs = {1, 1, 1, 1};
  four.sum_sq = {2, 2, 2, 2};
  four.fallback_sq = {1, 1, 1, 1};
  four.fallback = {0, 0, 0, 0};
  const RowRecipe r = make_row_recipe(four, 27);
  EXPECT_EQ(r.level, (std::vector<uint8_t>{kRowFp16, kRowInt4, kRowInt4, kRowInt4}));
  EXPECT_EQ(r.bytes, 27);
}

}  // namespace
}  // namespace gradscope::compress
