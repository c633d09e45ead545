#include "matrix_factorization.h"

#include <torch/nn/modules/embedding.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <ATen/ATen.h>

#include <chrono>
#include <memory>

#include "gradscope/core/error.h"
#include "gradscope/torch/embedding/tracker.h"
#include "ranking.h"

namespace gradscope::scenarios {
namespace {

namespace nn = ::torch::nn;

// The touched rows of a table this step, ascending and unique.
at::Tensor touched(const at::Tensor& ids) { return std::get<0>(at::_unique(ids, /*sorted=*/true)); }

// The planted oscillation (mf_faults.h): the batch's item rows whose id is a multiple of
// `every` get e <- (1 - factor) e.
void decay_planted_rows(const at::Tensor& weight, const at::Tensor& item_rows, const MfFaults& f) {
  at::NoGradGuard g;
  const at::Tensor rows = item_rows.masked_select(item_rows.remainder(f.oscillate_every) == 0);
  weight.index_copy_(0, rows, weight.index_select(0, rows) * (1.0 - f.oscillate_factor));
}

}  // namespace

MfRun train_matrix_factorization(const Interactions& d, const MfOptions& o) {
  if (d.train.empty() || d.test_user.empty())
    throw Error("interactions '" + d.name + "': " + std::to_string(d.train.size()) + " training pairs and " +
                std::to_string(d.test_user.size()) + " test users; matrix factorisation needs both");
  const auto start = std::chrono::steady_clock::now();
  BprSampler sampler(d, o.faults, o.batch, 1000 + o.seed);  // same samples for equal seeds
  at::manual_seed(o.seed);
  nn::Embedding users(nn::EmbeddingOptions(d.users, o.dim)), items(nn::EmbeddingOptions(d.items, o.dim));
  {
    at::NoGradGuard g;
    users->weight.normal_(0, 0.1);
    items->weight.normal_(0, 0.1);
  }
  MfRun run;
  torch::EmbeddingTrackerOptions opt;
  opt.auto_fix = o.auto_fix;
  opt.on_intervention = [&](const EmbeddingIntervention& iv) {
    ++run.interventions;
    run.rows_scaled += iv.rows_affected;
    if (o.on_intervention) o.on_intervention(iv);
  };
  opt.on_step = o.on_step;
  torch::EmbeddingHub hub;
  hub.track(users, "user", opt);
  hub.track(items, "item", opt);
  std::vector<at::Tensor> params = users->parameters();
  for (auto& p : items->parameters()) params.push_back(p);
  std::unique_ptr<::torch::optim::Optimizer> optimizer;
  if (o.sgd) optimizer = std::make_unique<::torch::optim::SGD>(params, ::torch::optim::SGDOptions(o.lr));
  else optimizer = std::make_unique<::torch::optim::Adam>(params, ::torch::optim::AdamOptions(o.lr));

  const int64_t total = sampler.batches() * o.epochs;
  for (int e = 0; e < o.epochs; ++e) {
    for (const BprBatch& batch : sampler.epoch()) {
      optimizer->zero_grad();
      const at::Tensor eu = hub["user"].forward(batch.users);
      // The sampled negatives are marked as such: NEGATIVE_SAMPLER_SKEW compares their
      // distribution with the declared (uniform) sampler.
      const at::Tensor ep = hub["item"].forward(batch.positives);
      const at::Tensor en = hub["item"].forward(batch.negatives, torch::Role::kNegative);
      const at::Tensor x = (eu * (ep - en)).sum(1);
      // BPR (Rendle et al. 2009): -log sigmoid(x_upi - x_upj) + L2 on the batch's rows.
      const at::Tensor items_l2 = (ep.pow(2).sum(1).mean() + en.pow(2).sum(1).mean()) / 2;
      const at::Tensor loss = -at::log_sigmoid(x).mean() + o.l2 * (eu.pow(2).sum(1).mean() + items_l2);
      loss.backward();
      MfStep seen;
      const bool observe = static_cast<bool>(o.on_update);
      at::Tensor item_rows;
      if (observe || o.faults.oscillate_factor > 0) item_rows = touched(at::cat({batch.positives, batch.negatives}));
      if (observe) {
        at::NoGradGuard g;
        seen.user_rows = touched(batch.users);
        seen.item_rows = item_rows;
        seen.user_before = users->weight.index_select(0, seen.user_rows);
        seen.item_before = items->weight.index_select(0, item_rows);
      }
      hub.step([&] {
        optimizer->step();
        if (o.faults.oscillate_factor > 0) decay_planted_rows(items->weight, item_rows, o.faults);
      });
      if (observe) {
        at::NoGradGuard g;
        seen.step = run.steps;
        seen.batch = batch;
        seen.user_after = users->weight.index_select(0, seen.user_rows);
        seen.item_after = items->weight.index_select(0, item_rows);
        o.on_update(seen);
      }
      ++run.steps;
      if (o.progress) o.progress(run.steps, total);
      if (run.steps == total) run.final_loss = loss.item<double>();
    }
    if (o.on_epoch) o.on_epoch(e + 1, users->weight, items->weight);
  }
  run.report = hub.report();
  for (const char* table : {"user", "item"}) {
    run.profiles.push_back(profile_embedding(table, hub[table].rows()));
    run.rows.push_back(hub[table].rows());
  }
  run.tables = {users->weight.detach().clone(), items->weight.detach().clone()};
  Ranking ranking = rank_held_out(d, users->weight, items->weight, o.top_k);
  run.hr = ranking.hr;
  run.ndcg = ranking.ndcg;
  run.user_hr = std::move(ranking.user_hr);
  run.user_ndcg = std::move(ranking.user_ndcg);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace gradscope::scenarios
