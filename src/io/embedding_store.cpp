#include "gradscope/io/embedding_store.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "gradscope/core/error.h"
#include "internal/embedding_codec.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using internal::Json;
using internal::json_number;
using internal::number_from_json;

constexpr int kVersion = 1;
constexpr const char* kFileName = "embedding.json";

Json histogram_to_json(const Histogram& h) {
  return {{"edges", h.edges}, {"counts", h.counts}, {"below", h.below}, {"nonfinite", h.nonfinite}};
}

Histogram histogram_from_json(const Json& j) {
  Histogram h;
  h.edges = j.at("edges").get<std::vector<double>>();
  h.counts = j.at("counts").get<std::vector<int64_t>>();
  h.below = j.at("below").get<int64_t>();
  h.nonfinite = j.at("nonfinite").get<int64_t>();
  if (!h.edges.empty() && h.edges.size() != h.counts.size() + 1)
    throw Error(std::to_string(h.edges.size()) + " histogram edges for " +
                std::to_string(h.counts.size()) + " bins");
  return h;
}

Json profile_to_json(const EmbeddingProfile& p) {
  Json lorenz = Json::array();
  for (const auto& [rows, exposure] : p.lorenz) lorenz.push_back({rows, exposure});
  return {{"layer", p.layer},
          {"num_embeddings", p.num_embeddings},
          {"exposed_rows", p.exposed_rows},
          {"lorenz", lorenz},
          {"popularity_gini", json_number(p.popularity_gini)},
          {"exposure", histogram_to_json(p.exposure)},
          {"velocity", histogram_to_json(p.velocity)},
          {"oscillation", histogram_to_json(p.oscillation)}};
}

EmbeddingProfile profile_from_json(const Json& j) {
  EmbeddingProfile p;
  p.layer = j.at("layer").get<std::string>();
  p.num_embeddings = j.at("num_embeddings").get<int64_t>();
  p.exposed_rows = j.at("exposed_rows").get<int64_t>();
  for (const Json& point : j.at("lorenz")) p.lorenz.emplace_back(point.at(0).get<double>(), point.at(1).get<double>());
  p.popularity_gini = number_from_json(j.at("popularity_gini"));
  p.exposure = histogram_from_json(j.at("exposure"));
  p.velocity = histogram_from_json(j.at("velocity"));
  p.oscillation = histogram_from_json(j.at("oscillation"));
  return p;
}

Json summary_to_json(const EmbeddingRunSummary& s) {
  Json tables = Json::array(), corr = Json::array();
  for (const EmbeddingTableSummary& t : s.tables)
    tables.push_back({{"report", internal::report_to_json(t.report)}, {"profile", profile_to_json(t.profile)}});
  for (const TowerCorrelation& c : s.correlations) corr.push_back(internal::correlation_to_json(c));
  return {{"gradscope_embedding_run",
           {{"version", kVersion}, {"tables", tables}, {"gradient_norm_correlations", corr}}}};
}

EmbeddingRunSummary summary_from_json(const Json& doc) {
  const Json& body = doc.at("gradscope_embedding_run");
  const int version = body.at("version").get<int>();
  if (version > kVersion)
    throw Error("version " + std::to_string(version) + " is newer than this gradscope reads (" +
                std::to_string(kVersion) + ")");
  EmbeddingRunSummary s;
  for (const Json& t : body.at("tables"))
    s.tables.push_back({internal::report_from_json(t.at("report")), profile_from_json(t.at("profile"))});
  for (const Json& c : body.at("gradient_norm_correlations"))
    s.correlations.push_back(internal::correlation_from_json(c));
  return s;
}

// The run directory of `dir`, which may name the run's run.db instead.
fs::path run_dir(const std::string& dir) {
  const fs::path p(dir);
  std::error_code ec;
  if (p.filename() == "run.db" || fs::is_regular_file(p, ec)) return p.parent_path();
  return p;
}

}  // namespace

void save_embedding_summary(const std::string& dir, const EmbeddingRunSummary& summary) {
  const fs::path folder = run_dir(dir), path = folder / kFileName;
  std::error_code ec;
  fs::create_directories(folder, ec);
  if (ec) throw Error("embedding summary '" + path.string() + "': cannot create the folder: " + ec.message());
  // Written beside the target, then renamed over it: a reader sees the old file or the new.
  const fs::path part = folder / (std::string(kFileName) + ".part" + std::to_string(getpid()));
  {
    std::ofstream out(part, std::ios::binary | std::ios::trunc);
    if (!out) throw Error("embedding summary '" + path.string() + "': cannot write: " + std::strerror(errno));
    out << summary_to_json(summary).dump(1) << '\n';
    out.close();
    if (!out) {
      fs::remove(part, ec);
      throw Error("embedding summary '" + path.string() + "': write failed");
    }
  }
  fs::rename(part, path, ec);
  if (ec) {
    fs::remove(part, ec);
    throw Error("embedding summary '" + path.string() + "': cannot replace: " + ec.message());
  }
}

std::optional<EmbeddingRunSummary> load_embedding_summary(const std::string& dir) {
  const fs::path path = run_dir(dir) / kFileName;
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("embedding summary '" + path.string() + "': cannot read: " + std::strerror(errno));
  std::stringstream text;
  text << in.rdbuf();
  try {
    return summary_from_json(Json::parse(text.str()));
  } catch (const Json::exception& e) {
    // nlohmann's messages start with "[json.exception.<kind>.<id>] ".
    const std::string what = e.what();
    const auto end = what.find("] ");
    throw Error("embedding summary '" + path.string() + "': malformed: " +
                (end == std::string::npos ? what : what.substr(end + 2)));
  } catch (const Error& e) {
    throw Error("embedding summary '" + path.string() + "': " + e.what());
  }
}

}  // namespace gradscope
