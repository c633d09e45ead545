#include "gradscope/io/embedding_json.h"

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

nlohmann::json number(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(); }

nlohmann::json report_body(const EmbeddingReport& r) {
  const EmbeddingStats& s = r.stats;
  nlohmann::json stats = {
      {"num_embeddings", s.num_embeddings},
      {"dim", s.dim},
      {"tracked_steps", s.tracked_steps},
      {"exposed_rows", s.exposed_rows},
      {"active_coverage_pct", number(s.active_coverage_pct)},
      {"popularity_gini", number(s.popularity_gini)},
      {"exposure_entropy", number(s.exposure_entropy)},
      {"never_exposed_rows", s.never_exposed_rows},
      {"never_updated_rows", s.never_updated_rows},
      {"zombie_rows", s.zombie_rows},
      {"median_velocity", number(s.median_velocity)},
      {"saliency_median", number(s.saliency_median)},
      {"lowest_saliency_rows", s.lowest_saliency_rows},
      {"effective_rank", s.effective_rank < 0 ? nlohmann::json() : number(s.effective_rank)},
      {"effective_rank_rows", s.effective_rank_rows},
      {"state_bytes", s.state_bytes}};
  nlohmann::json diags = nlohmann::json::array();
  for (const EmbeddingDiagnostic& d : r.diagnostics) {
    nlohmann::json evidence = nlohmann::json::object();
    for (const auto& [name, value] : d.evidence) evidence[name] = number(value);
    evidence["example_rows"] = d.example_rows;
    diags.push_back({{"type", d.type},
                     {"premise", d.premise},
                     {"implies", d.implies},
                     {"action", d.action},
                     {"expected_effect", d.expected_effect},
                     {"confidence", number(d.confidence)},
                     {"evidence", evidence}});
  }
  return {{"layer", r.layer}, {"embedding_stats", stats}, {"diagnostics", diags}};
}

}  // namespace

std::string render_embedding_json(const EmbeddingReport& report, int indent) {
  return nlohmann::json{{"gradscope_embedding_report", report_body(report)}}.dump(indent);
}

std::string render_embedding_hub_json(const EmbeddingHubReport& report, int indent) {
  nlohmann::json tables = nlohmann::json::array(), corr = nlohmann::json::array();
  for (const auto& t : report.tables) tables.push_back(report_body(t));
  for (const auto& c : report.correlations)
    corr.push_back({{"a", c.a}, {"b", c.b}, {"pearson", number(c.pearson)}, {"steps", c.steps}});
  return nlohmann::json{{"gradscope_embedding_hub",
                         {{"tables", tables}, {"gradient_norm_correlations", corr}}}}
      .dump(indent);
}

std::string intervention_json(const EmbeddingIntervention& iv) {
  return nlohmann::json{{"time", number(iv.time)},
                        {"step", iv.step},
                        {"layer", iv.layer},
                        {"type", iv.type},
                        {"rows_affected", iv.rows_affected},
                        {"scale", {{"min", number(iv.scale_min)}, {"mean", number(iv.scale_mean)},
                                   {"max", number(iv.scale_max)}}},
                        {"snr_median", number(iv.snr_median)},
                        {"sample_rows", iv.sample_rows}}
      .dump();
}

AuditLog::AuditLog(const std::string& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  path_ = (std::filesystem::path(dir) / "audit.jsonl").string();
  out_.open(path_, std::ios::app);
  if (!out_) throw Error("audit log '" + path_ + "': cannot open for appending");
}

void AuditLog::append(const EmbeddingIntervention& intervention) {
  const std::string line = intervention_json(intervention);
  std::lock_guard<std::mutex> lock(mu_);
  out_ << line << '\n';
  out_.flush();
  if (!out_) throw Error("audit log '" + path_ + "': write failed");
}

}  // namespace gradscope
