#include "gradscope/io/store/run_metadata.h"

#include <climits>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "gradscope/core/error.h"

namespace gradscope {

std::string run_database_path(const std::string& run) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::is_regular_file(run, ec)) return run;
  return (fs::path(run) / "run.db").string();
}

std::string utc_now_iso8601() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string thresholds_to_json(const Thresholds& t) {
  nlohmann::json j = nlohmann::json::object();
  for (const ThresholdField<Thresholds>& f : threshold_fields())
    j[f.name] = f.is_integer() ? nlohmann::json(t.*(f.integer)) : nlohmann::json(t.*(f.real));
  return j.dump();
}

Thresholds thresholds_from_json(const std::string& json) {
  Thresholds t;
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) throw Error("thresholds are not a json object");
  // Keys this build does not know are a newer writer's; known ones must be what they say.
  for (const ThresholdField<Thresholds>& f : threshold_fields()) {
    auto it = j.find(f.name);
    if (it == j.end()) continue;
    if (f.is_integer()) {
      const bool fits = it->is_number_unsigned()
                            ? it->get<uint64_t>() <= uint64_t{INT_MAX}
                            : it->is_number_integer() && it->get<int64_t>() >= INT_MIN && it->get<int64_t>() <= INT_MAX;
      if (!fits) throw Error(std::string("threshold '") + f.name + "' is not an integer of int's range");
      t.*(f.integer) = static_cast<int>(it->get<int64_t>());
    } else {
      if (!it->is_number()) throw Error(std::string("threshold '") + f.name + "' is not a number");
      t.*(f.real) = it->get<double>();
    }
  }
  t.validate();
  return t;
}

}  // namespace gradscope
