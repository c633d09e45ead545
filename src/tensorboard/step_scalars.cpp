#include "gradscope/tensorboard/step_scalars.h"

#include <array>
#include <cmath>
#include <limits>

namespace gradscope::tensorboard {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The timeline's convention (FlowEntry::grad_norm): a step whose gradient held a NaN shows
// NaN, one with an Inf +Inf; else the L2. The finite L2 alone would show an all-NaN
// gradient as 0, a healthy-looking value.
double shown_l2(const Stats& s) {
  if (s.nan > 0) return kNaN;
  if (s.inf() > 0) return std::numeric_limits<double>::infinity();
  return s.l2();
}

double fraction(int64_t part, int64_t all) {
  return all > 0 ? static_cast<double>(part) / all : kNaN;
}

}  // namespace

StepScalars::StepScalars(Thresholds thresholds) : thresholds_(thresholds) {
  thresholds_.validate();
}

void StepScalars::add(const std::vector<Record>& records, StepSummary& out) {
  std::vector<std::pair<std::string, NodeStep>> nodes;
  std::unordered_map<std::string, std::size_t> index;
  for (const Record& r : records) {
    auto [it, fresh] = index.emplace(r.node, nodes.size());
    if (fresh) nodes.emplace_back(r.node, NodeStep{});
    nodes[it->second].second.add(r.site, r.stats);
  }
  for (const auto& [node, n] : nodes) {
    // The rules' own per-step test (core/audit/step_judgement.h): a flag is 1 at the steps the
    // report's evidence counts.
    FlagSet tested;
    const FlagSet on = step_flags(n, stagnant_runs_[node], thresholds_, &tested);
    const auto flag = [&](Flag f) {
      if (tested.contains(f)) out.scalar(std::string("flag/") + flag_name(f) + "/" + node, on.contains(f) ? 1.0 : 0.0);
    };
    if (const Stats* g = n.gradient()) out.scalar("grad_l2/" + node, shown_l2(*g));
    flag(Flag::kVanishing);
    flag(Flag::kExploding);
    const Stats* param = n.get(Site::kParam);
    const Stats* update = n.get(Site::kUpdate);
    if (param && update) {
      if (const std::optional<double> r = update_ratio(*param, *update))
        out.scalar("update_ratio/" + node, *r);
      else if (param->nan + update->nan + param->inf() + update->inf() > 0)
        out.scalar("update_ratio/" + node, kNaN);  // no ratio of the finite parts means anything
    }
    flag(Flag::kStagnant);
    if (const Stats* a = n.get(Site::kActivation)) {
      out.scalar("activation_zero_frac/" + node, a->frac_zero());
      out.scalar("activation_saturated_frac/" + node, a->frac_saturated());
      out.scalar("activation_nonfinite_frac/" + node, fraction(a->nan + a->inf(), a->count));
    }
    flag(Flag::kDead);
    flag(Flag::kSaturated);
    flag(Flag::kNaN);
    flag(Flag::kInf);
  }
}

void add_channel_histograms(const ChannelRecord& record, StepSummary& out) {
  const auto add = [&](const std::string& measure, const std::vector<double>& values) {
    if (values.empty()) return;
    long skipped = 0;
    Histogram h = histogram_of(values, &skipped);
    if (h.num > 0) out.histogram(measure + "/" + record.node, std::move(h));
    if (skipped > 0)
      out.scalar(measure + "_nonfinite/" + record.node, static_cast<double>(skipped));
  };
  std::vector<double> means, norms;
  for (const Stats& s : record.activation) means.push_back(s.nan + s.inf() > 0 ? kNaN : s.mean());
  for (const Stats& s : record.output_grad) norms.push_back(shown_l2(s));
  add("channel_activation_mean", means);
  add("channel_grad_l2", norms);
  if (!std::isnan(record.effective_rank))
    out.scalar("effective_rank/" + record.node, record.effective_rank);
}

void add_element_histograms(const std::vector<ElementHistogram>& histograms, StepSummary& out) {
  for (const ElementHistogram& e : histograms) {
    const std::string measure = std::string(site_name(e.site)) + "_elements";
    if (e.num > 0) out.histogram(measure + "/" + e.node, histogram_of(e));
    if (e.nonfinite > 0)
      out.scalar(measure + "_nonfinite/" + e.node, static_cast<double>(e.nonfinite));
  }
}

void add_series_scalars(const std::vector<StepScalar>& scalars, int64_t step, StepSummary& out) {
  for (const StepScalar& x : scalars)
    if (x.step == step) out.scalar(x.name, x.value);
}

void add_attention_scalars(const std::vector<AttentionRecord>& records, StepSummary& out) {
  for (const AttentionRecord& a : records)
    for (std::size_t h = 0; h < a.heads.size(); ++h) {
      const HeadStats& s = a.heads[h];
      if (s.queries == 0) continue;
      const std::string at = a.node + "/head" + std::to_string(h);
      out.scalar("attention_max_logit/" + at, s.max_logit);
      if (s.fraction_queries > 0) out.scalar("attention_entropy_fraction/" + at, s.mean_entropy_fraction());
      out.scalar("attention_top_key_frac/" + at, s.top_fraction());
    }
}

void add_embedding_metrics(const std::vector<EmbeddingReport>& tables, StepSummary& out) {
  for (const EmbeddingReport& t : tables) {
    const EmbeddingStats& s = t.stats;
    const int64_t rows = s.num_embeddings;
    out.scalar("embedding/coverage/" + t.layer, fraction(s.exposed_rows, rows));
    // DEAD_ROWS' count (src/core/embedding/rules.cpp): never in a batch, or in one but never
    // changed.
    out.scalar("embedding/dead_fraction/" + t.layer,
               fraction(s.never_exposed_rows + s.never_updated_rows, rows));
    out.scalar("embedding/zombie_fraction/" + t.layer, fraction(s.zombie_rows, rows));
    out.scalar("embedding/lookup_gini/" + t.layer, s.lookup_gini);
    out.scalar("embedding/popularity_gini/" + t.layer, s.popularity_gini);
  }
}

namespace {

// A profile histogram's bins as TensorBoard buckets: [-inf, e0) holds `below`, then one bucket
// per bin up to the last edge.
Histogram buckets_of(const gradscope::Histogram& bins) {
  Histogram h;
  if (bins.counts.empty()) return h;
  h.min = bins.edges.front();
  h.max = bins.edges.back();
  h.limits.push_back(bins.edges.front());
  h.counts.push_back(static_cast<double>(bins.below));
  for (std::size_t i = 0; i < bins.counts.size(); ++i) {
    h.limits.push_back(bins.edges[i + 1]);
    h.counts.push_back(static_cast<double>(bins.counts[i]));
  }
  for (double c : h.counts) h.num += c;
  return h;
}

void scalar_if_measured(StepSummary& out, const std::string& tag, double value) {
  if (!std::isnan(value)) out.scalar(tag, value);
}

}  // namespace

void add_embedding_profiles(const std::vector<EmbeddingProfile>& tables, StepSummary& out) {
  for (const EmbeddingProfile& p : tables) {
    if (!p.exposure.counts.empty()) out.histogram("embedding/exposure/" + p.layer, buckets_of(p.exposure));
    if (!p.velocity.counts.empty()) out.histogram("embedding/velocity/" + p.layer, buckets_of(p.velocity));
  }
}

void add_tree_round_metrics(const TreeDynamicsReport& report, std::size_t round, StepSummary& out) {
  if (round >= report.per_round.size()) return;
  const RoundDynamics& r = report.per_round[round];
  scalar_if_measured(out, "trees/train_loss", r.train_loss);
  scalar_if_measured(out, "trees/valid_loss", r.valid_loss);
  scalar_if_measured(out, "trees/contribution", r.contribution);
  scalar_if_measured(out, "trees/velocity", r.velocity);
  scalar_if_measured(out, "trees/leaf_mean_abs", r.leaf_mean_abs);
  scalar_if_measured(out, "trees/gain", r.gain);
  out.scalar("trees/leaves", r.leaves);
  double total = 0, squares = 0;
  const bool by_gain = !std::isnan(r.gain) && r.gain > 0;
  for (const FeatureSplits& f : r.features) total += by_gain ? f.gain : static_cast<double>(f.splits);
  if (total > 0) {
    for (const FeatureSplits& f : r.features) {
      const double share = (by_gain ? f.gain : static_cast<double>(f.splits)) / total;
      squares += share * share;
    }
    out.scalar("trees/split_concentration", squares);
  }
}

void add_compression_points(const compress::MeasuredComparison& c, StepSummary& out) {
  out.scalar("compression/bytes/fp32", static_cast<double>(c.fp32_bytes));
  scalar_if_measured(out, "compression/accuracy/fp32", c.fp32_accuracy);
  for (const compress::MeasuredPoint& p : c.points) {
    int same_method = 0;
    for (const compress::MeasuredPoint& q : c.points) same_method += q.method == p.method;
    const std::string name = same_method > 1 ? p.method + " (" + p.budget + ")" : p.method;
    out.scalar("compression/bytes/" + name, static_cast<double>(p.bytes));
    scalar_if_measured(out, "compression/accuracy/" + name, p.accuracy);
  }
}

std::string report_markdown(const std::string& text) {
  std::string out;
  std::size_t start = 0;
  while (start < text.size()) {
    std::size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size() - 1;
    out += "    ";
    out.append(text, start, end - start + 1);
    start = end + 1;
  }
  return out;
}

}  // namespace gradscope::tensorboard
