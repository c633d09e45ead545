// make validate-faults: does each embedding finding fire exactly where a fault is planted, and
// never on a healthy run? BPR matrix factorisation on MovieLens (data/movielens.csv) with the
// tracker on both tables, four runs per seed:
//   control          MfOptions' defaults (the model tuned in bench/baseline_validation)
//   oscillation      every 4th item row decayed past its minimum each step (mf_faults.h):
//                    e <- (1 - 1.9) e, so it flips sign update after update
//   top20-negatives  negatives drawn only from the 20 most popular items
//   unsampled-items  the sampler's item range stops 100 ids short: ids >= items - 100 never drawn
//   sgd-lr8          plain SGD at learning rate 8, nothing planted: the demo's old "zombie" run,
//                    kept to show what the zombie rule makes of large noisy steps
// Ground truth comes from this program's own code, never from the tracker: each row's cosines
// between consecutive real updates from its values before and after every step
// (update_cosines.h), and the sampler's draws counted from every batch (draw_counts.h).
// Truth, per run:
//   ZOMBIE_ROWS            rows whose whole-run mean consecutive cosine <= -0.3 over >= 10 cosines
//   NEGATIVE_SAMPLER_SKEW  total-variation distance of the negatives drawn to uniform >= 0.25
//   POPULARITY_BIAS        Gini of per-lookup counts (rows looked up at least once) > 0.8
//   DEAD_ROWS              rows never drawn, or drawn but never really updated
// A finding that fires where its truth holds is a hit, one that does not a miss, one that fires
// where the truth does not hold a false alarm; ZOMBIE_ROWS and DEAD_ROWS also row by row.
// Usage: validate_faults DATA_DIR [SEEDS=5] [EPOCHS=MfOptions' default]. Prints its tables; last line: JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gradscope/core/embedding_report.h"
#include "interactions.h"
#include "matrix_factorization.h"
#include "mf_truth.h"

namespace {

using gradscope::scenarios::Interactions;
using gradscope::scenarios::MfOptions;
namespace sc = gradscope::scenarios;

constexpr double kSkewTv = 0.25, kBiasGini = 0.8;

struct Fault {
  const char* name;
  sc::MfFaults faults;
  bool sgd = false;
  double lr = 0;  // 0: MfOptions' default
};
std::vector<Fault> faults() {
  std::vector<Fault> f(5);
  f[0].name = "control";
  f[1].name = "oscillation";
  f[1].faults.oscillate_factor = 1.9;
  f[1].faults.oscillate_every = 4;
  f[2].name = "top20-negatives";
  f[2].faults.negatives_from_top = 20;
  f[3].name = "unsampled-items";
  f[3].faults.unsampled_items = 100;
  f[4].name = "sgd-lr8";  // the demo's old planted zombie run: large steps, no planted oscillation
  f[4].sgd = true;
  f[4].lr = 8;
  return f;
}

// One finding on one table.
struct Check {
  const char* finding;
  int table;  // 0 user, 1 item
};
const Check kChecks[] = {{"ZOMBIE_ROWS", 1},     {"ZOMBIE_ROWS", 0}, {"NEGATIVE_SAMPLER_SKEW", 1},
                         {"POPULARITY_BIAS", 1}, {"POPULARITY_BIAS", 0}, {"DEAD_ROWS", 1},
                         {"DEAD_ROWS", 0}};
const char* kTables[] = {"user", "item"};

struct Tally {
  int hits = 0, misses = 0, false_alarms = 0, quiet = 0;  // quiet: neither truth nor finding
  void add(bool truth, bool fired) {
    if (truth && fired) ++hits;
    else if (truth) ++misses;
    else if (fired) ++false_alarms;
    else ++quiet;
  }
};

struct RowTally {
  int64_t truth = 0, flagged = 0, hits = 0, misses = 0, false_alarms = 0;
  // Whole-run mean consecutive cosine of each flagged row: this program's, the tracker's.
  std::vector<double> flagged_cosine, tracker_cosine;
  void add(const std::set<int64_t>& t, const std::vector<int64_t>& flagged_rows, const sc::UpdateCosines* cos,
           const gradscope::EmbeddingRows& rows) {
    truth += static_cast<int64_t>(t.size());
    flagged += static_cast<int64_t>(flagged_rows.size());
    for (int64_t r : flagged_rows) {
      if (t.count(r)) ++hits;
      else ++false_alarms;
      if (cos) flagged_cosine.push_back(cos->mean_cosine(r)), tracker_cosine.push_back(rows.mean_cosine(r));
    }
    misses += static_cast<int64_t>(t.size()) - [&] {
      int64_t h = 0;
      for (int64_t r : flagged_rows) h += t.count(r) > 0;
      return h;
    }();
  }
};

bool fired(const gradscope::EmbeddingReport& r, const std::string& type) {
  for (const auto& d : r.diagnostics)
    if (d.type == type) return true;
  return false;
}

std::string range(const std::vector<double>& v, const char* fmt = "%.3f") {
  if (v.empty()) return "-";
  char lo[32], hi[32];
  std::snprintf(lo, sizeof lo, fmt, *std::min_element(v.begin(), v.end()));
  std::snprintf(hi, sizeof hi, fmt, *std::max_element(v.begin(), v.end()));
  return std::string(lo) + ".." + hi;
}

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x / v.size();
  return v.empty() ? NAN : s;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: validate_faults DATA_DIR [SEEDS] [EPOCHS]\n");
    return 2;
  }
  const int seeds = argc > 2 ? std::atoi(argv[2]) : 5;
  const Interactions d = sc::load_movielens(std::string(argv[1]) + "/movielens.csv");
  MfOptions base;
  if (argc > 3) base.epochs = std::atoi(argv[3]);
  std::printf("movielens: %lld users, %lld items, %zu training pairs; BPR Adam lr %g, l2 %g, dim %lld, %d epochs, "
              "%d seeds per fault\n\n",
              (long long)d.users, (long long)d.items, d.train.size(), base.lr, base.l2, (long long)base.dim, base.epochs,
              seeds);
  std::printf("ground truth per run (this program's code), and the run's quality\n");
  std::printf("| fault | seed | HR@10 | NDCG@10 | negatives TV to uniform | item lookup Gini | user lookup Gini | "
              "items never drawn | oscillating item rows (planted / other) | mean cosine planted rows | "
              "mean cosine other rows | s |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::map<std::string, std::map<std::string, Tally>> tally;          // fault -> check -> tally
  std::map<std::string, std::map<std::string, RowTally>> row_tally;   // fault -> check -> rows
  for (const Fault& fault : faults()) {
    for (int s = 0; s < seeds; ++s) {
      MfOptions o = base;
      o.seed = s;
      o.faults = fault.faults;
      o.sgd = fault.sgd;
      if (fault.lr > 0) o.lr = fault.lr;
      sc::MfTruth truth(d, o.dim);
      o.on_update = [&](const sc::MfStep& step) { truth.add(step); };
      const sc::MfRun run = sc::train_matrix_factorization(d, o);

      const std::set<int64_t> osc[2] = {truth.oscillating(0), truth.oscillating(1)};
      const std::vector<int64_t> never = truth.draws().never_drawn_items();
      const std::set<int64_t> dead_rows[2] = {truth.dead(0), truth.dead(1)};
      const double tv = truth.draws().negative_tv_to_uniform();
      const double gini[2] = {truth.draws().user_lookup_gini(), truth.draws().item_lookup_gini()};
      int64_t planted_osc = 0;
      std::vector<double> cos_planted, cos_other;
      for (int64_t r = 0; r < d.items; ++r) {
        const bool planted = fault.faults.oscillate_factor > 0 && r % fault.faults.oscillate_every == 0;
        planted_osc += planted && osc[1].count(r);
        const double m = truth.cosines(1).mean_cosine(r);
        if (static_cast<int64_t>(truth.cosines(1).cosines(r).size()) >= sc::kMinCosines) (planted ? cos_planted : cos_other).push_back(m);
      }
      char planted_cos[16] = "-";
      if (!cos_planted.empty()) std::snprintf(planted_cos, sizeof planted_cos, "%.3f", mean(cos_planted));
      std::printf("| %s | %d | %.4f | %.4f | %.3f | %.3f | %.3f | %zu | %lld / %lld | %s | %.3f | %.0f |\n",
                  fault.name, s, run.hr, run.ndcg, tv, gini[1], gini[0], never.size(), (long long)planted_osc,
                  (long long)(osc[1].size() - planted_osc), planted_cos, mean(cos_other), run.seconds);
      std::fflush(stdout);

      for (const Check& c : kChecks) {
        const gradscope::EmbeddingReport& rep = run.report.tables[c.table];
        const std::string finding = c.finding, key = finding + " " + kTables[c.table];
        bool truth_holds = false;
        if (finding == "ZOMBIE_ROWS") truth_holds = !osc[c.table].empty();
        if (finding == "NEGATIVE_SAMPLER_SKEW") truth_holds = tv >= kSkewTv;
        if (finding == "POPULARITY_BIAS") truth_holds = gini[c.table] > kBiasGini;
        if (finding == "DEAD_ROWS") truth_holds = !dead_rows[c.table].empty();
        tally[fault.name][key].add(truth_holds, fired(rep, finding));
        if (finding == "ZOMBIE_ROWS")
          row_tally[fault.name][key].add(osc[c.table], sc::flagged_rows(run.rows[c.table], rep, finding),
                                         &truth.cosines(c.table), run.rows[c.table]);
        if (finding == "DEAD_ROWS")
          row_tally[fault.name][key].add(dead_rows[c.table], sc::flagged_rows(run.rows[c.table], rep, finding), nullptr,
                                         run.rows[c.table]);
      }
    }
  }

  std::printf("\nfindings against the truth, runs over %d seeds: hits / misses / false alarms (runs where neither)\n", seeds);
  std::printf("| finding | table |");
  for (const Fault& f : faults()) std::printf(" %s |", f.name);
  std::printf("\n|---|---|---|---|---|---|---|\n");
  std::string json = "{\"validation\":\"faults\",\"seeds\":" + std::to_string(seeds);
  for (const Check& c : kChecks) {
    const std::string key = std::string(c.finding) + " " + kTables[c.table];
    std::printf("| %s | %s |", c.finding, kTables[c.table]);
    for (const Fault& f : faults()) {
      const Tally& t = tally[f.name][key];
      std::printf(" %d / %d / %d (%d) |", t.hits, t.misses, t.false_alarms, t.quiet);
      json += ",\"" + std::string(f.name) + ":" + key + "\":[" + std::to_string(t.hits) + "," +
              std::to_string(t.misses) + "," + std::to_string(t.false_alarms) + "]";
    }
    std::printf("\n");
  }
  std::printf("\nrows, summed over %d seeds: true / flagged / hits / misses / false alarms; for ZOMBIE_ROWS the "
              "whole-run mean consecutive cosine of the flagged rows (min..max), by this program's code and by the tracker\n",
              seeds);
  std::printf("| finding | table | fault | true rows | flagged | hits | misses | false alarms | flagged rows' mean cosine | "
              "the tracker's mean_cosine of them |\n|---|---|---|---|---|---|---|---|---|---|\n");
  for (const Check& c : kChecks) {
    const std::string key = std::string(c.finding) + " " + kTables[c.table];
    for (const Fault& f : faults()) {
      if (!row_tally[f.name].count(key)) continue;
      const RowTally& r = row_tally[f.name][key];
      const bool zombie = c.finding == std::string("ZOMBIE_ROWS");
      std::printf("| %s | %s | %s | %lld | %lld | %lld | %lld | %lld | %s | %s |\n", c.finding, kTables[c.table], f.name,
                  (long long)r.truth, (long long)r.flagged, (long long)r.hits, (long long)r.misses,
                  (long long)r.false_alarms, zombie ? range(r.flagged_cosine).c_str() : "",
                  zombie ? range(r.tracker_cosine).c_str() : "");
    }
  }
  std::printf("%s}\n", json.c_str());
  return 0;
}
