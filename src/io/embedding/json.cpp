#include "gradscope/io/embedding/json.h"

#include <filesystem>

#include "gradscope/core/error.h"
#include "gradscope/io/store/run_documents.h"
#include "embedding/internal/codec.h"

namespace gradscope {

using internal::Json;
using internal::json_number;

std::string render_embedding_json(const EmbeddingReport& report, int indent) {
  return Json{{"gradscope_embedding_report", internal::report_to_json(report)}}.dump(indent, ' ', false,
                                                                                    Json::error_handler_t::replace);
}

std::string render_embedding_hub_json(const EmbeddingHubReport& report, int indent) {
  Json tables = Json::array(), corr = Json::array();
  for (const auto& t : report.tables) tables.push_back(internal::report_to_json(t));
  for (const auto& c : report.correlations) corr.push_back(internal::correlation_to_json(c));
  return Json{{"gradscope_embedding_hub", {{"tables", tables}, {"gradient_norm_correlations", corr}}}}
      .dump(indent, ' ', false, Json::error_handler_t::replace);
}

std::string intervention_json(const EmbeddingIntervention& iv) {
  return Json{{"time", json_number(iv.time)},
              {"step", iv.step},
              {"layer", iv.layer},
              {"type", iv.type},
              {"rows_affected", iv.rows_affected},
              {"scale", {{"min", json_number(iv.scale_min)},
                         {"mean", json_number(iv.scale_mean)},
                         {"max", json_number(iv.scale_max)}}},
              {"snr_median", json_number(iv.snr_median)},
              {"sample_rows", iv.sample_rows}}
      .dump(-1, ' ', false, Json::error_handler_t::replace);
}

AuditLog::AuditLog(const std::string& dir) : dir_(dir) {
  std::error_code ec;
  const std::filesystem::path run_db = std::filesystem::path(dir) / "run.db";
  if (std::filesystem::is_regular_file(run_db, ec)) {
    in_run_ = true;  // the log lives in run.db: one file is the whole run
    path_ = run_db.string();
    return;
  }
  std::filesystem::create_directories(dir, ec);
  path_ = (std::filesystem::path(dir) / "audit.jsonl").string();
  out_.open(path_, std::ios::app);
  if (!out_) throw Error("audit log '" + path_ + "': cannot open for appending");
}

void AuditLog::append(const EmbeddingIntervention& intervention) {
  const std::string line = intervention_json(intervention);
  std::lock_guard<std::mutex> lock(mu_);
  if (in_run_) return append_run_log(dir_, {line});
  out_ << line << '\n';
  out_.flush();
  if (!out_) throw Error("audit log '" + path_ + "': write failed");
}

}  // namespace gradscope
