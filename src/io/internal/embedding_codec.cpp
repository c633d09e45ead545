#include "internal/embedding_codec.h"

#include <cmath>
#include <limits>

namespace gradscope::internal {

Json json_number(double v) { return std::isfinite(v) ? Json(v) : Json(); }

double number_from_json(const Json& j) {
  return j.is_null() ? std::numeric_limits<double>::quiet_NaN() : j.get<double>();
}

Json report_to_json(const EmbeddingReport& r) {
  const EmbeddingStats& s = r.stats;
  const Json stats = {
      {"num_embeddings", s.num_embeddings},
      {"dim", s.dim},
      {"tracked_steps", s.tracked_steps},
      {"exposed_rows", s.exposed_rows},
      {"active_coverage_pct", json_number(s.active_coverage_pct)},
      {"popularity_gini", json_number(s.popularity_gini)},
      {"exposure_entropy", json_number(s.exposure_entropy)},
      {"never_exposed_rows", s.never_exposed_rows},
      {"never_updated_rows", s.never_updated_rows},
      {"zombie_rows", s.zombie_rows},
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
    diags.push_back({{"type", d.type},
                     {"premise", d.premise},
                     {"implies", d.implies},
                     {"action", d.action},
                     {"expected_effect", d.expected_effect},
                     {"confidence", json_number(d.confidence)},
                     {"evidence", evidence}});
  }
  return {{"layer", r.layer}, {"embedding_stats", stats}, {"diagnostics", diags}};
}

EmbeddingReport report_from_json(const Json& j) {
  EmbeddingReport r;
  r.layer = j.at("layer").get<std::string>();
  const Json& s = j.at("embedding_stats");
  EmbeddingStats& st = r.stats;
  st.num_embeddings = s.at("num_embeddings").get<int64_t>();
  st.dim = s.at("dim").get<int64_t>();
  st.tracked_steps = s.at("tracked_steps").get<int64_t>();
  st.exposed_rows = s.at("exposed_rows").get<int64_t>();
  st.active_coverage_pct = number_from_json(s.at("active_coverage_pct"));
  st.popularity_gini = number_from_json(s.at("popularity_gini"));
  st.exposure_entropy = number_from_json(s.at("exposure_entropy"));
  st.never_exposed_rows = s.at("never_exposed_rows").get<int64_t>();
  st.never_updated_rows = s.at("never_updated_rows").get<int64_t>();
  st.zombie_rows = s.at("zombie_rows").get<int64_t>();
  st.median_velocity = number_from_json(s.at("median_velocity"));
  st.saliency_median = number_from_json(s.at("saliency_median"));
  st.lowest_saliency_rows = s.at("lowest_saliency_rows").get<std::vector<int64_t>>();
  const Json& rank = s.at("effective_rank");
  st.effective_rank = rank.is_null() ? -1.0 : rank.get<double>();
  st.effective_rank_rows = s.at("effective_rank_rows").get<int64_t>();
  st.state_bytes = s.at("state_bytes").get<int64_t>();
  for (const Json& jd : j.at("diagnostics")) {
    EmbeddingDiagnostic d;
    d.type = jd.at("type").get<std::string>();
    d.premise = jd.at("premise").get<std::string>();
    d.implies = jd.at("implies").get<std::string>();
    d.action = jd.at("action").get<std::string>();
    d.expected_effect = jd.at("expected_effect").get<std::string>();
    d.confidence = number_from_json(jd.at("confidence"));
    for (const auto& [name, value] : jd.at("evidence").items()) {
      if (name == "example_rows") d.example_rows = value.get<std::vector<int64_t>>();
      else d.evidence.emplace_back(name, number_from_json(value));
    }
    r.diagnostics.push_back(std::move(d));
  }
  return r;
}

Json correlation_to_json(const TowerCorrelation& c) {
  return {{"a", c.a}, {"b", c.b}, {"pearson", json_number(c.pearson)}, {"steps", c.steps}};
}

TowerCorrelation correlation_from_json(const Json& j) {
  TowerCorrelation c;
  c.a = j.at("a").get<std::string>();
  c.b = j.at("b").get<std::string>();
  c.pearson = number_from_json(j.at("pearson"));
  c.steps = j.at("steps").get<int64_t>();
  return c;
}

}  // namespace gradscope::internal
