// make validate-baseline: is the BPR model worth diagnosing? The most-popular baseline against
// BPR matrix factorisation tuned on a validation split, on MovieLens (data/movielens.csv).
//
// Protocol (docs/validation.md): leave-one-out, full ranking, HR@10 and NDCG@10 (ranking.h).
// Tuning never sees the test items: validation_split() holds out each user's latest training
// positive, every grid point trains on the rest (seeds 0 and 1) and is ranked on those items after
// each listed epoch (mean of 2 seeds); the grid point with the best validation NDCG@10 is then
// trained on the full training set with 5 seeds and ranked on the test items, as is the model
// before tuning (lr 5e-3, l2 1e-4, dim 32, 30 epochs). Paired t-tests against most popular:
// per user, the user's HR@10 and NDCG@10 averaged over the seeds. MfOptions' defaults are the
// tuned values found here (it says so when they differ).
// Usage: validate_baseline DATA_DIR [SEEDS=5]. Prints its tables; last line: JSON.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <string>
#include <vector>

#include "gradscope/core/embedding/math.h"
#include "interactions.h"
#include "matrix_factorization.h"
#include "ranking.h"

namespace {

using gradscope::scenarios::Interactions;
using gradscope::scenarios::MfOptions;
using gradscope::scenarios::Ranking;

struct GridPoint {
  double lr, l2;
  int64_t dim;
};
// lr x l2 x dim, Adam, batch 1024; each trained for kMaxEpochs with kGridSeeds seeds and
// ranked after kEpochs (the mean over the seeds: one seed's NDCG@10 on 666 users moves by
// about 0.003 from seed to seed, as much as most grid steps).
const double kLrs[] = {1e-3, 3e-3, 1e-2};
const double kL2s[] = {1e-3, 1e-2, 3e-2};
const int64_t kDims[] = {32, 64};
const int kEpochs[] = {20, 40, 60, 80};
constexpr int kMaxEpochs = 80, kGridSeeds = 2;

struct Best {
  GridPoint point{0, 0, 0};
  int epochs = 0;
  double hr = 0, ndcg = -1;
};

struct Summary {
  double mean = 0, sd = 0;
};
Summary summarize(const std::vector<double>& v) {
  Summary s;
  for (double x : v) s.mean += x / v.size();
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean) / (v.size() > 1 ? v.size() - 1 : 1);
  s.sd = std::sqrt(s.sd);
  return s;
}

// `seeds` seeds of one model on the test items.
struct TestRuns {
  Summary hr, ndcg;               // over the seeds
  std::vector<double> user_hr, user_ndcg;  // per test user, averaged over the seeds
  double seconds = 0;             // per run
};
TestRuns test_runs(const Interactions& d, MfOptions o, int seeds) {
  std::vector<double> hr, ndcg;
  TestRuns out;
  out.user_hr.assign(d.test_user.size(), 0.0);
  out.user_ndcg.assign(d.test_user.size(), 0.0);
  for (int s = 0; s < seeds; ++s) {
    o.seed = s;
    const auto r = gradscope::scenarios::train_matrix_factorization(d, o);
    hr.push_back(r.hr), ndcg.push_back(r.ndcg), out.seconds += r.seconds / seeds;
    for (std::size_t k = 0; k < d.test_user.size(); ++k)
      out.user_hr[k] += r.user_hr[k] / seeds, out.user_ndcg[k] += r.user_ndcg[k] / seeds;
  }
  out.hr = summarize(hr), out.ndcg = summarize(ndcg);
  return out;
}

// "t T, p P" of the paired test (model - most popular) per user.
std::string versus(const std::vector<double>& model, const std::vector<double>& popular) {
  const gradscope::TTest t = gradscope::paired_t_test(model, popular);
  char s[96];
  std::snprintf(s, sizeof s, "%+.4f, t %.2f, p %.4f", t.mean_diff, t.t, t.p);
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: validate_baseline DATA_DIR [SEEDS]\n");
    return 2;
  }
  const int seeds = argc > 2 ? std::atoi(argv[2]) : 5;
  const Interactions d = gradscope::scenarios::load_movielens(std::string(argv[1]) + "/movielens.csv");
  const Interactions v = gradscope::scenarios::validation_split(d);
  std::printf("movielens: %lld users, %lld items, %zu training pairs, %zu test users; validation split: %zu "
              "training pairs, %zu validation users\n",
              (long long)d.users, (long long)d.items, d.train.size(), d.test_user.size(), v.train.size(),
              v.test_user.size());
  const Ranking pop_val = gradscope::scenarios::rank_most_popular(v, 10);
  const Ranking pop_test = gradscope::scenarios::rank_most_popular(d, 10);
  std::printf("most popular: validation HR@10 %.4f NDCG@10 %.4f; test HR@10 %.4f NDCG@10 %.4f\n\n", pop_val.hr,
              pop_val.ndcg, pop_test.hr, pop_test.ndcg);

  std::printf("grid on the validation split (Adam, batch 1024): NDCG@10 (HR@10) after each epoch count, mean of seeds 0..%d\n", kGridSeeds - 1);
  std::printf("| lr | l2 | dim |");
  for (int e : kEpochs) std::printf(" %d epochs |", e);
  std::printf("\n|---|---|---|");
  for (int e : kEpochs) std::printf("---|"), (void)e;
  std::printf("\n");
  Best best;
  for (double lr : kLrs)
    for (double l2 : kL2s)
      for (int64_t dim : kDims) {
        MfOptions o;
        o.lr = lr, o.l2 = l2, o.dim = dim, o.epochs = kMaxEpochs;
        std::vector<double> hr(std::size(kEpochs)), ndcg(std::size(kEpochs));
        for (int seed = 0; seed < kGridSeeds; ++seed) {
          o.seed = seed;
          o.on_epoch = [&](int epoch, const at::Tensor& users, const at::Tensor& items) {
            for (std::size_t k = 0; k < std::size(kEpochs); ++k) {
              if (kEpochs[k] != epoch) continue;
              const Ranking r = gradscope::scenarios::rank_held_out(v, users, items, 10);
              hr[k] += r.hr / kGridSeeds, ndcg[k] += r.ndcg / kGridSeeds;
            }
          };
          gradscope::scenarios::train_matrix_factorization(v, o);
        }
        std::printf("| %g | %g | %lld |", lr, l2, (long long)dim);
        for (std::size_t k = 0; k < std::size(kEpochs); ++k) {
          std::printf(" %.4f (%.4f) |", ndcg[k], hr[k]);
          if (ndcg[k] > best.ndcg) best = {{lr, l2, dim}, kEpochs[k], hr[k], ndcg[k]};
        }
        std::printf("\n");
        std::fflush(stdout);
      }
  std::printf("\nbest on validation: lr %g, l2 %g, dim %lld, %d epochs: NDCG@10 %.4f, HR@10 %.4f\n\n", best.point.lr,
              best.point.l2, (long long)best.point.dim, best.epochs, best.ndcg, best.hr);

  MfOptions tuned, before;
  tuned.lr = best.point.lr, tuned.l2 = best.point.l2, tuned.dim = best.point.dim, tuned.epochs = best.epochs;
  before.lr = 5e-3, before.l2 = 1e-4, before.dim = 32, before.epochs = 30;
  const TestRuns t = test_runs(d, tuned, seeds), b = test_runs(d, before, seeds);
  std::printf("test items (%d seeds, mean ± sd over seeds; against most popular: per-user paired t-test, df %zu, of "
              "HR@10 and NDCG@10 averaged over the seeds):\n",
              seeds, d.test_user.size() - 1);
  std::printf("| model | HR@10 | NDCG@10 | HR@10 - most popular | NDCG@10 - most popular | s per run |\n"
              "|---|---|---|---|---|---|\n");
  std::printf("| most popular | %.4f | %.4f | | | |\n", pop_test.hr, pop_test.ndcg);
  auto row = [&](const char* name, const MfOptions& o, const TestRuns& r) {
    std::printf("| %s (lr %g, l2 %g, dim %lld, %d epochs) | %.4f ± %.4f | %.4f ± %.4f | %s | %s | %.1f |\n", name, o.lr,
                o.l2, (long long)o.dim, o.epochs, r.hr.mean, r.hr.sd, r.ndcg.mean, r.ndcg.sd,
                versus(r.user_hr, pop_test.user_hr).c_str(), versus(r.user_ndcg, pop_test.user_ndcg).c_str(), r.seconds);
  };
  row("BPR before tuning", before, b);
  row("BPR tuned", tuned, t);
  const MfOptions def;
  if (def.lr != tuned.lr || def.l2 != tuned.l2 || def.dim != tuned.dim || def.epochs != tuned.epochs)
    std::printf("note: MfOptions' defaults (lr %g, l2 %g, dim %lld, %d epochs) are not the tuned values\n", def.lr,
                def.l2, (long long)def.dim, def.epochs);
  const gradscope::TTest hr_t = gradscope::paired_t_test(t.user_hr, pop_test.user_hr);
  const gradscope::TTest nd_t = gradscope::paired_t_test(t.user_ndcg, pop_test.user_ndcg);
  std::printf("{\"validation\":\"baseline\",\"seeds\":%d,\"popular_hr10\":%.4f,\"popular_ndcg10\":%.4f,"
              "\"before_hr10\":%.4f,\"before_ndcg10\":%.4f,\"tuned_hr10\":%.4f,\"tuned_ndcg10\":%.4f,"
              "\"p_tuned_vs_popular_hr10\":%.4g,\"p_tuned_vs_popular_ndcg10\":%.4g,"
              "\"tuned_lr\":%g,\"tuned_l2\":%g,\"tuned_dim\":%lld,\"tuned_epochs\":%d}\n",
              seeds, pop_test.hr, pop_test.ndcg, b.hr.mean, b.ndcg.mean, t.hr.mean, t.ndcg.mean, hr_t.p, nd_t.p, tuned.lr,
              tuned.l2, (long long)tuned.dim, tuned.epochs);
  return 0;
}
