// EmbeddingTracker on bad input: a table replaced under the tracker (weight.set_data of
// another shape), a gradient of another shape, out-of-range indices on untracked steps. Each
// is a gradscope::Error naming the table, never a raw LibTorch error, and never a read past
// the tracker's per-row state or past a tensor (run under valgrind to see the last).
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <torch/nn/modules/embedding.h>
#include <torch/optim/sgd.h>

#include <ATen/Functions.h>

#include <cmath>

#include "../common/error_of.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/embedding/tracker.h"

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

// Tables off the CPU are not supported yet (docs/devices.md): refused by name, never copied
// to the host. The meta device stands in for a GPU (this LibTorch has no CUDA).
TEST(EmbeddingTrackerInput, TablesAndGradientsOffTheCpuAreAClearError) {
  Embedding meta(EmbeddingOptions(50, 8));
  meta->weight = at::zeros({50, 8}, at::TensorOptions().device(at::kMeta));  // what the tracker reads
  EXPECT_EQ(error_of([&] { EmbeddingTracker(meta, "item"); }),
            "embedding 'item': weight on device meta: the embedding tracker keeps its per-row state on the "
            "CPU and reads rows there; tables on other devices are not supported yet (docs/devices.md)");
  Embedding emb = table();
  EmbeddingTracker tracker(emb, "item");
  tracker.observe(at::tensor({1, 2}, at::kLong));
  emb->weight.mutable_grad() = at::zeros({50, 8}, at::TensorOptions().device(at::kMeta));
  EXPECT_EQ(error_of([&] { tracker.before_step(); }),
            "embedding 'item': gradient on device meta: the embedding tracker reads rows on the CPU only; "
            "tables on other devices are not supported yet (docs/devices.md)");
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

// Issue 11, bad input. Out-of-range indices: an Error naming the table and the index, from
// observe, forward and a bag, with nothing of the refused batch counted.
TEST(EmbeddingTrackerBadInput, IndicesOutOfRangeNameTheTableAndTheIndex) {
  Embedding emb = table();
  EmbeddingTracker tracker(emb, "item");
  EXPECT_EQ(error_of([&] { tracker.observe(at::tensor({3, -1}, at::kLong)); }),
            "embedding 'item': index -1 out of range [0, 50)");
  EXPECT_EQ(error_of([&] { tracker.forward(at::tensor({4, 50}, at::kInt)); }),
            "embedding 'item': index 50 out of range [0, 50)");
  tracker.step([] {});
  EXPECT_TRUE(tracker.touched_rows().empty());
  EXPECT_EQ(tracker.rows().lookups(3), 0u);
  EXPECT_EQ(tracker.rows().lookups(4), 0u);
  ::torch::nn::EmbeddingBag bag(::torch::nn::EmbeddingBagOptions(10, 4));
  EmbeddingTracker bags(bag, "bag");
  EXPECT_EQ(error_of([&] {
              bags.forward(at::tensor({1, 12}, at::kLong), at::tensor({0}, at::kLong));
            }),
            "embedding 'bag': index 12 out of range [0, 10)");
}

// Negatives on a table nothing else looks up: a declared popularity sampler has no
// popularity to follow, so the skew is not judged, and warnings() says why (before, the
// report only held a NaN); against a uniform sampler the same negatives are judged.
TEST(EmbeddingTrackerBadInput, NegativesOnATableWithoutPositivesAreNotJudgedAgainstPopularity) {
  Embedding emb = table(true);
  EmbeddingTrackerOptions o;
  o.negative_sampler.kind = NegativeSampler::Kind::kPopularity;
  EmbeddingTracker tracker(emb, "item", o);
  ::torch::optim::SGD opt(emb->parameters(), ::torch::optim::SGDOptions(0.1));
  at::manual_seed(5);
  for (int s = 0; s < 20; ++s) {  // 64 negatives a step, all from rows 0-4 of 50
    opt.zero_grad();
    tracker.forward(at::randint(0, 5, {64}, at::kLong), Role::kNegative).sum().backward();
    tracker.step(opt);
  }
  const EmbeddingReport rep = tracker.report();
  EXPECT_TRUE(std::isnan(rep.stats.sampler_tv));
  for (const auto& d : rep.diagnostics) EXPECT_NE(d.type, "NEGATIVE_SAMPLER_SKEW");
  EXPECT_THAT(tracker.warnings(),
              ::testing::Contains(
                  "embedding 'item': 1280 negatives marked and no other lookups: the popularity "
                  "sampler declared has no popularity to follow, so NEGATIVE_SAMPLER_SKEW is not "
                  "judged (against a uniform sampler it would be)"));
  // Uniform puts 1/50 on each row; all 1280 fell on 5 rows: TV = 1 - 5/50 = 0.9.
  const EmbeddingReport uniform = tracker.report(EmbeddingRuleOptions{});
  EXPECT_NEAR(uniform.stats.sampler_tv, 0.9, 1e-12);
  bool flagged = false;
  for (const auto& d : uniform.diagnostics) flagged = flagged || d.type == "NEGATIVE_SAMPLER_SKEW";
  EXPECT_TRUE(flagged);
}

// Rows 0-4 get gradients of alternating sign (true oscillation), from SGD at lr 0.05.
void step_flips(EmbeddingTracker& tracker, Embedding& emb, int steps) {
  ::torch::optim::SGD opt(emb->parameters(), ::torch::optim::SGDOptions(0.05));
  const int64_t dim = emb->weight.size(1);
  const at::Tensor u = at::ones({dim}) / std::sqrt(static_cast<double>(dim));
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    const double sign = (tracker.current_step() % 2) ? -1.0 : 1.0;
    (sign * (tracker.forward(at::arange(5, at::kLong)) * u).sum()).backward();
    tracker.step(opt);
  }
}

bool has_zombies(const EmbeddingReport& rep) {
  for (const auto& d : rep.diagnostics)
    if (d.type == "ZOMBIE_ROWS") return true;
  return false;
}

// A run shorter than the fewest updates the rule judges a row on (two short windows of
// zombie_window / 8 = 2 cosines: 5 updates): ZOMBIE_ROWS is absent although rows flip at every
// step; warnings() says it was not judged (before, only zombie_rows_judged = 0 did), and the
// verdict comes once the run is long enough.
TEST(EmbeddingTrackerBadInput, AZombieWindowLongerThanTheRunIsSaidNotJudged) {
  Embedding emb = table();
  EmbeddingTracker tracker(emb, "item");  // zombie_window 16: short windows of 2, 5 updates
  step_flips(tracker, emb, 4);
  EXPECT_EQ(tracker.report().stats.zombie_rows_judged, 0);
  EXPECT_FALSE(has_zombies(tracker.report()));
  EXPECT_THAT(tracker.warnings(),
              ::testing::ElementsAre("embedding 'item': ZOMBIE_ROWS needs 5 real updates of a row (two windows "
                                     "of 2 cosines, zombie_window 16 / 8) and 4 steps were tracked: no row can "
                                     "be judged, ZOMBIE_ROWS is not judged yet"));
  step_flips(tracker, emb, 36);
  const EmbeddingReport rep = tracker.report();
  EXPECT_EQ(rep.stats.zombie_rows_judged, 5);
  EXPECT_EQ(rep.stats.zombie_rows_judged_short, 0);  // 40 updates: the long windows
  EXPECT_EQ(rep.stats.zombie_rows, 5);
  EXPECT_TRUE(has_zombies(rep));
  EXPECT_TRUE(tracker.warnings().empty());
  EmbeddingTrackerOptions every4;
  every4.track_every = 4;  // 16 steps, 4 of them tracked
  Embedding other = table();
  EmbeddingTracker sparse_tracking(other, "other", every4);
  step_flips(sparse_tracking, other, 16);
  EXPECT_THAT(sparse_tracking.warnings(),
              ::testing::ElementsAre(HasSubstr("4 steps were tracked")));
}

// A table of dim 1: cosines between updates are +-1 and the chance level of a window's mean
// is 1 / sqrt(16), so the cosine threshold is -3 / 4; flipping rows are flagged, rows whose
// sign is a coin toss are not, and one possible rank is no collapse.
TEST(EmbeddingTrackerBadInput, ATableOfDimOneIsJudgedAgainstItsOwnChanceLevel) {
  at::manual_seed(9);
  Embedding emb(EmbeddingOptions(25, 1));
  EmbeddingTracker tracker(emb, "scalar");
  ::torch::optim::SGD opt(emb->parameters(), ::torch::optim::SGDOptions(0.05));
  for (int s = 0; s < 60; ++s) {
    opt.zero_grad();
    const at::Tensor e = tracker.forward(at::arange(25, at::kLong));
    const at::Tensor coin = at::randint(0, 2, {20, 1}).mul(2).sub(1);  // rows 5-24: noise
    const double sign = s % 2 ? -1.0 : 1.0;                             // rows 0-4: flips
    (sign * e.slice(0, 0, 5).sum() + (coin * e.slice(0, 5, 25)).sum()).backward();
    tracker.step(opt);
  }
  const EmbeddingReport rep = tracker.report();
  ASSERT_TRUE(has_zombies(rep));
  const EmbeddingDiagnostic& z = rep.diagnostics.front();
  EXPECT_EQ(z.example_rows, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  for (const auto& [name, value] : z.evidence) {
    if (name == "cosine_threshold") {
      EXPECT_DOUBLE_EQ(value, -0.75);
    }
  }
  EXPECT_EQ(rep.stats.zombie_rows_judged, 25);
  EXPECT_DOUBLE_EQ(rep.stats.effective_rank, 1.0);
  for (const auto& d : rep.diagnostics) EXPECT_NE(d.type, "REPRESENTATION_COLLAPSE");
}

// A callback that throws (a full disk in a run writer, an exception from Python) reaches the
// caller of step(). The update half of the step has happened by then: like the audit's step,
// the tracker finishes the step before handing its records on, so the next step neither counts
// this step's lookups again nor reuses its number.
TEST(EmbeddingTrackerInput, AnUpdateCallbackThatThrowsLeavesTheStepComplete) {
  Embedding emb = table();
  EmbeddingTrackerOptions o;
  bool fail = true;
  o.on_step = [&](const std::vector<Record>& records) {
    if (fail && records.at(0).site == Site::kUpdate) throw std::runtime_error("sink full");
  };
  EmbeddingTracker tracker(emb, "item", o);
  ::torch::optim::SGD opt(emb->parameters(), ::torch::optim::SGDOptions(0.1));
  tracker.forward(at::tensor({1, 2}, at::kLong)).sum().backward();
  EXPECT_THROW(tracker.step(opt), std::runtime_error);
  EXPECT_EQ(tracker.current_step(), 1);
  fail = false;
  opt.zero_grad();
  tracker.forward(at::tensor({3}, at::kLong)).sum().backward();
  tracker.step(opt);
  EXPECT_EQ(tracker.current_step(), 2);
  EXPECT_EQ(tracker.touched_rows(), (std::vector<int64_t>{3}));
  EXPECT_EQ(tracker.report().stats.lookups, 3);
}

}  // namespace
}  // namespace gradscope::torch
