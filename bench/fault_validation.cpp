// make validate-faults: does each embedding finding fire exactly where a fault is planted, and
// never on a healthy run? BPR matrix factorisation on MovieLens (data/movielens.csv) with the
// tracker on both tables, five runs per seed:
//   control          MfOptions' defaults (the model tuned in bench/baseline_validation)
//   oscillation      every 4th item row decayed past its minimum each step (mf_faults.h):
//                    e <- (1 - 1.9) e, so it flips sign update after update
//   top20-negatives  negatives drawn only from the 20 most popular items
//   unsampled-items  the sampler's item range stops 100 ids short: ids >= items - 100 never drawn
//   sgd-lr8          plain SGD at learning rate 8, nothing planted: the demo's old "zombie" run,
//                    kept to show what the zombie rules make of large noisy steps
// Ground truth comes from this program's own code, never from the tracker: each row's cosines
// between consecutive real updates from its values before and after every step
// (update_cosines.h), and the sampler's draws counted from every batch (draw_counts.h).
// Truth, per run:
//   ZOMBIE_ROWS            rows whose whole-run mean consecutive cosine <= -0.3 over >= 10 cosines
//   NEGATIVE_SAMPLER_SKEW  total-variation distance of the negatives drawn to uniform >= 0.25
//   POPULARITY_BIAS        Gini of per-lookup counts (rows looked up at least once) > 0.8
//   DEAD_ROWS              rows never drawn, or drawn but never really updated
//   any other finding      never planted: every firing is a false alarm
// A finding that fires where its truth holds is a hit, one that does not a miss, one that fires
// where the truth does not hold a false alarm; ZOMBIE_ROWS and DEAD_ROWS also row by row, and
// ZOMBIE_ROWS also by GradTracer's rule (ZombieRule::kGradTracer) on the same tracker state.
// Each ZOMBIE_ROWS miss is explained by the windowed rule's clauses (docs/embedding.md),
// recomputed here from this program's cosines: too few updates for two windows, a window not
// below the threshold, or a damped oscillation; a miss none of these explains, or a row the
// recomputed rule and the tracker judge differently, is counted apart.
// Usage: validate_faults DATA_DIR [SEEDS=5] [EPOCHS=MfOptions' default]. Prints its tables;
// last line: JSON.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gradscope/core/embedding/report.h"
#include "interactions.h"
#include "matrix_factorization.h"
#include "mf_truth.h"

namespace {

using gradscope::ZombieRule;
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

// One finding on one table. kOther stands for every finding type not listed before it.
constexpr const char* kOther = "any other finding";
struct Check {
  const char* finding;
  int table;  // 0 user, 1 item
};
const Check kChecks[] = {{"ZOMBIE_ROWS", 1},     {"ZOMBIE_ROWS", 0}, {"NEGATIVE_SAMPLER_SKEW", 1},
                         {"POPULARITY_BIAS", 1}, {"POPULARITY_BIAS", 0}, {"DEAD_ROWS", 1},
                         {"DEAD_ROWS", 0},       {kOther, 1},        {kOther, 0}};
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

// The windowed rule's clauses for one row, from this program's cosines and norms.
enum class Windowed { kFlagged, kUnjudged, kNotBelow, kDamped };
// docs/embedding.md: a window oscillates below min(effect size, -z / sqrt(dim x window)), the
// second the window mean's chance level for independent directions in dim dimensions.
double windowed_threshold(int64_t dim) {
  const gradscope::Thresholds t;
  const double chance = -t.zombie_z / std::sqrt(static_cast<double>(dim) * t.zombie_window);
  return std::min(t.zombie_oscillation, chance);
}
Windowed windowed_rule(const sc::UpdateCosines& c, int64_t row, int64_t dim) {
  const gradscope::Thresholds t;
  const double below = windowed_threshold(dim);
  const sc::UpdateCosines::Windows w = c.windows(row, t.zombie_window);
  if (w.completed < 2) return Windowed::kUnjudged;
  if (!(w.last_cosine < below && w.prior_cosine < below)) return Windowed::kNotBelow;
  if (w.last_norm < t.zombie_damping * w.prior_norm) return Windowed::kDamped;
  return Windowed::kFlagged;
}

struct RowTally {
  int64_t truth = 0, flagged = 0, hits = 0, misses = 0, false_alarms = 0;
  // ZOMBIE_ROWS misses by the windowed rule's clause that left the row out (recomputed here).
  int64_t unjudged = 0, not_below = 0, damped = 0, unexplained = 0;
  // Rows the recomputed windowed rule flags, and rows where it and the tracker disagree.
  int64_t recomputed = 0, disagree = 0;
  // Whole-run mean consecutive cosine of each flagged row: this program's, the tracker's.
  std::vector<double> flagged_cosine, tracker_cosine;

  // `cos` (ZOMBIE_ROWS only) adds the cosine ranges; `dim` > 0 also the windowed rule's
  // clauses for each miss and the recomputation's agreement with the tracker.
  void add(const std::set<int64_t>& t, const std::vector<int64_t>& flagged_rows,
           const sc::UpdateCosines* cos, const gradscope::EmbeddingRows& rows, int64_t dim = 0) {
    truth += static_cast<int64_t>(t.size());
    flagged += static_cast<int64_t>(flagged_rows.size());
    const std::set<int64_t> flagged_set(flagged_rows.begin(), flagged_rows.end());
    for (int64_t r : flagged_rows) {
      if (t.count(r)) ++hits;
      else ++false_alarms;
      if (!cos) continue;
      flagged_cosine.push_back(cos->mean_cosine(r));
      tracker_cosine.push_back(rows.mean_cosine(r));
    }
    for (int64_t r : t) {
      if (flagged_set.count(r)) continue;
      ++misses;
      if (!cos || dim < 1) continue;
      switch (windowed_rule(*cos, r, dim)) {
        case Windowed::kUnjudged: ++unjudged; break;
        case Windowed::kNotBelow: ++not_below; break;
        case Windowed::kDamped: ++damped; break;
        case Windowed::kFlagged: ++unexplained; break;
      }
    }
    if (!cos || dim < 1) return;
    for (int64_t r = 0; r < cos->rows(); ++r) {
      const bool ours = windowed_rule(*cos, r, dim) == Windowed::kFlagged;
      recomputed += ours;
      disagree += ours != (flagged_set.count(r) > 0);
    }
  }
};

std::set<std::string> checked_types() {
  std::set<std::string> s;
  for (const Check& c : kChecks)
    if (c.finding != kOther) s.insert(c.finding);
  return s;
}

bool fired(const gradscope::EmbeddingReport& r, const std::string& type) {
  static const std::set<std::string> checked = checked_types();
  for (const auto& d : r.diagnostics)
    if (type == kOther ? !checked.count(d.type) : d.type == type) return true;
  return false;
}

std::string range(const std::vector<double>& v) {
  if (v.empty()) return "-";
  char s[64];
  std::snprintf(s, sizeof s, "%.3f..%.3f", *std::min_element(v.begin(), v.end()),
                *std::max_element(v.begin(), v.end()));
  return s;
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
  if (seeds < 1 || base.epochs < 1) {
    std::fprintf(stderr, "validate_faults: SEEDS and EPOCHS must be >= 1\n");
    return 2;
  }
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  std::printf("%s; movielens: %lld users, %lld items, %zu training pairs; BPR Adam lr %g, l2 %g, "
              "dim %lld, %d epochs, %d seeds per fault\n\n",
              date, (long long)d.users, (long long)d.items, d.train.size(), base.lr, base.l2,
              (long long)base.dim, base.epochs, seeds);
  std::printf("ground truth per run (this program's code), and the run's quality\n");
  std::printf("| fault | seed | HR@10 | NDCG@10 | negatives TV to uniform | item lookup Gini | "
              "user lookup Gini | items never drawn | oscillating item rows (planted / other) | "
              "mean cosine planted rows | mean cosine other rows | s |\n"
              "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
  std::map<std::string, std::map<std::string, Tally>> tally;         // fault -> check -> runs
  std::map<std::string, std::map<std::string, RowTally>> row_tally;  // fault -> check -> rows
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
        const bool planted =
            fault.faults.oscillate_factor > 0 && r % fault.faults.oscillate_every == 0;
        planted_osc += planted && osc[1].count(r);
        const auto cosines = static_cast<int64_t>(truth.cosines(1).cosines(r).size());
        if (cosines >= sc::kMinCosines)
          (planted ? cos_planted : cos_other).push_back(truth.cosines(1).mean_cosine(r));
      }
      char planted_cos[16] = "-";
      if (!cos_planted.empty())
        std::snprintf(planted_cos, sizeof planted_cos, "%.3f", mean(cos_planted));
      std::printf("| %s | %d | %.4f | %.4f | %.3f | %.3f | %.3f | %zu | %lld / %lld | %s | %.3f "
                  "| %.0f |\n",
                  fault.name, s, run.hr, run.ndcg, tv, gini[1], gini[0], never.size(),
                  (long long)planted_osc, (long long)(osc[1].size() - planted_osc), planted_cos,
                  mean(cos_other), run.seconds);
      std::fflush(stdout);

      for (const Check& c : kChecks) {
        const gradscope::EmbeddingReport& rep = run.report.tables[c.table];
        const gradscope::EmbeddingRows& rows = run.rows[c.table];
        const std::string finding = c.finding, key = finding + " " + kTables[c.table];
        bool truth_holds = false;  // kOther: never planted
        if (finding == "ZOMBIE_ROWS") truth_holds = !osc[c.table].empty();
        if (finding == "NEGATIVE_SAMPLER_SKEW") truth_holds = tv >= kSkewTv;
        if (finding == "POPULARITY_BIAS") truth_holds = gini[c.table] > kBiasGini;
        if (finding == "DEAD_ROWS") truth_holds = !dead_rows[c.table].empty();
        tally[fault.name][key].add(truth_holds, fired(rep, finding));
        if (finding == "ZOMBIE_ROWS") {
          const sc::UpdateCosines& cos = truth.cosines(c.table);
          row_tally[fault.name][key].add(osc[c.table], sc::flagged_rows(rows, rep, finding), &cos,
                                         rows, o.dim);
          // GradTracer's rule on the same tracker state, for comparison.
          row_tally[fault.name][key + " (gradtracer rule)"].add(
              osc[c.table], sc::flagged_rows(rows, rep, finding, ZombieRule::kGradTracer), &cos,
              rows);
        }
        if (finding == "DEAD_ROWS")
          row_tally[fault.name][key].add(dead_rows[c.table], sc::flagged_rows(rows, rep, finding),
                                         nullptr, rows);
      }
    }
  }

  std::printf("\nfindings against the truth, runs over %d seeds: hits / misses / false alarms "
              "(runs where neither)\n| finding | table |",
              seeds);
  for (const Fault& f : faults()) std::printf(" %s |", f.name);
  std::printf("\n|---|---|");
  for (std::size_t i = 0; i < faults().size(); ++i) std::printf("---|");
  std::printf("\n");
  std::string json = "{\"validation\":\"faults\",\"seeds\":" + std::to_string(seeds);
  int run_misses = 0, run_false_alarms = 0;
  for (const Check& c : kChecks) {
    const std::string key = std::string(c.finding) + " " + kTables[c.table];
    std::printf("| %s | %s |", c.finding, kTables[c.table]);
    for (const Fault& f : faults()) {
      const Tally& t = tally[f.name][key];
      std::printf(" %d / %d / %d (%d) |", t.hits, t.misses, t.false_alarms, t.quiet);
      run_misses += t.misses, run_false_alarms += t.false_alarms;
      json += ",\"" + std::string(f.name) + ":" + key + "\":[" + std::to_string(t.hits) + "," +
              std::to_string(t.misses) + "," + std::to_string(t.false_alarms) + "]";
    }
    std::printf("\n");
  }

  std::printf("\nrows, summed over %d seeds; for ZOMBIE_ROWS the whole-run mean consecutive cosine "
              "of the flagged rows (min..max), by this program's code and by the tracker\n"
              "| finding | table | fault | true rows | flagged | hits | misses | false alarms | "
              "flagged rows' mean cosine | the tracker's mean_cosine of them |\n"
              "|---|---|---|---|---|---|---|---|---|---|\n",
              seeds);
  std::vector<std::string> keys;
  for (const Check& c : kChecks) {
    const std::string key = std::string(c.finding) + " " + kTables[c.table];
    if (c.finding == std::string("ZOMBIE_ROWS")) keys.push_back(key);
    if (c.finding == std::string("ZOMBIE_ROWS")) keys.push_back(key + " (gradtracer rule)");
    if (c.finding == std::string("DEAD_ROWS")) keys.push_back(key);
  }
  int64_t row_false_alarms = 0;
  for (const std::string& key : keys)
    for (const Fault& f : faults()) {
      const RowTally& r = row_tally[f.name][key];
      const bool zombie = key.rfind("ZOMBIE_ROWS", 0) == 0;
      const std::size_t space = key.find(' ');
      std::printf("| %s | %s | %s | %lld | %lld | %lld | %lld | %lld | %s | %s |\n",
                  key.substr(0, space).c_str(), key.substr(space + 1).c_str(), f.name,
                  (long long)r.truth, (long long)r.flagged, (long long)r.hits, (long long)r.misses,
                  (long long)r.false_alarms, zombie ? range(r.flagged_cosine).c_str() : "",
                  zombie ? range(r.tracker_cosine).c_str() : "");
      if (key.find("gradtracer") == std::string::npos) row_false_alarms += r.false_alarms;
    }

  std::printf("\nZOMBIE_ROWS (windowed rule) misses by the clause that left each row out, "
              "recomputed from this program's cosines (windows of %d, threshold %.3f, damping "
              "%.2f), and rows where that recomputation and the tracker disagree, summed over %d "
              "seeds\n"
              "| table | fault | misses | < 2 windows | a window not below | damped | none of "
              "these | rows the recomputed rule flags | rows judged differently |\n"
              "|---|---|---|---|---|---|---|---|---|\n",
              gradscope::Thresholds{}.zombie_window, windowed_threshold(base.dim),
              gradscope::Thresholds{}.zombie_damping, seeds);
  int64_t disagree = 0;
  for (int table : {1, 0})
    for (const Fault& f : faults()) {
      const RowTally& r = row_tally[f.name][std::string("ZOMBIE_ROWS ") + kTables[table]];
      std::printf("| %s | %s | %lld | %lld | %lld | %lld | %lld | %lld | %lld |\n", kTables[table],
                  f.name, (long long)r.misses, (long long)r.unjudged, (long long)r.not_below,
                  (long long)r.damped, (long long)r.unexplained, (long long)r.recomputed,
                  (long long)r.disagree);
      disagree += r.disagree;
    }
  json += ",\"run_misses\":" + std::to_string(run_misses) +
          ",\"run_false_alarms\":" + std::to_string(run_false_alarms) +
          ",\"row_false_alarms\":" + std::to_string(row_false_alarms) +
          ",\"zombie_rows_judged_differently\":" + std::to_string(disagree);
  std::printf("%s}\n", json.c_str());
  return 0;
}
