// The planted faults of the matrix-factorisation run (mf_faults.h) do what they claim, judged
// by the validation's own ground truth: the sampler's faults by its draws, the oscillation by
// the rows' consecutive-update cosines.
#include <gtest/gtest.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "../common/error_of.h"
#include "bpr_sampler.h"
#include "draw_counts.h"
#include "matrix_factorization.h"
#include "mf_truth.h"
#include "update_cosines.h"

namespace gradscope::scenarios {
namespace {

using test::error_of;

// 40 users, 16 items: user u likes items (3u + k) % 16 for k = 0..5, the last held out; item
// popularity differs because 3u mod 16 cycles unevenly over 40 users.
Interactions synthetic() {
  Interactions d;
  d.name = "synthetic";
  d.users = 40;
  d.items = 16;
  d.seen.resize(d.users);
  for (int64_t u = 0; u < d.users; ++u) {
    for (int64_t k = 0; k < 5; ++k) {
      d.train.emplace_back(u, (3 * u + k) % 16);
      d.seen[u].push_back((3 * u + k) % 16);
    }
    d.test_user.push_back(u);
    d.test_item.push_back((3 * u + 5) % 16);
  }
  return d;
}

std::set<int64_t> ids(const at::Tensor& t) {
  const at::Tensor c = t.contiguous();
  return std::set<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}

TEST(BprSampler, HealthyDrawsEveryPairOncePerEpochAndUniformNegatives) {
  const Interactions d = synthetic();
  BprSampler s(d, {}, 64, 3);
  EXPECT_EQ(s.batches(), 4);  // 200 pairs in batches of 64
  DrawCounts draws(d.users, d.items);
  int64_t pairs = 0;
  for (int e = 0; e < 20; ++e)
    for (const BprBatch& b : s.epoch()) {
      draws.add(b);
      pairs += b.users.size(0);
    }
  EXPECT_EQ(pairs, 20 * 200);
  EXPECT_TRUE(draws.never_drawn_items().empty());
  EXPECT_LT(draws.negative_tv_to_uniform(), 0.05);  // 4,000 uniform draws over 16 items
}

TEST(BprSampler, TopNegativesComeOnlyFromTheMostPopularItems) {
  const Interactions d = synthetic();
  MfFaults f;
  f.negatives_from_top = 2;
  BprSampler s(d, f, 64, 3);
  const std::vector<int64_t> order = items_by_popularity(d);
  const std::set<int64_t> top = {order[0], order[1]};
  std::set<int64_t> drawn;
  for (const BprBatch& b : s.epoch())
    for (int64_t i : ids(b.negatives)) drawn.insert(i);
  EXPECT_EQ(drawn, top);
}

TEST(BprSampler, UnsampledItemsAreNeverDrawn) {
  const Interactions d = synthetic();
  MfFaults f;
  f.unsampled_items = 4;  // ids 12..15
  BprSampler s(d, f, 64, 3);
  EXPECT_EQ(s.batches(), 3);  // 153 of the 200 pairs have an item below 12
  DrawCounts draws(d.users, d.items);
  for (int e = 0; e < 10; ++e)
    for (const BprBatch& b : s.epoch()) draws.add(b);
  EXPECT_EQ(draws.never_drawn_items(), (std::vector<int64_t>{12, 13, 14, 15}));
}

TEST(BprSampler, FaultsThatDoNotFitNameTheField) {
  const Interactions d = synthetic();
  MfFaults f;
  f.oscillate_factor = 2;
  EXPECT_EQ(error_of([&] { BprSampler(d, f, 64, 0); }),
            "fault oscillate_factor 2: must be in [0, 2) (past 2 the rows grow without bound)");
  f = {};
  f.oscillate_every = 0;
  EXPECT_EQ(error_of([&] { check_faults(f, 16); }), "fault oscillate_every 0: must be >= 1");
  f = {};
  f.negatives_from_top = 17;
  EXPECT_EQ(error_of([&] { check_faults(f, 16); }), "fault negatives_from_top 17: must be in [0, 16] (the items)");
  f = {};
  f.unsampled_items = 16;
  EXPECT_EQ(error_of([&] { check_faults(f, 16); }), "fault unsampled_items 16: must be in [0, 16) (the items)");
  EXPECT_EQ(error_of([&] { BprSampler(d, {}, 0, 0); }), "batch 0: must be >= 1");
}

// The planted oscillation flips the planted rows (ids 0, 4, 8, 12) update after update; the
// other rows, under Adam, keep moving the same way.
TEST(MfFaults, PlantedRowsReallyOscillate) {
  const Interactions d = synthetic();
  MfOptions o;
  o.epochs = 20;
  o.batch = 64;
  o.dim = 8;
  o.faults.oscillate_factor = 1.9;
  o.faults.oscillate_every = 4;
  UpdateCosines items(d.items, o.dim);
  int64_t steps = 0;
  o.on_update = [&](const MfStep& s) {
    EXPECT_EQ(s.step, steps++);
    EXPECT_EQ(ids(s.item_rows), [&] {
      std::set<int64_t> all = ids(s.batch.positives);
      for (int64_t i : ids(s.batch.negatives)) all.insert(i);
      return all;
    }());
    EXPECT_EQ(s.item_before.sizes(), s.item_after.sizes());
    items.add(s.item_rows, s.item_before, s.item_after);
  };
  const MfRun r = train_matrix_factorization(d, o);
  EXPECT_EQ(steps, r.steps);
  for (int64_t row = 0; row < d.items; ++row) {
    ASSERT_GE(items.cosines(row).size(), 50u) << row;
    if (row % 4 == 0) EXPECT_LT(items.mean_cosine(row), -0.5) << row;
    else EXPECT_GT(items.mean_cosine(row), 0.0) << row;
  }
}

// The evidence lines the demo prints under a finding set the tracker's rows beside this code's
// own count: the 4 item ids the sampler never draws are the 4 rows DEAD_ROWS flags.
TEST(MfTruth, EvidenceSetsTheFlaggedRowsBesideItsOwnCount) {
  const Interactions d = synthetic();
  MfOptions o;
  o.epochs = 3;
  o.batch = 64;
  o.dim = 4;
  o.faults.unsampled_items = 4;
  MfTruth truth(d, o.dim);
  o.on_update = [&](const MfStep& s) { truth.add(s); };
  const MfRun r = train_matrix_factorization(d, o);
  EXPECT_EQ(truth.dead(1), (std::set<int64_t>{12, 13, 14, 15}));
  EXPECT_TRUE(truth.dead(0).empty());
  const std::vector<std::string> lines = truth.evidence(r, 1);
  ASSERT_FALSE(lines.empty());
  EXPECT_NE(std::find(lines.begin(), lines.end(),
                      "DEAD_ROWS: 4 rows flagged, 4 of them dead by this code's count: 4 rows "
                      "never drawn by the sampler, 4 never drawn or never really updated"),
            lines.end())
      << lines.front();
  EXPECT_EQ(lines.back().rfind("measured by the run's own code: ", 0), 0u) << lines.back();
}

}  // namespace
}  // namespace gradscope::scenarios
