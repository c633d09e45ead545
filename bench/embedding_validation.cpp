// make validate-embedding: does the embedding auto-fix help on real data?
// BPR matrix factorisation on MovieLens (data/movielens.csv from scripts/fetch-data.sh
// movielens): implicit feedback (rating >= 4), leave-one-out split (each user's latest
// positive is the test item), full ranking over all items minus the user's training items,
// HR@10 and NDCG@10. Each seed trains a baseline and an auto-fix run from identical initial
// weights and negative samples; a paired t-test compares per-user NDCG (averaged over seeds)
// and the per-seed means. Both runs track user and item tables every step (EmbeddingHub).
// Usage: validate_embedding DATA_DIR [SEEDS=5] [EPOCHS=30] [LR=0.005] [OPT=adam]. Last line: JSON.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "gradscope/core/embedding_math.h"
#include "gradscope/io/embedding_json.h"
#include "interactions.h"
#include "matrix_factorization.h"

namespace {

using gradscope::scenarios::Interactions;
using gradscope::scenarios::MfRun;

// One arm of one seed; the auto-fix log and the embedding report go to `run_dir`.
MfRun train(const Interactions& d, int seed, int epochs, double lr, bool use_sgd, bool auto_fix,
            const std::string& run_dir) {
  gradscope::AuditLog log(run_dir);
  gradscope::scenarios::MfOptions opt;
  opt.seed = seed;
  opt.epochs = epochs;
  opt.lr = lr;
  opt.sgd = use_sgd;
  opt.auto_fix = auto_fix;
  opt.on_intervention = [&](const gradscope::EmbeddingIntervention& iv) { log.append(iv); };
  MfRun r = gradscope::scenarios::train_matrix_factorization(d, opt);
  std::ofstream(run_dir + "/embedding_report.json") << gradscope::render_embedding_hub_json(r.report);
  return r;
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
  const Interactions d = gradscope::scenarios::load_movielens(std::string(argv[1]) + "/movielens.csv");
  std::printf("movielens: %lld users, %lld items with a rating >= 4, %zu training pairs, %zu test users\n",
              (long long)d.users, (long long)d.items, d.train.size(), d.test_user.size());
  std::printf("| seed | HR@10 base | HR@10 fix | NDCG@10 base | NDCG@10 fix | zombies base (user/item) | auto-fix acts (rows scaled) |\n|---|---|---|---|---|---|---|\n");
  std::vector<double> base_mean(d.test_user.size()), fix_mean(d.test_user.size());
  std::vector<double> seed_base, seed_fix, hr_base, hr_fix;
  for (int s = 0; s < seeds; ++s) {
    const std::string dir = "gradscope-runs/validate-embedding/seed" + std::to_string(s);
    const MfRun b = train(d, s, epochs, lr, use_sgd, false, dir + "-baseline");
    const MfRun f = train(d, s, epochs, lr, use_sgd, true, dir + "-autofix");
    std::printf("| %d | %.4f | %.4f | %.4f | %.4f | %lld/%lld | %lld (%lld) |\n", s, b.hr, f.hr, b.ndcg, f.ndcg,
                (long long)b.report.tables[0].stats.zombie_rows, (long long)b.report.tables[1].stats.zombie_rows, (long long)f.interventions,
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
