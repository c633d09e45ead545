// make validate-embedding: does the embedding auto-fix help on real data?
// BPR matrix factorisation on MovieLens (data/movielens.csv from scripts/fetch-data.sh
// movielens): implicit feedback (rating >= 4), leave-one-out split (each user's latest
// positive is the test item), full ranking over all items minus the user's training items,
// HR@10 and NDCG@10. Each seed trains a baseline and an auto-fix run from identical initial
// weights and negative samples; a paired t-test compares per-user NDCG (averaged over seeds)
// and the per-seed means. Both runs track user and item tables every step (EmbeddingHub).
// Usage: validate_embedding DATA_DIR [SEEDS=5] [EPOCHS=30] [LR=0.005] [OPT=adam]. Last line: JSON.
#include <torch/nn/modules/embedding.h>
#include <torch/optim/adam.h>
#include <torch/optim/sgd.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "gradscope/core/embedding_math.h"
#include "gradscope/io/embedding_json.h"
#include "gradscope/torch/embedding.h"

namespace {

namespace nn = ::torch::nn;
constexpr int64_t kDim = 32, kBatch = 1024, kTopK = 10;

struct Data {
  int64_t users = 0, items = 0;
  std::vector<std::pair<int64_t, int64_t>> train;  // (user, item)
  std::vector<int64_t> test_user, test_item;
  std::vector<std::vector<int64_t>> seen;          // training items per user
};

Data load(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("validate: cannot read " + path + " (run scripts/fetch-data.sh movielens)");
  std::string line;
  std::getline(in, line);  // header
  struct Row { int64_t u, i; double t; };
  std::map<int64_t, int64_t> umap, imap;
  std::vector<Row> rows;
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string f[4];
    for (auto& x : f) std::getline(ss, x, ',');
    if (std::stod(f[2]) < 4.0) continue;
    const int64_t u = umap.emplace(std::stoll(f[0]), umap.size()).first->second;
    const int64_t i = imap.emplace(std::stoll(f[1]), imap.size()).first->second;
    rows.push_back({u, i, std::stod(f[3])});
  }
  Data d;
  d.users = static_cast<int64_t>(umap.size());
  d.items = static_cast<int64_t>(imap.size());
  std::vector<std::vector<Row>> by_user(d.users);
  for (const Row& r : rows) by_user[r.u].push_back(r);
  d.seen.resize(d.users);
  for (int64_t u = 0; u < d.users; ++u) {
    auto& v = by_user[u];
    std::stable_sort(v.begin(), v.end(), [](const Row& a, const Row& b) { return a.t < b.t; });
    const bool held_out = v.size() >= 2;
    for (std::size_t k = 0; k + (held_out ? 1 : 0) < v.size(); ++k) {
      d.train.emplace_back(u, v[k].i);
      d.seen[u].push_back(v[k].i);
    }
    if (held_out) d.test_user.push_back(u), d.test_item.push_back(v.back().i);
  }
  return d;
}

struct Result {
  double hr = 0, ndcg = 0;
  std::vector<double> user_ndcg;
  int64_t zombies_user = 0, zombies_item = 0, interventions = 0, rows_scaled = 0;
};

Result train(const Data& d, int seed, int epochs, double lr, bool use_sgd, bool auto_fix, const std::string& run_dir) {
  at::manual_seed(seed);
  nn::Embedding users(nn::EmbeddingOptions(d.users, kDim)), items(nn::EmbeddingOptions(d.items, kDim));
  {
    at::NoGradGuard g;
    users->weight.normal_(0, 0.1);
    items->weight.normal_(0, 0.1);
  }
  Result res;
  gradscope::AuditLog log(run_dir);
  gradscope::torch::EmbeddingTrackerOptions opt;
  opt.auto_fix = auto_fix;
  opt.on_intervention = [&](const gradscope::EmbeddingIntervention& iv) {
    ++res.interventions;
    res.rows_scaled += iv.rows_affected;
    log.append(iv);
  };
  gradscope::torch::EmbeddingHub hub;
  hub.track(users, "user", opt);
  hub.track(items, "item", opt);
  std::vector<at::Tensor> params = users->parameters();
  for (auto& p : items->parameters()) params.push_back(p);
  std::unique_ptr<::torch::optim::Optimizer> adam;
  if (use_sgd) adam = std::make_unique<::torch::optim::SGD>(params, ::torch::optim::SGDOptions(lr));
  else adam = std::make_unique<::torch::optim::Adam>(params, ::torch::optim::AdamOptions(lr));
  const auto n = static_cast<int64_t>(d.train.size());
  std::vector<int64_t> tu(n), ti(n);
  for (int64_t k = 0; k < n; ++k) tu[k] = d.train[k].first, ti[k] = d.train[k].second;
  const at::Tensor all_u = at::tensor(tu), all_i = at::tensor(ti);
  at::Generator gen = at::detail::createCPUGenerator(1000 + seed);  // same samples in both arms
  for (int e = 0; e < epochs; ++e) {
    const at::Tensor perm = at::randperm(n, gen, at::kLong);
    for (int64_t b = 0; b < n; b += kBatch) {
      const at::Tensor idx = perm.slice(0, b, std::min(n, b + kBatch));
      const at::Tensor u = all_u.index_select(0, idx), pos = all_i.index_select(0, idx);
      const at::Tensor neg = at::randint(0, d.items, {idx.size(0)}, gen, at::kLong);
      adam->zero_grad();
      const at::Tensor eu = hub["user"].forward(u);
      const at::Tensor ep = hub["item"].forward(at::cat({pos, neg}));
      const at::Tensor x = (eu * (ep.slice(0, 0, idx.size(0)) - ep.slice(0, idx.size(0)))).sum(1);
      // BPR (Rendle et al. 2009): -log sigmoid(x_upi - x_upj) + L2 on the batch's rows.
      const at::Tensor loss = -at::log_sigmoid(x).mean() + 1e-4 * (eu.pow(2).sum(1).mean() + ep.pow(2).sum(1).mean());
      loss.backward();
      hub.step(*adam);
    }
  }
  const gradscope::EmbeddingHubReport rep = hub.report();
  res.zombies_user = rep.tables[0].stats.zombie_rows;
  res.zombies_item = rep.tables[1].stats.zombie_rows;
  std::ofstream(run_dir + "/embedding_report.json") << gradscope::render_embedding_hub_json(rep);
  // Full ranking: rank = items scored above the test item, training items excluded.
  at::NoGradGuard g;
  const at::Tensor scores = at::matmul(users->weight, items->weight.t()).contiguous();
  const float* sp = scores.data_ptr<float>();
  for (std::size_t k = 0; k < d.test_user.size(); ++k) {
    const int64_t u = d.test_user[k];
    const float* row = sp + u * d.items;
    const float target = row[d.test_item[k]];
    int64_t rank = 0;
    for (int64_t i = 0; i < d.items; ++i) rank += row[i] > target;
    for (int64_t i : d.seen[u]) rank -= row[i] > target;
    const double nd = rank < kTopK ? 1.0 / std::log2(rank + 2.0) : 0.0;
    res.user_ndcg.push_back(nd);
    res.hr += rank < kTopK;
    res.ndcg += nd;
  }
  res.hr /= static_cast<double>(d.test_user.size());
  res.ndcg /= static_cast<double>(d.test_user.size());
  return res;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: validate_embedding DATA_DIR [SEEDS] [EPOCHS] [LR] [adam|sgd]\n");
    return 2;
  }
  const int seeds = argc > 2 ? std::atoi(argv[2]) : 5, epochs = argc > 3 ? std::atoi(argv[3]) : 30;
  const double lr = argc > 4 ? std::atof(argv[4]) : 5e-3;
  const bool use_sgd = argc > 5 && std::string(argv[5]) == "sgd";
  const Data d = load(std::string(argv[1]) + "/movielens.csv");
  std::printf("movielens: %lld users, %lld items with a rating >= 4, %zu training pairs, %zu test users\n",
              (long long)d.users, (long long)d.items, d.train.size(), d.test_user.size());
  std::printf("| seed | HR@10 base | HR@10 fix | NDCG@10 base | NDCG@10 fix | zombies base (user/item) | auto-fix acts (rows scaled) |\n|---|---|---|---|---|---|---|\n");
  std::vector<double> base_mean(d.test_user.size()), fix_mean(d.test_user.size());
  std::vector<double> seed_base, seed_fix, hr_base, hr_fix;
  for (int s = 0; s < seeds; ++s) {
    const std::string dir = "gradscope-runs/validate-embedding/seed" + std::to_string(s);
    const Result b = train(d, s, epochs, lr, use_sgd, false, dir + "-baseline");
    const Result f = train(d, s, epochs, lr, use_sgd, true, dir + "-autofix");
    std::printf("| %d | %.4f | %.4f | %.4f | %.4f | %lld/%lld | %lld (%lld) |\n", s, b.hr, f.hr, b.ndcg, f.ndcg,
                (long long)b.zombies_user, (long long)b.zombies_item, (long long)f.interventions,
                (long long)f.rows_scaled);
    std::fflush(stdout);
    for (std::size_t k = 0; k < base_mean.size(); ++k) {
      base_mean[k] += b.user_ndcg[k] / seeds;
      fix_mean[k] += f.user_ndcg[k] / seeds;
    }
    seed_base.push_back(b.ndcg), seed_fix.push_back(f.ndcg), hr_base.push_back(b.hr), hr_fix.push_back(f.hr);
  }
  auto mean = [](const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return s / v.size(); };
  const gradscope::TTest users_t = gradscope::paired_t_test(fix_mean, base_mean);
  std::printf("mean over seeds: HR@10 %.4f -> %.4f, NDCG@10 %.4f -> %.4f\n", mean(hr_base), mean(hr_fix),
              mean(seed_base), mean(seed_fix));
  std::printf("paired t-test, per-user NDCG@10 averaged over seeds (auto-fix - baseline): diff %.5f, t %.3f, df %.0f, p %.4f\n",
              users_t.mean_diff, users_t.t, users_t.df, users_t.p);
  double p_seeds = NAN, t_seeds = NAN;
  if (seeds >= 2) {
    const gradscope::TTest st = gradscope::paired_t_test(seed_fix, seed_base);
    p_seeds = st.p, t_seeds = st.t;
    std::printf("paired t-test over per-seed NDCG@10: t %.3f, df %.0f, p %.4f\n", st.t, st.df, st.p);
  }
  std::printf("{\"validation\":\"embedding\",\"seeds\":%d,\"hr10_base\":%.4f,\"hr10_fix\":%.4f,\"ndcg10_base\":%.4f,"
              "\"ndcg10_fix\":%.4f,\"t_users\":%.3f,\"p_users\":%.4f,\"t_seeds\":%.3f,\"p_seeds\":%.4f}\n",
              seeds, mean(hr_base), mean(hr_fix), mean(seed_base), mean(seed_fix), users_t.t, users_t.p, t_seeds, p_seeds);
  return 0;
}
