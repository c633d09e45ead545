#include "mf_truth.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace gradscope::scenarios {
namespace {

std::string fixed(double v, int digits = 3) {
  char s[32];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}

// "mean M (min..max)" of per-row values; NaN values (rows with no cosine yet) left out.
std::string summary(const std::vector<double>& values) {
  std::vector<double> m;
  for (double x : values)
    if (!std::isnan(x)) m.push_back(x);
  if (m.empty()) return "none has two real updates";
  double sum = 0;
  for (double x : m) sum += x;
  return "mean " + fixed(sum / m.size()) + " (" + fixed(*std::min_element(m.begin(), m.end())) + ".." +
         fixed(*std::max_element(m.begin(), m.end())) + ")";
}

}  // namespace

MfTruth::MfTruth(const Interactions& d, int64_t dim)
    : users_(d.users, dim), items_(d.items, dim), draws_(d.users, d.items) {}

void MfTruth::add(const MfStep& s) {
  draws_.add(s.batch);
  users_.add(s.user_rows, s.user_before, s.user_after);
  items_.add(s.item_rows, s.item_before, s.item_after);
}

std::set<int64_t> MfTruth::oscillating(int table) const {
  const UpdateCosines& c = cosines(table);
  std::set<int64_t> out;
  for (int64_t r = 0; r < c.rows(); ++r)
    if (static_cast<int64_t>(c.cosines(r).size()) >= kMinCosines && c.mean_cosine(r) <= kOscillatingCosine)
      out.insert(r);
  return out;
}

std::set<int64_t> MfTruth::dead(int table) const {
  std::set<int64_t> out;
  for (int64_t r : table == 1 ? draws_.never_drawn_items() : draws_.never_drawn_users())
    out.insert(r);
  const UpdateCosines& c = cosines(table);
  for (int64_t r = 0; r < c.rows(); ++r)
    if (c.updates(r) == 0) out.insert(r);
  return out;
}

std::vector<std::string> MfTruth::evidence(const MfRun& run, int table) const {
  const EmbeddingReport& report = run.report.tables.at(table);
  const EmbeddingRows& rows = run.rows.at(table);
  const UpdateCosines& c = cosines(table);
  std::vector<std::string> lines;
  for (const EmbeddingDiagnostic& d : report.diagnostics) {
    std::string line = d.type + ": ";
    if (d.type == "ZOMBIE_ROWS") {
      const std::vector<int64_t> flagged = flagged_rows(rows, report, d.type);
      const std::set<int64_t> truth = oscillating(table);
      std::vector<double> ours, tracker;
      int64_t hits = 0;
      for (int64_t r : flagged) {
        ours.push_back(c.mean_cosine(r));
        tracker.push_back(rows.mean_cosine(r));
        hits += truth.count(r) > 0;
      }
      // Hits against this code's own truth, so a flagged row that does not oscillate shows.
      line += std::to_string(flagged.size()) + " rows flagged, " + std::to_string(hits) +
              " of them among the rows measured below as oscillating; their whole-run mean cosine "
              "between consecutive updates, from the weights before and after each step: " +
              summary(ours) + "; the tracker's mean_cosine: " + summary(tracker);
    } else if (d.type == "DEAD_ROWS") {
      const std::size_t never =
          (table == 1 ? draws_.never_drawn_items() : draws_.never_drawn_users()).size();
      const std::set<int64_t> truth = dead(table);
      const std::vector<int64_t> flagged = flagged_rows(rows, report, d.type);
      int64_t hits = 0;
      for (int64_t r : flagged) hits += truth.count(r) > 0;
      line += std::to_string(flagged.size()) + " rows flagged, " + std::to_string(hits) +
              " of them dead by this code's count: " + std::to_string(never) +
              " rows never drawn by the sampler, " + std::to_string(truth.size()) +
              " never drawn or never really updated";
    } else if (d.type == "POPULARITY_BIAS") {
      line += "Gini of the sampler's draws per lookup " +
              fixed(table == 1 ? draws_.item_lookup_gini() : draws_.user_lookup_gini());
    } else if (d.type == "NEGATIVE_SAMPLER_SKEW") {
      line += "total-variation distance of the negatives drawn to uniform " + fixed(draws_.negative_tv_to_uniform());
    } else {
      line += "evidence";
      for (const auto& [name, value] : d.evidence) line += " " + name + " " + fixed(value, 4);
    }
    lines.push_back(line);
  }
  lines.push_back("measured by the run's own code: " + std::to_string(oscillating(table).size()) +
                  " rows with a whole-run mean consecutive cosine <= " + fixed(kOscillatingCosine, 1) + " (over >= " +
                  std::to_string(kMinCosines) + " cosines), per-lookup Gini " +
                  fixed(table == 1 ? draws_.item_lookup_gini() : draws_.user_lookup_gini()) +
                  (table == 1 ? ", negatives' distance to uniform " + fixed(draws_.negative_tv_to_uniform()) + ", " +
                                    std::to_string(draws_.never_drawn_items().size()) + " rows never drawn"
                              : std::string()));
  return lines;
}

std::vector<int64_t> flagged_rows(const EmbeddingRows& rows, const EmbeddingReport& report,
                                  const std::string& type, ZombieRule rule) {
  EmbeddingRuleOptions o;
  o.zombie_rule = rule;
  o.max_examples = static_cast<int>(rows.rows());
  const EmbeddingReport all = diagnose_embedding(report.layer, rows, report.stats.tracked_steps, o);
  for (const EmbeddingDiagnostic& d : all.diagnostics)
    if (d.type == type) return d.example_rows;
  return {};
}

}  // namespace gradscope::scenarios
