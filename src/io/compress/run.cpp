// The compression rule's input from a saved run: its units.json document plus the run store's
// records; and the measured points (compression.json). Both are documents of the run
// (io/store/run_documents.h): inside run.db, or beside it in runs before schema 5.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gradscope/core/compress/rule.h"
#include "gradscope/core/error.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/store/run_reader.h"
#include "gradscope/io/store/run_documents.h"
#include "internal/json_field.h"
#include "internal/side_file.h"

namespace gradscope {
namespace fs = std::filesystem;

std::vector<compress::NodeProfile> load_run_compress_profile(const std::string& run) {
  const std::optional<RunDocument> units = read_run_document(run, "units.json", kMaxProfileBytes, "compression profile");
  if (!units)
    throw Error("run '" + run + "': no units.json (the per-unit profile the compression rule needs; "
                "gradscope::compress::profile_model and save_compress_profile write it after training)");
  std::vector<compress::NodeProfile> nodes = parse_compress_profile_json(units->text, units->where);
  RunReader reader(run);
  compress::RunDynamics dynamics;
  reader.for_each([&](const Record& r) { dynamics.add(r); });
  dynamics.fill(nodes);
  return nodes;
}

void save_compress_profile(const std::string& run, const std::vector<compress::NodeProfile>& nodes) {
  internal::save_document(run, "units.json", "compression profile", render_compress_profile_json(nodes));
}

}  // namespace gradscope

namespace gradscope {

void save_measured_comparison(const std::string& run, const compress::MeasuredComparison& c) {
  nlohmann::ordered_json points = nlohmann::ordered_json::array();
  for (const compress::MeasuredPoint& p : c.points)
    points.push_back({{"method", p.method}, {"budget", p.budget}, {"bytes", p.bytes},
                      {"accuracy", std::isfinite(p.accuracy) ? nlohmann::ordered_json(p.accuracy) : nlohmann::ordered_json()}});
  const nlohmann::ordered_json doc = {
      {"gradscope_compression_measured",
       {{"version", 1},
        {"model", c.model},
        {"fp32_accuracy", std::isfinite(c.fp32_accuracy) ? nlohmann::ordered_json(c.fp32_accuracy) : nlohmann::ordered_json()},
        {"fp32_bytes", c.fp32_bytes},
        {"points", points}}}};
  internal::save_document(run, "compression.json", "compression",
                          doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n");
}

std::optional<compress::MeasuredComparison> load_measured_comparison(const std::string& run) {
  const std::optional<RunDocument> text = read_run_document(run, "compression.json", kMaxMeasuredBytes, "compression");
  if (!text) return std::nullopt;
  const std::string& path = text->where;
  try {
    const nlohmann::ordered_json doc = internal::parse_bounded(text->text, 8, 1 << 16);
    const internal::Field root = internal::Field(doc).at("gradscope_compression_measured");
    if (root.at("version").count() != 1) root.at("version").fail("version is not 1");
    compress::MeasuredComparison c;
    c.model = root.at("model").string();
    c.fp32_accuracy = root.at("fp32_accuracy").number_in(0, 1);
    c.fp32_bytes = root.at("fp32_bytes").count();
    const internal::Field points = root.at("points");
    for (std::size_t i = 0; i < points.size(); ++i) {
      const internal::Field p = points.element(i);
      c.points.push_back({p.at("method").string(), p.at("budget").string(), p.at("bytes").count(),
                          p.at("accuracy").number_in(0, 1)});
    }
    return c;
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(path + ": not JSON (" + internal::parser_message(e) + ")");
  }
}

}  // namespace gradscope
