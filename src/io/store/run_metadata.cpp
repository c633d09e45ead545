#include "gradscope/io/store/run_metadata.h"

#include <climits>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <utility>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

// Every threshold by name; a pointer-to-member table keeps both directions in one place.
struct DoubleField {
  const char* name;
  double Thresholds::*member;
};
constexpr DoubleField kDoubleFields[] = {
    {"grad_lo", &Thresholds::grad_lo},
    {"grad_hi", &Thresholds::grad_hi},
    {"activation_saturation", &Thresholds::activation_saturation},
    {"saturation_frac", &Thresholds::saturation_frac},
    {"dead_eps", &Thresholds::dead_eps},
    {"dead_frac", &Thresholds::dead_frac},
    {"update_ratio_lo", &Thresholds::update_ratio_lo},
    {"leakage_cka", &Thresholds::leakage_cka},
    {"channel_frac", &Thresholds::channel_frac},
    {"ignored_channel_ratio", &Thresholds::ignored_channel_ratio},
    {"zombie_z", &Thresholds::zombie_z},
    {"zombie_damping", &Thresholds::zombie_damping},
    {"zombie_min_exposure", &Thresholds::zombie_min_exposure},
    {"zombie_oscillation", &Thresholds::zombie_oscillation},
    {"zombie_velocity_ratio", &Thresholds::zombie_velocity_ratio},
    {"velocity_ema", &Thresholds::velocity_ema},
    {"oscillation_ema", &Thresholds::oscillation_ema},
    {"flow_critical_ratio", &Thresholds::flow_critical_ratio},
    {"flow_problems_ratio", &Thresholds::flow_problems_ratio},
    {"flow_minor_ratio", &Thresholds::flow_minor_ratio},
};

}  // namespace

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
  for (const DoubleField& f : kDoubleFields) j[f.name] = t.*(f.member);
  j["stagnant_steps"] = t.stagnant_steps;
  j["zombie_window"] = t.zombie_window;
  return j.dump();
}

Thresholds thresholds_from_json(const std::string& json) {
  Thresholds t;
  const nlohmann::json j = nlohmann::json::parse(json, nullptr, false);
  if (!j.is_object()) throw Error("thresholds are not a json object");
  // Keys this build does not know are a newer writer's; known ones must be what they say.
  for (const DoubleField& f : kDoubleFields) {
    auto it = j.find(f.name);
    if (it == j.end()) continue;
    if (!it->is_number()) throw Error(std::string("threshold '") + f.name + "' is not a number");
    t.*(f.member) = it->get<double>();
  }
  for (const auto& [key, member] : {std::pair<const char*, int Thresholds::*>{"stagnant_steps", &Thresholds::stagnant_steps},
                                     {"zombie_window", &Thresholds::zombie_window}}) {
    auto it = j.find(key);
    if (it == j.end()) continue;
    const bool fits = it->is_number_unsigned()
                          ? it->get<uint64_t>() <= uint64_t{INT_MAX}
                          : it->is_number_integer() && it->get<int64_t>() >= INT_MIN && it->get<int64_t>() <= INT_MAX;
    if (!fits) throw Error(std::string("threshold '") + key + "' is not an integer of int's range");
    t.*member = static_cast<int>(it->get<int64_t>());
  }
  t.validate();
  return t;
}

}  // namespace gradscope
