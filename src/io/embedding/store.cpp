#include "gradscope/io/embedding/store.h"

#include <cmath>
#include <filesystem>

#include "gradscope/core/error.h"
#include "embedding/internal/codec.h"
#include "internal/side_file.h"

namespace gradscope {
namespace {

namespace fs = std::filesystem;
using internal::Field;
using internal::Json;
using internal::json_number;
using internal::shown;

constexpr int kVersion = 1;
constexpr const char* kFileName = "embedding.json";
// Nesting and object sizes this format never exceeds (it nests 9 deep; its largest object, a
// table's statistics, has 16 members), refused while parsing.
constexpr int kMaxDepth = 16;
constexpr std::size_t kMaxMembers = 64;

Json histogram_to_json(const Histogram& h) {
  return {{"edges", h.edges}, {"counts", h.counts}, {"below", h.below}, {"nonfinite", h.nonfinite}};
}

// Edges that bound every bin, ascending and finite (above 0 on a log axis), or no edges and no
// bins; counts as exact integers. The charts draw bin i over [edges[i], edges[i + 1]).
Histogram histogram_from_json(const Field& j, bool log_axis) {
  Histogram h;
  const Field edges = j.at("edges");
  h.edges.resize(edges.size());
  for (std::size_t i = 0; i < h.edges.size(); ++i) {
    const Field edge = edges.element(i);
    h.edges[i] = edge.finite();
    if (log_axis && !(h.edges[i] > 0)) edge.fail("must be above 0 (a log axis), got " + shown(edge.json()));
    if (i > 0 && h.edges[i] < h.edges[i - 1])
      edge.fail(shown(edge.json()) + " is below the edge before it, " + shown(edges.element(i - 1).json()));
  }
  h.counts = j.at("counts").counts();
  h.below = j.at("below").count();
  h.nonfinite = j.at("nonfinite").count();
  if (h.counts.empty() ? !h.edges.empty() : h.edges.size() != h.counts.size() + 1)
    j.fail(std::to_string(h.edges.size()) + " histogram edges for " + std::to_string(h.counts.size()) + " bins");
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

// A Lorenz share: a finite number in [0, 1] (up to rounding).
double share(const Field& point, std::size_t i, const char* what) {
  const Field v = point.element(i);
  const double x = v.json().is_number() ? v.json().get<double>() : NAN;
  if (!(x >= -Field::kRounding && x <= 1 + Field::kRounding))
    point.fail(std::string(what) + " must be from 0 to 1, got " + shown(v.json()));
  return x;
}

// (share of rows, share of exposures) pairs, rows strictly increasing, exposures not
// decreasing (up to rounding).
std::vector<std::pair<double, double>> lorenz_from_json(const Field& j) {
  std::vector<std::pair<double, double>> curve(j.size());
  for (std::size_t i = 0; i < curve.size(); ++i) {
    const Field point = j.element(i);
    if (point.size() != 2) point.fail("must be [share of rows, share of exposures]");
    curve[i] = {share(point, 0, "share of rows"), share(point, 1, "share of exposures")};
    if (i == 0) continue;
    if (!(curve[i].first > curve[i - 1].first))
      point.fail("share of rows " + shown(point.element(0).json()) + " is not above the point before it, " +
                 shown(j.element(i - 1).element(0).json()));
    if (curve[i].second < curve[i - 1].second - Field::kRounding)
      point.fail("share of exposures " + shown(point.element(1).json()) + " is below the point before it, " +
                 shown(j.element(i - 1).element(1).json()));
  }
  return curve;
}

EmbeddingProfile profile_from_json(const Field& j) {
  EmbeddingProfile p;
  p.layer = j.at("layer").string();
  p.num_embeddings = j.at("num_embeddings").count();
  p.exposed_rows = j.at("exposed_rows").count();
  p.lorenz = lorenz_from_json(j.at("lorenz"));
  p.popularity_gini = j.at("popularity_gini").number_in(0, 1);
  p.exposure = histogram_from_json(j.at("exposure"), true);
  p.velocity = histogram_from_json(j.at("velocity"), true);
  p.oscillation = histogram_from_json(j.at("oscillation"), false);
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

// The whole document checked, field by field: every reader (report, html, ls) gets a summary
// whose counts are counts and whose histograms and curves can be drawn, or an Error naming the
// first bad field.
EmbeddingRunSummary summary_from_json(const Json& doc) {
  const Field body = Field(doc).at("gradscope_embedding_run");
  const Field version = body.at("version");
  if (version.count() < 1) version.fail("must be at least 1, got " + shown(version.json()));
  if (version.count() > kVersion)
    version.fail(std::to_string(version.count()) + " is newer than this gradscope reads (" + std::to_string(kVersion) + ")");
  EmbeddingRunSummary s;
  const Field tables = body.at("tables");
  for (std::size_t i = 0; i < tables.size(); ++i)
    s.tables.push_back({internal::report_from_json(tables.element(i).at("report")),
                        profile_from_json(tables.element(i).at("profile"))});
  const Field correlations = body.at("gradient_norm_correlations");
  for (std::size_t i = 0; i < correlations.size(); ++i)
    s.correlations.push_back(internal::correlation_from_json(correlations.element(i)));
  return s;
}


}  // namespace

void save_embedding_summary(const std::string& dir, const EmbeddingRunSummary& summary) {
  const Json doc = summary_to_json(summary);
  // What load would refuse is not written: a document gradscope wrote always loads.
  try {
    summary_from_json(doc);
  } catch (const Error& e) {
    throw Error(internal::document_where(dir, kFileName, "embedding") + ": " + e.what());
  }
  // A table name need not be UTF-8 in C++: replaced (U+FFFD), never an exception mid-save.
  internal::save_document(dir, kFileName, "embedding", doc.dump(1, ' ', false, Json::error_handler_t::replace) + "\n");
}

std::optional<EmbeddingRunSummary> load_embedding_summary(const std::string& dir) {
  const auto doc = internal::read_document_json(dir, kFileName, "embedding", kMaxEmbeddingFileBytes, kMaxDepth,
                                                kMaxMembers);
  if (!doc) return std::nullopt;
  try {
    return summary_from_json(doc->json);
  } catch (const Error& e) {
    throw Error(doc->where + ": " + e.what());
  }
}

}  // namespace gradscope
