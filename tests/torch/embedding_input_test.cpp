// EmbeddingTracker on bad input: a table replaced under the tracker (weight.set_data of
// another shape), a gradient of another shape, out-of-range indices on untracked steps. Each
// is a gradscope::Error naming the table, never a raw LibTorch error, and never a read past
// the tracker's per-row state or past a tensor (run under valgrind to see the last).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/embedding.h>
#include <torch/optim/sgd.h>

#include <ATen/Functions.h>

#include "../common/error_of.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/embedding.h"

namespace gradscope::torch {
namespace {

using ::torch::nn::Embedding;
using ::torch::nn::EmbeddingOptions;
using test::error_of;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kShrunk[] =
    "embedding 'item': weight shape changed from [50, 8] to [50, 4] since the tracker was "
    "attached; create a new tracker";

Embedding table(bool sparse = false) {
  at::manual_seed(3);
  return Embedding(EmbeddingOptions(50, 8).sparse(sparse));
}

// The over-read of the issue: the weight narrowed after backward, the update recorded with the
// old width (8 floats a row read from rows of 4).
TEST(EmbeddingTrackerInput, WeightNarrowedAfterBackwardIsAnError) {
  for (bool sparse : {false, true}) {
    SCOPED_TRACE(sparse ? "sparse" : "dense");
    Embedding emb = table(sparse);
    EmbeddingTracker tracker(emb, "item");
    tracker.forward(at::tensor({1, 2, 3}, at::kLong)).sum().backward();
    emb->weight.set_data(at::randn({50, 4}));
    EXPECT_EQ(error_of([&] { tracker.step([] {}); }), kShrunk);
    EXPECT_EQ(tracker.current_step(), 0);
    EXPECT_EQ(tracker.rows().updates(1), 0u);  // nothing folded from the new table
  }
}

TEST(EmbeddingTrackerInput, WeightNarrowedDuringTheUpdateIsAnError) {
  Embedding emb = table();
  EmbeddingTracker tracker(emb, "item");
  tracker.forward(at::tensor({4, 9}, at::kLong)).sum().backward();
  EXPECT_EQ(error_of([&] { tracker.step([&] { emb->weight.set_data(at::randn({50, 4})); }); }), kShrunk);
  EXPECT_EQ(tracker.rows().updates(4), 0u);
  EXPECT_EQ(tracker.rows().gradients(4), 1u);  // read before the table changed
}

TEST(EmbeddingTrackerInput, EveryEntryPointChecksTheShape) {
  Embedding emb = table();
  EmbeddingTracker tracker(emb, "item");
  tracker.observe(at::tensor({1}, at::kLong));
  tracker.step([] {});
  emb->weight.set_data(at::randn({50, 4}));
  EXPECT_EQ(error_of([&] { tracker.observe(at::tensor({1}, at::kLong)); }), kShrunk);
  EXPECT_EQ(error_of([&] { tracker.forward(at::tensor({1}, at::kLong)); }), kShrunk);
  EXPECT_EQ(error_of([&] { tracker.before_step(); }), kShrunk);
  EXPECT_EQ(error_of([&] { tracker.report(); }), kShrunk);
  EXPECT_EQ(error_of([&] { tracker.report(EmbeddingRuleOptions{}); }), kShrunk);
}

// Fewer rows: the indices the tracker accepted (and the rows the report samples) are past the
// new table.
TEST(EmbeddingTrackerInput, ShrunkenOrGrownTablesAreErrors) {
  Embedding emb = table();
  EmbeddingTracker tracker(emb, "item");
  tracker.observe(at::tensor({30, 40}, at::kLong));
  tracker.step([] {});
  emb->weight.set_data(at::randn({10, 8}));
  const std::string shrunk =
      "embedding 'item': weight shape changed from [50, 8] to [10, 8] since the tracker was "
      "attached; create a new tracker";
  EXPECT_EQ(error_of([&] { tracker.forward(at::tensor({30}, at::kLong)); }), shrunk);
  EXPECT_EQ(error_of([&] { tracker.report(); }), shrunk);
  emb->weight.set_data(at::randn({60, 8}));
  EXPECT_EQ(error_of([&] { tracker.observe(at::tensor({55}, at::kLong)); }),
            "embedding 'item': weight shape changed from [50, 8] to [60, 8] since the tracker was "
            "attached; create a new tracker");
  emb->weight.set_data(at::randn({50, 8}));  // the shape it was attached with: tracking goes on
  tracker.observe(at::tensor({30}, at::kLong));
  tracker.step([] {});
  EXPECT_EQ(tracker.rows().exposure(30), 2u);
}

TEST(EmbeddingTrackerInput, GradientOfAnotherShapeIsAnError) {
  Embedding emb = table();
  EmbeddingTracker tracker(emb, "item");
  tracker.observe(at::tensor({1, 2}, at::kLong));
  emb->weight.mutable_grad() = at::ones({50, 4});
  EXPECT_EQ(error_of([&] { tracker.before_step(); }),
            "embedding 'item': gradient shape [50, 4] differs from the weight's [50, 8]");
  EXPECT_EQ(tracker.rows().gradients(1), 0u);
  // A sparse gradient whose rows hold 4 values, not 8.
  Embedding sparse = table(true);
  EmbeddingTracker sparse_tracker(sparse, "item");
  sparse_tracker.observe(at::tensor({1}, at::kLong));
  sparse->weight.mutable_grad() =
      at::sparse_coo_tensor(at::ones({1, 1}, at::kLong), at::ones({1, 4}), {50, 4});
  EXPECT_EQ(error_of([&] { sparse_tracker.before_step(); }),
            "embedding 'item': gradient shape [50, 4] differs from the weight's [50, 8]");
}

// On untracked steps the tracker does not read the indices; LibTorch's lookup rejects them,
// and its error comes back as ours.
TEST(EmbeddingTrackerInput, ForwardErrorsNameTheTableOnUntrackedSteps) {
  Embedding emb = table();
  EmbeddingTrackerOptions o;
  o.track_every = 2;
  EmbeddingTracker tracker(emb, "item", o);
  tracker.observe(at::tensor({1}, at::kLong));
  tracker.step([] {});  // step 1 is not tracked
  EXPECT_EQ(error_of([&] { tracker.forward(at::tensor({70}, at::kLong)); }),
            "embedding 'item': index 70 out of range [0, 50)");
  EXPECT_EQ(error_of([&] { tracker.forward(at::ones({2})); }),
            "embedding 'item': indices must be integers, got Float");
  EXPECT_EQ(error_of([&] { tracker.forward(at::Tensor()); }), "embedding 'item': undefined indices");
  ::torch::nn::EmbeddingBag bag(::torch::nn::EmbeddingBagOptions(20, 4));
  EmbeddingTracker bags(bag, "bag");
  // Offsets past the input: LibTorch's message, named and without its backtrace.
  const std::string bad_offsets =
      error_of([&] { bags.forward(at::tensor({1, 2}, at::kLong), at::tensor({0, 5}, at::kLong)); });
  EXPECT_THAT(bad_offsets, StartsWith("embedding 'bag': forward: offsets"));
  EXPECT_THAT(bad_offsets, Not(HasSubstr("Exception raised from")));
}

}  // namespace
}  // namespace gradscope::torch
