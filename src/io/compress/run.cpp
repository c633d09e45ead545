// The compression rule's input from a saved run: units.json plus the run store's records.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "gradscope/core/compress/rule.h"
#include "gradscope/core/error.h"
#include "gradscope/io/compress/json.h"
#include "gradscope/io/store/run_reader.h"
#include "internal/json_field.h"

namespace gradscope {
namespace fs = std::filesystem;

namespace {
fs::path run_dir(const std::string& run) {
  const fs::path p(run);
  return p.filename() == "run.db" ? p.parent_path() : p;
}
}  // namespace

std::vector<compress::NodeProfile> load_run_compress_profile(const std::string& run) {
  const fs::path units = run_dir(run) / "units.json";
  if (!fs::exists(units))
    throw Error("run '" + run + "': no units.json (the per-unit profile the compression rule needs; "
                "gradscope::compress::profile_model and save_compress_profile write it after training)");
  std::vector<compress::NodeProfile> nodes = load_compress_profile(units.string());
  RunReader reader(run);
  compress::RunDynamics dynamics;
  reader.for_each([&](const Record& r) { dynamics.add(r); });
  dynamics.fill(nodes);
  return nodes;
}

void save_compress_profile(const std::string& run, const std::vector<compress::NodeProfile>& nodes) {
  const fs::path path = run_dir(run) / "units.json";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << render_compress_profile_json(nodes);
  if (!out.flush()) throw Error("cannot write '" + path.string() + "'");
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
  const fs::path path = run_dir(run) / "compression.json";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << doc.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << "\n";
  if (!out.flush()) throw Error("cannot write '" + path.string() + "'");
}

std::optional<compress::MeasuredComparison> load_measured_comparison(const std::string& run) {
  const fs::path path = run_dir(run) / "compression.json";
  if (!fs::exists(path)) return std::nullopt;
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  if (!in) throw Error("cannot read '" + path.string() + "'");
  try {
    const nlohmann::ordered_json doc = internal::parse_bounded(text.str(), 8, 1 << 16);
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
    throw Error(path.string() + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(path.string() + ": not JSON (" + e.what() + ")");
  }
}

}  // namespace gradscope
