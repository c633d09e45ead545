// make validate-embedding: does the embedding auto-fix help where zombie rows are real?
// BPR matrix factorisation on MovieLens (data/movielens.csv from scripts/fetch-data.sh
// movielens) with MfOptions' defaults (tuned in bench/baseline_validation) and, by default,
// the planted true oscillation (mf_faults.h: every 4th item row decayed past its minimum each
// step, so it flips sign update after update). Each seed trains a baseline and an auto-fix run
// from identical initial weights and identical batches and negatives; both track the user and
// item tables every step. Leave-one-out, full ranking, HR@10 and NDCG@10 (ranking.h). Paired
// t-tests: per user (HR@10 and NDCG@10 averaged over the seeds) and over the per-seed means;
// t = mean(d) / (sd(d) / sqrt(n)) with df = n - 1 and the two-sided p from Student's t CDF
// (gradscope::paired_t_test: the regularised incomplete beta function, Numerical Recipes in C
// 2nd ed. 6.4; checked against published values in tests/scenarios/t_test_test.cpp).
// Usage: validate_embedding DATA_DIR [SEEDS=5] [EPOCHS=default] [oscillation|none].
// Last line: JSON.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

#include "gradscope/core/embedding/math.h"
#include "gradscope/io/embedding/json.h"
#include "interactions.h"
#include "matrix_factorization.h"

namespace {

using gradscope::scenarios::Interactions;
using gradscope::scenarios::MfOptions;
using gradscope::scenarios::MfRun;

// One arm of one seed; the auto-fix log and the embedding report go to `run_dir`.
MfRun train(const Interactions& d, MfOptions opt, bool auto_fix, const std::string& run_dir) {
  gradscope::AuditLog log(run_dir);
  opt.auto_fix = auto_fix;
  opt.on_intervention = [&](const gradscope::EmbeddingIntervention& iv) { log.append(iv); };
  MfRun r = gradscope::scenarios::train_matrix_factorization(d, opt);
  std::ofstream(run_dir + "/embedding_report.json")
      << gradscope::render_embedding_hub_json(r.report);
  return r;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return s / static_cast<double>(v.size());
}

// "name: t T, df D, p P" of a paired test (a - b), or "n/a" with fewer than two pairs.
std::string t_test(const std::vector<double>& a, const std::vector<double>& b,
                   gradscope::TTest& out) {
  out = {NAN, NAN, NAN, NAN};
  if (a.size() < 2) return "n/a (fewer than 2 pairs)";
  out = gradscope::paired_t_test(a, b);
  char line[160];
  // p to 3 significant digits: a fixed 4 decimals would print a tiny p as 0.0000.
  std::snprintf(line, sizeof line, "diff %+.5f, t %.3f, df %.0f, p %.3g", out.mean_diff, out.t,
                out.df, out.p);
  return line;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: validate_embedding DATA_DIR [SEEDS] [EPOCHS] [oscillation|none]\n");
    return 2;
  }
  MfOptions opt;
  const int seeds = argc > 2 ? std::atoi(argv[2]) : 5;
  if (argc > 3) opt.epochs = std::atoi(argv[3]);
  const std::string fault = argc > 4 ? argv[4] : "oscillation";
  if (fault != "oscillation" && fault != "none") {
    std::fprintf(stderr, "validate_embedding: fault '%s' is not oscillation or none\n",
                 fault.c_str());
    return 2;
  }
  if (seeds < 1 || opt.epochs < 1) {
    std::fprintf(stderr, "validate_embedding: SEEDS and EPOCHS must be >= 1\n");
    return 2;
  }
  if (fault == "oscillation") opt.faults.oscillate_factor = 1.9, opt.faults.oscillate_every = 4;
  const Interactions d =
      gradscope::scenarios::load_movielens(std::string(argv[1]) + "/movielens.csv");
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::printf("%s; movielens: %lld users, %lld items with a rating >= 4, %zu training pairs, %zu "
              "test users\n",
              date, (long long)d.users, (long long)d.items, d.train.size(), d.test_user.size());
  std::printf("BPR Adam lr %g, l2 %g, dim %lld, %d epochs; fault: %s\n", opt.lr, opt.l2,
              (long long)opt.dim, opt.epochs,
              fault == "none" ? "none"
                              : "oscillation (every 4th item row, e <- (1 - 1.9) e each step)");
  std::printf("| seed | HR@10 base | HR@10 fix | NDCG@10 base | NDCG@10 fix | zombie rows base "
              "(user/item) | zombie rows fix (user/item) | auto-fix acts (rows scaled) | s |\n"
              "|---|---|---|---|---|---|---|---|---|\n");
  const std::size_t users = d.test_user.size();
  std::vector<double> hr_base(users), hr_fix(users), nd_base(users), nd_fix(users);
  std::vector<double> seed_hr_base, seed_hr_fix, seed_nd_base, seed_nd_fix;
  for (int s = 0; s < seeds; ++s) {
    opt.seed = s;
    const std::string dir =
        "gradscope-runs/validate-embedding/" + fault + "-seed" + std::to_string(s);
    const MfRun b = train(d, opt, false, dir + "-baseline");
    const MfRun f = train(d, opt, true, dir + "-autofix");
    const auto zombies = [](const MfRun& r, int t) {
      return (long long)r.report.tables[t].stats.zombie_rows;
    };
    std::printf("| %d | %.4f | %.4f | %.4f | %.4f | %lld/%lld | %lld/%lld | %lld (%lld) | %.0f |\n",
                s, b.hr, f.hr, b.ndcg, f.ndcg, zombies(b, 0), zombies(b, 1), zombies(f, 0),
                zombies(f, 1), (long long)f.interventions, (long long)f.rows_scaled,
                b.seconds + f.seconds);
    std::fflush(stdout);
    for (std::size_t k = 0; k < users; ++k) {
      hr_base[k] += b.user_hr[k] / seeds, hr_fix[k] += f.user_hr[k] / seeds;
      nd_base[k] += b.user_ndcg[k] / seeds, nd_fix[k] += f.user_ndcg[k] / seeds;
    }
    seed_hr_base.push_back(b.hr), seed_hr_fix.push_back(f.hr);
    seed_nd_base.push_back(b.ndcg), seed_nd_fix.push_back(f.ndcg);
  }
  std::printf("mean over seeds: HR@10 %.4f -> %.4f, NDCG@10 %.4f -> %.4f\n", mean(seed_hr_base),
              mean(seed_hr_fix), mean(seed_nd_base), mean(seed_nd_fix));
  gradscope::TTest hr_u, nd_u, hr_s, nd_s;
  std::printf("paired t-test (auto-fix - baseline), per user averaged over seeds (n = %zu): "
              "HR@10 %s; NDCG@10 %s\n",
              users, t_test(hr_fix, hr_base, hr_u).c_str(), t_test(nd_fix, nd_base, nd_u).c_str());
  std::printf("paired t-test (auto-fix - baseline), per seed (n = %d): HR@10 %s; NDCG@10 %s\n",
              seeds, t_test(seed_hr_fix, seed_hr_base, hr_s).c_str(),
              t_test(seed_nd_fix, seed_nd_base, nd_s).c_str());
  std::printf("{\"validation\":\"embedding\",\"fault\":\"%s\",\"seeds\":%d,\"hr10_base\":%.4f,"
              "\"hr10_fix\":%.4f,\"ndcg10_base\":%.4f,\"ndcg10_fix\":%.4f,\"t_users_hr\":%.3f,"
              "\"p_users_hr\":%.4g,\"t_users_ndcg\":%.3f,\"p_users_ndcg\":%.4g,\"t_seeds_hr\":%.3f,"
              "\"p_seeds_hr\":%.4g,\"t_seeds_ndcg\":%.3f,\"p_seeds_ndcg\":%.4g}\n",
              fault.c_str(), seeds, mean(seed_hr_base), mean(seed_hr_fix), mean(seed_nd_base),
              mean(seed_nd_fix), hr_u.t, hr_u.p, nd_u.t, nd_u.p, hr_s.t, hr_s.p, nd_s.t, nd_s.p);
  return 0;
}
