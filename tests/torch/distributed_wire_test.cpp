// RankMerge's buffer and per-slot merge, without processes (src/torch/distributed/wire.h).
#include "distributed/wire.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "../common/record_fields.h"

namespace gradscope::torch::internal {
namespace {

Stats stats_of(std::vector<float> v) {
  return compute(TensorView::contiguous(v.data(), DType::kFloat32, {static_cast<int64_t>(v.size())}));
}

bool same_bits(const Stats& a, const Stats& b) {
  int64_t x[kSlotWords], y[kSlotWords];
  pack(a, x), pack(b, y);
  return std::memcmp(x, y, sizeof x) == 0;
}

TEST(DistributedWire, PackKeepsEveryBit) {
  const float inf = std::numeric_limits<float>::infinity();
  for (const Stats& s : {Stats{}, stats_of({1.5f, -0.0f, NAN, inf, -inf, 1e-40f, 60.f}), stats_of({NAN})}) {
    int64_t w[kSlotWords];
    pack(s, w);
    EXPECT_EQ(w[0], 1);
    EXPECT_TRUE(same_bits(unpack(w), s));
    EXPECT_EQ(unpack(w).min, s.min);
    EXPECT_EQ(has_nonfinite(w), s.nan + s.pos_inf + s.neg_inf > 0);
  }
  int64_t absent[kSlotWords] = {0, 0, 5};  // not present: no NaN, whatever the words say
  EXPECT_FALSE(has_nonfinite(absent));
}

// A field of kStatsFields that the wire forgot fails here, by name.
TEST(DistributedWire, EveryStatsFieldCrossesAndMerges) {
  const Stats a = gradscope::test::distinct_fields<Stats>(kStatsFields);
  const Stats b = gradscope::test::distinct_fields<Stats>(kStatsFields, 5000);
  std::vector<int64_t> r0(kSlotWords), r1(kSlotWords);
  pack(a, r0.data()), pack(b, r1.data());
  gradscope::test::expect_fields_eq(unpack(r0.data()), a, kStatsFields);
  Stats out;
  ASSERT_TRUE(merge_slot({r0.data(), r1.data()}, 0, Site::kActivation, out));
  gradscope::test::expect_fields_eq(out, merge(a, b), kStatsFields);
}

TEST(DistributedWire, MergesRanksInOrderAndCountsEqualParameterSitesOnce) {
  const Stats a = stats_of({1, 2, -3}), b = stats_of({4, NAN});
  std::vector<int64_t> r0(2 * kSlotWords, 0), r1(2 * kSlotWords, 0);
  pack(a, r0.data()), pack(b, r1.data());                                  // slot 0 differs
  pack(a, r0.data() + kSlotWords), pack(a, r1.data() + kSlotWords);      // slot 1 the same
  const std::vector<const int64_t*> ranks = {r0.data(), r1.data()};
  Stats out;
  ASSERT_TRUE(merge_slot(ranks, 0, Site::kParamGrad, out));
  EXPECT_TRUE(same_bits(out, merge(a, b)));
  EXPECT_EQ(out.count, 5);
  EXPECT_EQ(out.nan, 1);
  ASSERT_TRUE(merge_slot(ranks, 1, Site::kParamGrad, out));
  EXPECT_TRUE(same_bits(out, a));  // an all-reduced gradient: once
  ASSERT_TRUE(merge_slot(ranks, 1, Site::kActivation, out));
  EXPECT_TRUE(same_bits(out, merge(a, a)));  // the same activations on two ranks: both count
  EXPECT_EQ(out.count, 6);
  std::fill(r1.begin() + kSlotWords, r1.end(), 0);  // slot 1 only on rank 0
  ASSERT_TRUE(merge_slot(ranks, 1, Site::kUpdate, out));
  EXPECT_TRUE(same_bits(out, a));
  std::fill(r0.begin() + kSlotWords, r0.end(), 0);
  EXPECT_FALSE(merge_slot(ranks, 1, Site::kUpdate, out));
}

// Shards (FSDP2): two ranks' shards of a dead layer's gradient are all zeros of one size, the
// same bits, yet two halves of the parameter: every site adds, none is taken once.
TEST(DistributedWire, ShardedParameterSitesAlwaysAdd) {
  const Stats zeros = stats_of({0, 0, 0});
  std::vector<int64_t> r0(kSlotWords), r1(kSlotWords);
  pack(zeros, r0.data()), pack(zeros, r1.data());
  const std::vector<const int64_t*> ranks = {r0.data(), r1.data()};
  for (Site site : {Site::kParamGrad, Site::kParam, Site::kUpdate, Site::kFrozenParam}) {
    Stats out;
    ASSERT_TRUE(merge_slot(ranks, 0, site, out, /*sharded=*/true));
    EXPECT_EQ(out.count, 6) << site_name(site);
    EXPECT_EQ(out.zero, 6) << site_name(site);
    ASSERT_TRUE(merge_slot(ranks, 0, site, out));  // replicated: the same tensor twice, once
    EXPECT_EQ(out.count, 3) << site_name(site);
  }
}

// Tensor parallelism: the ranks run the same samples. A replicated output (the same bits)
// counts once; slices of the features (different bits) add.
TEST(DistributedWire, RanksThatShareTheBatchCountReplicatedOutputsOnce) {
  const Stats a = stats_of({1, 2}), b = stats_of({3, -4});
  std::vector<int64_t> r0(2 * kSlotWords), r1(2 * kSlotWords);
  pack(a, r0.data()), pack(a, r1.data());                                // slot 0: replicated
  pack(a, r0.data() + kSlotWords), pack(b, r1.data() + kSlotWords);     // slot 1: two slices
  const std::vector<const int64_t*> ranks = {r0.data(), r1.data()};
  for (Site site : {Site::kActivation, Site::kOutputGrad, Site::kPreActivation}) {
    Stats out;
    ASSERT_TRUE(merge_slot(ranks, 0, site, out, false, /*share_batch=*/true));
    EXPECT_TRUE(same_bits(out, a)) << site_name(site);
    ASSERT_TRUE(merge_slot(ranks, 1, site, out, false, true));
    EXPECT_TRUE(same_bits(out, merge(a, b))) << site_name(site);
    ASSERT_TRUE(merge_slot(ranks, 0, site, out));  // split batches: each rank's samples count
    EXPECT_EQ(out.count, 4) << site_name(site);
  }
}

TEST(DistributedWire, NamesHowRanksDiffer) {
  const std::string zero = join_nodes({"enc", "dec"}, {"Float[4]", "Float[2]"});
  EXPECT_EQ(hash_nodes({"enc", "dec"}, {"Float[4]", "Float[2]"}), hash_nodes({"enc", "dec"}, {"Float[4]", "Float[2]"}));
  EXPECT_NE(hash_nodes({"ab"}, {"c"}), hash_nodes({"a"}, {"bc"}));
  EXPECT_EQ(describe_difference({zero, zero, join_nodes({"enc"}, {"Float[4]"})}),
            "rank 2 lacks 'dec' (Float[2]) of rank 0");
  EXPECT_EQ(describe_difference({zero, join_nodes({"enc", "dec", "head"}, {"Float[4]", "Float[2]", "Double[1]"})}),
            "rank 1 has 'head' (Double[1]) that rank 0 lacks");
  EXPECT_EQ(describe_difference({zero, join_nodes({"enc", "dec"}, {"Half[4]", "Float[2]"})}),
            "'enc' is Float[4] on rank 0 but Half[4] on rank 1");
  EXPECT_EQ(describe_difference({zero, join_nodes({"dec", "enc"}, {"Float[2]", "Float[4]"})}),
            "the same nodes in another order on rank 1");
}

}  // namespace
}  // namespace gradscope::torch::internal
