#include "matrix_factorization.h"

#include <torch/nn/modules/embedding.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>

#include "gradscope/core/error.h"
#include "gradscope/torch/embedding.h"

namespace gradscope::scenarios {
namespace {

namespace nn = ::torch::nn;

// Full ranking of each test user's held-out item among all items except the user's training
// items: HR@k and NDCG@k (1 / log2(rank + 2) inside the top k).
void evaluate(const Interactions& d, const at::Tensor& users, const at::Tensor& items, int64_t top_k,
              MfRun& run) {
  at::NoGradGuard g;
  const at::Tensor scores = at::matmul(users, items.t()).contiguous();
  const float* sp = scores.data_ptr<float>();
  for (std::size_t k = 0; k < d.test_user.size(); ++k) {
    const int64_t u = d.test_user[k];
    const float* row = sp + u * d.items;
    const float target = row[d.test_item[k]];
    int64_t rank = 0;
    for (int64_t i = 0; i < d.items; ++i) rank += row[i] > target;
    for (int64_t i : d.seen[u]) rank -= row[i] > target;
    const double nd = rank < top_k ? 1.0 / std::log2(rank + 2.0) : 0.0;
    run.user_ndcg.push_back(nd);
    run.hr += rank < top_k;
    run.ndcg += nd;
  }
  run.hr /= static_cast<double>(d.test_user.size());
  run.ndcg /= static_cast<double>(d.test_user.size());
}

}  // namespace

MfRun train_matrix_factorization(const Interactions& d, const MfOptions& o) {
  if (d.train.empty() || d.test_user.empty())
    throw Error("interactions '" + d.name + "': " + std::to_string(d.train.size()) + " training pairs and " +
                std::to_string(d.test_user.size()) + " test users; matrix factorisation needs both");
  const auto start = std::chrono::steady_clock::now();
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

  const auto n = static_cast<int64_t>(d.train.size());
  std::vector<int64_t> tu(n), ti(n);
  for (int64_t k = 0; k < n; ++k) tu[k] = d.train[k].first, ti[k] = d.train[k].second;
  const at::Tensor all_u = at::tensor(tu), all_i = at::tensor(ti);
  at::Generator gen = at::detail::createCPUGenerator(1000 + o.seed);  // same samples for equal seeds
  const int64_t per_epoch = (n + o.batch - 1) / o.batch, total = per_epoch * o.epochs;
  for (int e = 0; e < o.epochs; ++e) {
    const at::Tensor perm = at::randperm(n, gen, at::kLong);
    for (int64_t b = 0; b < n; b += o.batch) {
      const at::Tensor idx = perm.slice(0, b, std::min(n, b + o.batch));
      const at::Tensor u = all_u.index_select(0, idx), pos = all_i.index_select(0, idx);
      const at::Tensor neg = at::randint(0, d.items, {idx.size(0)}, gen, at::kLong);
      optimizer->zero_grad();
      const at::Tensor eu = hub["user"].forward(u);
      const at::Tensor ep = hub["item"].forward(at::cat({pos, neg}));
      const at::Tensor x = (eu * (ep.slice(0, 0, idx.size(0)) - ep.slice(0, idx.size(0)))).sum(1);
      // BPR (Rendle et al. 2009): -log sigmoid(x_upi - x_upj) + L2 on the batch's rows.
      const at::Tensor loss = -at::log_sigmoid(x).mean() + o.l2 * (eu.pow(2).sum(1).mean() + ep.pow(2).sum(1).mean());
      loss.backward();
      hub.step(*optimizer);
      ++run.steps;
      if (o.progress) o.progress(run.steps, total);
      if (b + o.batch >= n && e + 1 == o.epochs) run.final_loss = loss.item<double>();
    }
  }
  run.report = hub.report();
  for (const char* table : {"user", "item"}) run.profiles.push_back(profile_embedding(table, hub[table].rows()));
  evaluate(d, users->weight, items->weight, o.top_k, run);
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace gradscope::scenarios
