// EmbeddingTracker on real LibTorch tables: planted zombies and dead rows, Zipf exposure,
// sparse = dense, auto-fix touches only the rows it logs, a healthy MF run, bad input.
#include "gradscope/torch/embedding/tracker.h"

#include <gtest/gtest.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>
#include <torch/optim/adam.h>

#include <ATen/Functions.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "gradscope/core/error.h"
#include "gradscope/io/embedding/json.h"
#include "gradscope/io/store/run_documents.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_writer.h"

namespace gradscope::torch {
namespace {

using ::torch::nn::Embedding;
using ::torch::nn::EmbeddingOptions;  // LibTorch's; ours is EmbeddingTrackerOptions

constexpr int64_t kRows = 100, kDim = 8, kZombies = 10, kSampled = 80;

// Rows [0, kZombies) get gradients of alternating sign, rows [kZombies, kSampled) pull towards
// a fixed target (steady learning), rows [kSampled, kRows) are never sampled.
at::Tensor planted_loss(const at::Tensor& e, int64_t step) {
  const at::Tensor u = at::ones({kDim}) / std::sqrt(double(kDim));
  const double sign = step % 2 ? -1.0 : 1.0;
  const at::Tensor z = e.slice(0, 0, kZombies);
  const at::Tensor h = e.slice(0, kZombies, kSampled);
  return sign * (z * u).sum() + 0.5 * (h - 1.0).pow(2).sum();
}

void run_planted(EmbeddingTracker& tracker, Embedding& emb, int steps) {
  ::torch::optim::SGD opt(emb->parameters(), ::torch::optim::SGDOptions(0.05));
  const at::Tensor idx = at::arange(kSampled, at::kLong);
  for (int s = 0; s < steps; ++s) {
    opt.zero_grad();
    planted_loss(tracker.forward(idx), s).backward();
    tracker.step(opt);
  }
}

Embedding make_table(bool sparse, int64_t rows = kRows, int64_t dim = kDim) {
  at::manual_seed(7);
  return Embedding(EmbeddingOptions(rows, dim).sparse(sparse));
}

TEST(EmbeddingTracker, FindsPlantedZombiesAndDeadRows) {
  Embedding emb = make_table(false);
  EmbeddingTracker tracker(emb, "items");
  run_planted(tracker, emb, 40);
  const EmbeddingReport rep = tracker.report();
  EXPECT_EQ(rep.stats.zombie_rows, kZombies);
  EXPECT_EQ(rep.stats.never_exposed_rows, kRows - kSampled);
  EXPECT_EQ(rep.stats.never_updated_rows, 0);
  EXPECT_EQ(rep.stats.tracked_steps, 40);
  ASSERT_GE(rep.diagnostics.size(), 2u);
  EXPECT_EQ(rep.diagnostics[0].type, "ZOMBIE_ROWS");
  std::vector<int64_t> expect(kZombies);
  for (int64_t i = 0; i < kZombies; ++i) expect[i] = i;
  EXPECT_EQ(rep.diagnostics[0].example_rows, expect);
  EXPECT_EQ(rep.diagnostics[1].type, "DEAD_ROWS");
  EXPECT_EQ(rep.diagnostics[1].example_rows.front(), kSampled);
  // Exact alternation: cosine -1 every step after the first, o = -(1 - 0.8^39).
  EXPECT_NEAR(tracker.rows().oscillation(0), -(1 - std::pow(0.8, 39)), 1e-3);
  EXPECT_EQ(tracker.touched_rows().size(), size_t(kSampled));
  EXPECT_GT(rep.stats.effective_rank, 1.0);
}

TEST(EmbeddingTracker, ZipfExposureHasTheAnalyticGini) {
  // Row k (1-based) is in the batch at steps divisible by k: exposure 840 / k exactly.
  const int n = 8, steps = 840;
  Embedding emb = make_table(true, n, 4);
  EmbeddingTracker tracker(emb, "zipf");
  ::torch::optim::SGD opt(emb->parameters(), ::torch::optim::SGDOptions(0.01));
  for (int s = 0; s < steps; ++s) {
    std::vector<int64_t> ids;
    for (int k = 1; k <= n; ++k)
      if (s % k == 0) ids.push_back(k - 1);
    opt.zero_grad();
    tracker.forward(at::tensor(ids)).sum().backward();
    tracker.step(opt);
  }
  double h = 0;
  for (int k = 1; k <= n; ++k) h += 1.0 / k;
  for (int k = 1; k <= n; ++k) EXPECT_EQ(tracker.rows().exposure(k - 1), uint32_t(steps / k));
  EXPECT_NEAR(tracker.report().stats.popularity_gini, (n + 1.0) / n - 2.0 / h, 1e-12);
}

TEST(EmbeddingTracker, SparseAndDenseGradientsGiveTheSameState) {
  Embedding dense = make_table(false, 50, 16), sparse = make_table(true, 50, 16);
  ASSERT_TRUE(at::equal(dense->weight, sparse->weight));
  EmbeddingTracker td(dense, "dense"), ts(sparse, "sparse");
  ::torch::optim::SGD od(dense->parameters(), 0.1), os(sparse->parameters(), 0.1);
  at::manual_seed(3);
  for (int s = 0; s < 30; ++s) {
    const at::Tensor idx = at::randint(0, 40, {64}, at::kLong);  // duplicates on purpose
    const at::Tensor target = at::randn({64, 16});
    od.zero_grad();
    os.zero_grad();
    (td.forward(idx) - target).pow(2).sum().backward();
    (ts.forward(idx) - target).pow(2).sum().backward();
    td.step(od);
    ts.step(os);
  }
  EXPECT_TRUE(at::allclose(dense->weight, sparse->weight, 1e-5, 1e-6));
  for (int64_t r = 0; r < 50; ++r) {
    EXPECT_EQ(td.rows().exposure(r), ts.rows().exposure(r)) << r;
    EXPECT_EQ(td.rows().updates(r), ts.rows().updates(r)) << r;
    EXPECT_NEAR(td.rows().velocity(r), ts.rows().velocity(r), 1e-5) << r;
    EXPECT_NEAR(td.rows().oscillation(r), ts.rows().oscillation(r), 1e-4) << r;
    const double a = td.rows().snr(r), b = ts.rows().snr(r);
    if (std::isfinite(a)) {
      EXPECT_NEAR(a, b, 1e-4 * (1 + std::fabs(a))) << r;
    }
  }
  for (size_t i = 0; i < td.gradient_norms().size(); ++i)
    EXPECT_NEAR(td.gradient_norms()[i].second, ts.gradient_norms()[i].second, 1e-3);
}

TEST(EmbeddingTracker, AutoFixChangesOnlyTheRowsItLogs) {
  for (bool sparse : {false, true}) {
    Embedding base = make_table(sparse), fixed = make_table(sparse);
    EmbeddingTracker tb(base, "items");
    const std::string dir = ::testing::TempDir() + "gs_emb_audit_" + std::to_string(sparse);
    std::filesystem::remove_all(dir);
    AuditLog log(dir);
    std::set<int64_t> logged;
    int64_t acts = 0;
    EmbeddingTrackerOptions opt;
    opt.auto_fix = true;
    opt.on_intervention = [&](const EmbeddingIntervention& iv) {
      EXPECT_EQ(iv.type, "ZOMBIE_GRADIENT_SCALE");
      EXPECT_GE(iv.scale_min, 0.1);
      EXPECT_LE(iv.scale_max, 1.0);
      EXPECT_LE(iv.rows_affected, 16);
      logged.insert(iv.sample_rows.begin(), iv.sample_rows.end());
      ++acts;
      log.append(iv);
    };
    EmbeddingTracker tf(fixed, "items", opt);
    run_planted(tb, base, 40);
    run_planted(tf, fixed, 40);
    ASSERT_GT(acts, 0);
    std::set<int64_t> changed;
    for (int64_t r = 0; r < kRows; ++r)
      if (!at::equal(base->weight[r], fixed->weight[r])) changed.insert(r);
    EXPECT_EQ(changed, logged);
    for (int64_t r : logged) EXPECT_LT(r, kZombies);
    std::ifstream in(dir + "/audit.jsonl");
    std::string line;
    int64_t lines = 0;
    while (std::getline(in, line)) {
      const auto j = nlohmann::json::parse(line);
      EXPECT_EQ(j.at("layer"), "items");
      EXPECT_TRUE(j.contains("time") && j.contains("scale") && j.contains("sample_rows"));
      ++lines;
    }
    EXPECT_EQ(lines, acts);
  }
}

// With a run in the folder the log goes into its run.db (one file is the whole run), in the
// order the acts came, while the run's writer is open.
TEST(EmbeddingTracker, TheAutoFixLogGoesIntoTheRunsDatabase) {
  const std::string dir = ::testing::TempDir() + "gs_emb_audit_run";
  std::filesystem::remove_all(dir);
  RunWriter run(dir);
  AuditLog log(dir);
  EXPECT_EQ(log.path(), dir + "/run.db");
  std::vector<std::string> want;
  EmbeddingTrackerOptions opt;
  opt.auto_fix = true;
  opt.on_intervention = [&](const EmbeddingIntervention& iv) {
    log.append(iv);
    want.push_back(intervention_json(iv));
  };
  opt.on_step = [&](const std::vector<Record>& records) {
    for (const Record& r : records) run.add(r);
  };
  Embedding table = make_table(false);
  EmbeddingTracker tracker(table, "items", opt);
  run_planted(tracker, table, 40);
  run.close();
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(read_run_log(dir), want);
  EXPECT_FALSE(std::filesystem::exists(dir + "/audit.jsonl"));
  std::filesystem::remove_all(dir);
}

TEST(EmbeddingTracker, HealthyMatrixFactorisationHasNoZombies) {
  // Two towers on a rank-4 rating matrix: 60 users x 80 items, Adam, full batches of 512.
  at::manual_seed(11);
  const at::Tensor U = at::randn({60, 4}), V = at::randn({80, 4});
  Embedding users(EmbeddingOptions(60, 8)), items(EmbeddingOptions(80, 8));
  EmbeddingHub hub;
  hub.track(users, "user_tower");
  hub.track(items, "item_tower");
  std::vector<at::Tensor> params = users->parameters();
  for (auto& p : items->parameters()) params.push_back(p);
  ::torch::optim::Adam opt(params, ::torch::optim::AdamOptions(0.02));
  double first = 0, last = 0;
  for (int s = 0; s < 300; ++s) {
    const at::Tensor u = at::randint(0, 60, {512}, at::kLong), i = at::randint(0, 80, {512}, at::kLong);
    const at::Tensor r = (U.index_select(0, u) * V.index_select(0, i)).sum(1);
    opt.zero_grad();
    const at::Tensor pred = (hub["user_tower"].forward(u) * hub["item_tower"].forward(i)).sum(1);
    const at::Tensor loss = (pred - r).pow(2).mean();
    loss.backward();
    hub.step(opt);
    (s == 0 ? first : last) = loss.item<double>();
  }
  EXPECT_LT(last, 0.1 * first);  // it learned
  const EmbeddingHubReport rep = hub.report();
  ASSERT_EQ(rep.tables.size(), 2u);
  for (const auto& t : rep.tables) {
    EXPECT_EQ(t.stats.zombie_rows, 0) << t.layer;
    for (const auto& d : t.diagnostics) EXPECT_NE(d.type, "ZOMBIE_ROWS");
  }
  ASSERT_EQ(rep.correlations.size(), 1u);
  EXPECT_EQ(rep.correlations[0].steps, 300);
  EXPECT_GT(rep.correlations[0].pearson, 0.5);  // both towers' gradients shrink together
  const auto j = nlohmann::json::parse(render_embedding_hub_json(rep));
  EXPECT_EQ(j["gradscope_embedding_hub"]["tables"][1]["layer"], "item_tower");
}

TEST(EmbeddingHub, JudgesEachTableWithItsOwnOptions) {
  // The default (windowed) rule judges a row on two windows of 16 real updates, too many for
  // 20 steps, or else on two short windows of 2; GradTracer's rule judges every exposed row. The
  // window size is per-row state, so the users' windows of 2 are judged under any rules.
  at::manual_seed(2);
  Embedding users(EmbeddingOptions(30, 4)), items(EmbeddingOptions(40, 4));
  EmbeddingTrackerOptions user_options, item_options;
  user_options.thresholds.zombie_window = 2;
  item_options.zombie_rule = ZombieRule::kGradTracer;
  EmbeddingHub hub;
  hub.track(users, "user", user_options);
  hub.track(items, "item", item_options);
  ::torch::optim::SGD opt(std::vector<at::Tensor>{users->weight, items->weight}, 0.5);
  for (int s = 0; s < 20; ++s) {  // windows count real updates: the rows have to move
    const at::Tensor u = at::randint(0, 30, {16}, at::kLong), i = at::randint(0, 40, {16}, at::kLong);
    opt.zero_grad();
    ((hub["user"].forward(u) * hub["item"].forward(i)).sum(1) - 1).pow(2).mean().backward();
    hub.step(opt);
  }
  const EmbeddingHubReport own = hub.report();
  EXPECT_EQ(render_embedding_json(own.tables[0]), render_embedding_json(hub["user"].report()));
  EXPECT_EQ(render_embedding_json(own.tables[1]), render_embedding_json(hub["item"].report()));
  EXPECT_GT(own.tables[0].stats.zombie_rows_judged, 0);
  EXPECT_EQ(own.tables[1].stats.zombie_rows_judged, own.tables[1].stats.exposed_rows);
  const EmbeddingHubReport defaults = hub.report(EmbeddingRuleOptions{});  // explicit rules win
  EXPECT_EQ(defaults.tables[0].stats.zombie_rows_judged, own.tables[0].stats.zombie_rows_judged);
  EXPECT_GT(defaults.tables[1].stats.zombie_rows_judged, 0);
  EXPECT_EQ(defaults.tables[1].stats.zombie_rows_judged_short, defaults.tables[1].stats.zombie_rows_judged);
  ASSERT_EQ(own.correlations.size(), 1u);
  EXPECT_EQ(own.correlations[0].steps, 20);
}

TEST(EmbeddingTracker, AgentJsonHasTheIssueShape) {
  Embedding emb = make_table(false);
  EmbeddingTracker tracker(emb, "item_emb");
  run_planted(tracker, emb, 12);
  const auto j = nlohmann::json::parse(render_embedding_json(tracker.report()));
  const auto& r = j.at("gradscope_embedding_report");
  EXPECT_EQ(r.at("layer"), "item_emb");
  EXPECT_EQ(r.at("embedding_stats").at("num_embeddings"), kRows);
  EXPECT_DOUBLE_EQ(r.at("embedding_stats").at("active_coverage_pct").get<double>(), 80.0);
  for (const auto& d : r.at("diagnostics"))
    for (const char* k : {"type", "premise", "implies", "action", "expected_effect", "confidence", "evidence"})
      EXPECT_TRUE(d.contains(k)) << k;
}

TEST(EmbeddingTracker, EmbeddingBagCountsItsInputs) {
  at::manual_seed(1);
  ::torch::nn::EmbeddingBag bag(::torch::nn::EmbeddingBagOptions(20, 4));
  EmbeddingTracker tracker(bag, "bag");
  ::torch::optim::SGD opt(bag->parameters(), 0.1);
  opt.zero_grad();
  tracker.forward(at::tensor({1, 2, 2, 7}, at::kLong), at::tensor({0, 2}, at::kLong)).sum().backward();
  tracker.step(opt);
  EXPECT_EQ(tracker.touched_rows(), (std::vector<int64_t>{1, 2, 7}));
  EXPECT_EQ(tracker.rows().exposure(2), 1u);
  EXPECT_EQ(tracker.rows().updates(7), 1u);
  EXPECT_EQ(tracker.rows().exposure(3), 0u);
}

TEST(EmbeddingTracker, BadInput) {
  Embedding emb = make_table(false, 10, 4);
  EmbeddingTracker tracker(emb, "items");
  try {
    tracker.observe(at::tensor({3, 10}, at::kLong));
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "embedding 'items': index 10 out of range [0, 10)");
  }
  EXPECT_THROW(tracker.observe(at::tensor({-1}, at::kLong)), Error);
  EXPECT_THROW(tracker.observe(at::ones({2})), Error);  // float indices
  ::torch::nn::Linear lin(3, 3);
  try {
    EmbeddingTracker bad(lin, "fc");
    FAIL() << "no throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("embedding 'fc': module"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("is not an embedding"), std::string::npos) << e.what();
  }
  // Empty batch: a step with nothing touched.
  tracker.observe(at::empty({0}, at::kLong));
  tracker.step([] {});
  EXPECT_TRUE(tracker.touched_rows().empty());
  EXPECT_EQ(tracker.current_step(), 1);
  // Undefined gradient: exposure counts, gradient statistics are skipped with a warning.
  tracker.observe(at::tensor({4}, at::kLong));
  tracker.step([&] { at::NoGradGuard g; emb->weight[4].add_(1.0); });
  EXPECT_EQ(tracker.rows().exposure(4), 1u);
  EXPECT_EQ(tracker.rows().gradients(4), 0u);
  EXPECT_EQ(tracker.rows().updates(4), 1u);
  EXPECT_NEAR(tracker.rows().velocity(4), 0.1 * 2.0, 1e-6);  // ||delta|| = sqrt(4)
  EXPECT_TRUE(std::isnan(tracker.gradient_norms().back().second));
  // One warning for the undefined gradient; the other says 2 steps cannot judge zombies.
  ASSERT_EQ(tracker.warnings().size(), 2u);
  EXPECT_NE(tracker.warnings()[0].find("gradient undefined"), std::string::npos);
  EXPECT_NE(tracker.warnings()[1].find("2 steps were tracked"), std::string::npos);
  EXPECT_THROW(tracker.after_step(), Error);
}

TEST(EmbeddingTracker, HalfPrecisionTablesAreReadAsFloat) {
  Embedding emb = make_table(false, 10, 4);
  emb->weight.set_data(emb->weight.to(at::kHalf));
  EmbeddingTracker tracker(emb, "half");
  tracker.observe(at::tensor({2}, at::kLong));
  tracker.step([&] { at::NoGradGuard g; emb->weight[2].add_(0.5); });
  EXPECT_NEAR(tracker.rows().velocity(2), 0.1 * 1.0, 1e-3);  // ||(0.5, 0.5, 0.5, 0.5)|| = 1
  EXPECT_EQ(tracker.rows().updates(2), 1u);
}

}  // namespace
}  // namespace gradscope::torch

namespace gradscope::torch {
namespace {

TEST(EmbeddingTracker, RecordsReachARunAndReadBack) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("gradscope-emb-run-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::vector<Record> handed;
  {
    RunWriter run(dir.string());
    EmbeddingTrackerOptions o;
    o.on_step = [&](const std::vector<Record>& records) {
      for (const Record& r : records) {
        handed.push_back(r);
        run.add(r);
      }
    };
    Embedding emb = make_table(true);
    EmbeddingTracker tracker(emb, "items", o);
    run_planted(tracker, emb, 6);
    run.close();
  }
  ASSERT_EQ(handed.size(), 12u);  // per step: touched rows' gradient and their real update
  std::vector<Record> read;
  RunReader reader(dir.string());
  EXPECT_EQ(reader.for_each([&](const Record& r) { read.push_back(r); }), 6);
  ASSERT_EQ(read.size(), handed.size());
  for (std::size_t i = 0; i < read.size(); ++i) {
    EXPECT_EQ(read[i].step, handed[i].step);
    EXPECT_EQ(read[i].node, "items");
    EXPECT_EQ(read[i].site, handed[i].site);
    EXPECT_EQ(read[i].stats.count, handed[i].stats.count);
    EXPECT_EQ(read[i].stats.sum_sq, handed[i].stats.sum_sq);
  }
  EXPECT_EQ(read[0].site, Site::kEmbeddingRows);
  EXPECT_EQ(read[0].stats.count, kSampled * kDim);  // only the touched rows
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace gradscope::torch

namespace gradscope::torch {
namespace {

TEST(EmbeddingTrackerLookups, CountsEveryOccurrenceAndNegativesApartFromExposure) {
  at::manual_seed(3);
  Embedding emb(EmbeddingOptions(20, 4).padding_idx(0));
  EmbeddingTracker tracker(emb, "items");
  ::torch::optim::SGD opt(emb->parameters(), ::torch::optim::SGDOptions(0.1));
  const std::vector<std::vector<int64_t>> positives = {{1, 1, 1, 2, 0}, {2, 3, 3}, {1}};
  const std::vector<std::vector<int64_t>> negatives = {{5, 5, 1}, {}, {7, 7, 7, 7}};
  std::vector<uint32_t> lookups(20), negs(20), exposure(20);
  for (std::size_t s = 0; s < positives.size(); ++s) {
    opt.zero_grad();
    const at::Tensor p = at::tensor(positives[s], at::kLong);
    at::Tensor loss = tracker.forward(p).pow(2).sum();
    if (!negatives[s].empty())
      loss = loss + tracker.forward(at::tensor(negatives[s], at::kLong), Role::kNegative).pow(2).sum();
    loss.backward();
    tracker.step(opt);
    std::set<int64_t> seen;
    for (int64_t r : positives[s]) lookups[r] += r != 0, seen.insert(r);
    for (int64_t r : negatives[s]) lookups[r] += 1, negs[r] += 1, seen.insert(r);
    for (int64_t r : seen) exposure[r] += r != 0;
  }
  for (int64_t r = 0; r < 20; ++r) {
    SCOPED_TRACE(r);
    EXPECT_EQ(tracker.rows().lookups(r), lookups[r]);
    EXPECT_EQ(tracker.rows().negatives(r), negs[r]);
    EXPECT_EQ(tracker.rows().exposure(r), exposure[r]);
  }
  EXPECT_EQ(tracker.rows().lookups(1), 5u);  // three in one step, one as a negative, one more
  EXPECT_EQ(tracker.rows().exposure(1), 2u);  // steps 0 and 2
  EXPECT_EQ(tracker.rows().lookups(0), 0u);   // the padding row is not counted
  const EmbeddingReport rep = tracker.report();
  EXPECT_EQ(rep.stats.negative_lookups, 7);
  EXPECT_EQ(rep.stats.lookups, 5 + 2 + 2 + 2 + 4);  // rows 1, 2, 3, 5 and 7
}

// Batches of 1,500 indices (repeats, negatives, the padding row) into 70,000 rows: the
// touched rows and every count match a plain count, whatever way the tracker sorts them.
TEST(EmbeddingTrackerLookups, LargeBatchesOfLargeRowIdsCountExactly) {
  constexpr int64_t kTableRows = 70000;
  at::manual_seed(4);
  Embedding emb(EmbeddingOptions(kTableRows, 2).padding_idx(3).sparse(true));
  EmbeddingTracker tracker(emb, "items");
  ::torch::optim::SGD opt(emb->parameters(), ::torch::optim::SGDOptions(0.1));
  std::vector<uint32_t> lookups(kTableRows), negs(kTableRows), exposure(kTableRows);
  for (int s = 0; s < 4; ++s) {
    // Popular rows repeat, the rest spread over every byte of the row ids.
    at::Tensor pos = at::cat({at::randint(0, 40, {700}, at::kLong),
                              at::randint(0, kTableRows, {700}, at::kLong),
                              at::full({3}, 3, at::kLong),
                              at::full({2}, kTableRows - 1, at::kLong)});
    at::Tensor neg = at::randint(0, 300, {95}, at::kLong);
    opt.zero_grad();
    (tracker.forward(pos).sum() + tracker.forward(neg, Role::kNegative).sum()).backward();
    tracker.step(opt);
    std::set<int64_t> seen;
    for (int64_t i = 0; i < pos.numel(); ++i) seen.insert(pos[i].item<int64_t>());
    for (int64_t i = 0; i < neg.numel(); ++i) seen.insert(neg[i].item<int64_t>());
    seen.erase(3);
    for (int64_t i = 0; i < pos.numel(); ++i) lookups[pos[i].item<int64_t>()] += 1;
    for (int64_t i = 0; i < neg.numel(); ++i)
      lookups[neg[i].item<int64_t>()] += 1, negs[neg[i].item<int64_t>()] += 1;
    for (int64_t r : seen) exposure[r] += 1;
    EXPECT_EQ(tracker.touched_rows(), std::vector<int64_t>(seen.begin(), seen.end()));
  }
  lookups[3] = negs[3] = 0;  // the padding row is not counted
  for (int64_t r = 0; r < kTableRows; ++r) {
    ASSERT_EQ(tracker.rows().lookups(r), lookups[r]) << r;
    ASSERT_EQ(tracker.rows().negatives(r), negs[r]) << r;
    ASSERT_EQ(tracker.rows().exposure(r), exposure[r]) << r;
    ASSERT_EQ(tracker.rows().gradients(r), exposure[r]) << r;
  }
}

}  // namespace
}  // namespace gradscope::torch
