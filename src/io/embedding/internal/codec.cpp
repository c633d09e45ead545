#include "embedding/internal/codec.h"

#include <cmath>
#include <limits>

namespace gradscope::internal {

Json json_number(double v) { return std::isfinite(v) ? Json(v) : Json(); }

Json report_to_json(const EmbeddingReport& r) {
  const EmbeddingStats& s = r.stats;
  const Json stats = {
      {"num_embeddings", s.num_embeddings},
      {"dim", s.dim},
      {"tracked_steps", s.tracked_steps},
      {"exposed_rows", s.exposed_rows},
      {"active_coverage_pct", json_number(s.active_coverage_pct)},
      {"popularity_gini", json_number(s.popularity_gini)},
      {"lookup_gini", json_number(s.lookup_gini)},
      {"lookups", s.lookups},
      {"negative_lookups", s.negative_lookups},
      {"exposure_entropy", json_number(s.exposure_entropy)},
      {"never_exposed_rows", s.never_exposed_rows},
      {"never_updated_rows", s.never_updated_rows},
      {"zombie_rows", s.zombie_rows},
      {"zombie_rows_judged", s.zombie_rows_judged},
      {"zombie_rows_stopped", s.zombie_rows_stopped},
      {"zombie_rows_judged_short", s.zombie_rows_judged_short},
      {"zombie_rows_unjudged", s.zombie_rows_unjudged},
      {"zombie_stopped_rows", s.zombie_stopped_rows},
      {"zombie_stopped_step", s.zombie_stopped_step >= 0 ? Json(s.zombie_stopped_step) : Json()},
      {"zombie_mean_cosine", json_number(s.zombie_mean_cosine)},
      {"sampler_tv", json_number(s.sampler_tv)},
      {"sampler_tv_chance", json_number(s.sampler_tv_chance)},
      {"median_velocity", json_number(s.median_velocity)},
      {"saliency_median", json_number(s.saliency_median)},
      {"lowest_saliency_rows", s.lowest_saliency_rows},
      {"effective_rank", s.effective_rank < 0 ? Json() : json_number(s.effective_rank)},
      {"effective_rank_rows", s.effective_rank_rows},
      {"state_bytes", s.state_bytes}};
  Json diags = Json::array();
  for (const EmbeddingDiagnostic& d : r.diagnostics) {
    Json evidence = Json::object();
    for (const auto& [name, value] : d.evidence) evidence[name] = json_number(value);
    evidence["example_rows"] = d.example_rows;
    if (!d.rows.empty()) evidence["rows"] = d.rows;
    diags.push_back({{"type", d.type},
                     {"premise", d.premise},
                     {"implies", d.implies},
                     {"action", d.action},
                     {"advice", d.advice},
                     {"expected_effect", d.expected_effect},
                     {"confidence", json_number(d.confidence)},
                     {"evidence", evidence}});
  }
  return {{"layer", r.layer}, {"embedding_stats", stats}, {"diagnostics", diags}};
}

EmbeddingReport report_from_json(const Field& j) {
  EmbeddingReport r;
  r.layer = j.at("layer").string();
  const Field s = j.at("embedding_stats");
  EmbeddingStats& st = r.stats;
  st.num_embeddings = s.at("num_embeddings").count();
  st.dim = s.at("dim").count();
  st.tracked_steps = s.at("tracked_steps").count();
  st.exposed_rows = s.at("exposed_rows").count();
  st.active_coverage_pct = s.at("active_coverage_pct").number_in(0, 100);
  st.popularity_gini = s.at("popularity_gini").number_in(0, 1);
  st.exposure_entropy = s.at("exposure_entropy").number_in(0, 1);
  st.never_exposed_rows = s.at("never_exposed_rows").count();
  st.never_updated_rows = s.at("never_updated_rows").count();
  st.zombie_rows = s.at("zombie_rows").count();
  // Added with the windowed zombie rule and per-lookup counts; files written before lack them.
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  st.lookup_gini = s.has("lookup_gini") ? s.at("lookup_gini").number_in(0, 1) : kNaN;
  st.lookups = s.has("lookups") ? s.at("lookups").count() : 0;
  st.negative_lookups = s.has("negative_lookups") ? s.at("negative_lookups").count() : 0;
  st.zombie_rows_judged = s.has("zombie_rows_judged") ? s.at("zombie_rows_judged").count() : 0;
  st.zombie_rows_stopped = s.has("zombie_rows_stopped") ? s.at("zombie_rows_stopped").count() : 0;
  st.zombie_rows_unjudged = s.has("zombie_rows_unjudged") ? s.at("zombie_rows_unjudged").count() : 0;
  st.zombie_rows_judged_short = s.has("zombie_rows_judged_short") ? s.at("zombie_rows_judged_short").count() : 0;
  if (s.has("zombie_stopped_rows")) st.zombie_stopped_rows = s.at("zombie_stopped_rows").counts();
  if (s.has("zombie_stopped_step") && !s.at("zombie_stopped_step").json().is_null())  // null: none stopped
    st.zombie_stopped_step = s.at("zombie_stopped_step").count();
  st.zombie_mean_cosine = s.has("zombie_mean_cosine") ? s.at("zombie_mean_cosine").number_in(-1, 1) : kNaN;
  st.sampler_tv = s.has("sampler_tv") ? s.at("sampler_tv").number_in(0, 1) : kNaN;
  st.sampler_tv_chance = s.has("sampler_tv_chance") ? s.at("sampler_tv_chance").number_in(0, 1) : kNaN;
  st.median_velocity = s.at("median_velocity").number_from(0);
  st.saliency_median = s.at("saliency_median").number_from(0);
  st.lowest_saliency_rows = s.at("lowest_saliency_rows").counts();
  const Field rank = s.at("effective_rank");
  st.effective_rank = rank.json().is_null() ? -1.0 : rank.number_from(0);
  st.effective_rank_rows = s.at("effective_rank_rows").count();
  st.state_bytes = s.at("state_bytes").count();
  const Field diagnostics = j.at("diagnostics");
  for (std::size_t i = 0; i < diagnostics.size(); ++i) {
    const Field jd = diagnostics.element(i);
    EmbeddingDiagnostic d;
    d.type = jd.at("type").string();
    d.premise = jd.at("premise").string();
    d.implies = jd.at("implies").string();
    d.action = jd.at("action").string();
    if (jd.has("advice")) d.advice = jd.at("advice").string();
    d.expected_effect = jd.at("expected_effect").string();
    d.confidence = jd.at("confidence").number_in(0, 1);
    // Named numbers (thresholds among them, so of any sign), in the order written.
    for (const auto& [name, value] : jd.at("evidence").members()) {
      if (name == "example_rows") d.example_rows = value.counts();
      else if (name == "rows") d.rows = value.counts();
      else d.evidence.emplace_back(name, value.number());
    }
    r.diagnostics.push_back(std::move(d));
  }
  return r;
}

Json correlation_to_json(const TowerCorrelation& c) {
  return {{"a", c.a}, {"b", c.b}, {"pearson", json_number(c.pearson)}, {"steps", c.steps}};
}

TowerCorrelation correlation_from_json(const Field& j) {
  TowerCorrelation c;
  c.a = j.at("a").string();
  c.b = j.at("b").string();
  c.pearson = j.at("pearson").number_in(-1, 1);
  c.steps = j.at("steps").count();
  return c;
}

}  // namespace gradscope::internal
