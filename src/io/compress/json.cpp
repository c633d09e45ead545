#include "gradscope/io/compress/json.h"

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>
#include <unordered_map>
#include <unordered_set>

#include "gradscope/core/error.h"
#include "internal/json_field.h"

namespace gradscope {
namespace {

using Json = nlohmann::ordered_json;
using internal::Field;
using namespace compress;

Json number(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

std::vector<double> numbers(const Field& f) {
  std::vector<double> out;
  for (std::size_t i = 0; i < f.size(); ++i) out.push_back(f.element(i).number_from(0));
  return out;
}

Json parse(const std::string& text, const std::string& source) {
  try {
    return internal::parse_bounded(text, 16, 1 << 16);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  } catch (const std::exception& e) {
    throw Error(source + ": not JSON (" + internal::parser_message(e) + ")");
  }
}

std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(std::string("cannot open ") + what + " '" + path + "'");
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

std::string render_recipe_json(const Recipe& r, int indent) {
  Json nodes = Json::array();
  for (const NodeDecision& d : r.nodes)
    nodes.push_back({{"node", d.node},
                     {"weight_shape", d.weight_shape},
                     {"bias", d.bias},
                     {"next", d.next},
                     {"next_fan", d.next_fan},
                     {"precision", precision_name(d.precision)},
                     {"pruned_units", d.pruned_units},
                     {"bytes", d.bytes},
                     {"predicted_loss", number(d.predicted_loss)},
                     {"premise", d.premise},
                     {"action", d.action},
                     {"expected_effect", d.expected_effect}});
  const Json doc = {{"gradscope_compression_recipe",
                     {{"version", 1},
                      {"method", r.method},
                      {"budget_bytes", r.budget_bytes},
                      {"max_loss", number(r.max_loss)},
                      {"bytes", r.bytes},
                      {"fp32_bytes", r.fp32_bytes},
                      {"predicted_loss", number(r.predicted_loss)},
                      {"magnitude_keep", r.magnitude_keep},
                      {"nodes", nodes}}}};
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n";
}

Recipe parse_recipe_json(const std::string& text, const std::string& source) {
  const Json doc = parse(text, source);
  try {
    const Field root = Field(doc).at("gradscope_compression_recipe");
    if (root.at("version").count() != 1) root.at("version").fail("version is not 1");
    Recipe r;
    r.method = root.at("method").string();
    r.budget_bytes = root.at("budget_bytes").count();
    r.max_loss = root.at("max_loss").number_from(0);
    r.predicted_loss = root.at("predicted_loss").number();
    r.magnitude_keep = root.at("magnitude_keep").number_in(0, 1);
    const Field nodes = root.at("nodes");
    std::unordered_map<std::string, std::size_t> seen;  // node -> its index: applied once each
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Field n = nodes.element(i);
      NodeDecision d;
      d.node = n.at("node").string();
      if (const auto [at, fresh] = seen.emplace(d.node, i); !fresh)
        n.at("node").fail("'" + d.node + "' is also nodes[" + std::to_string(at->second) + "] (a node is decided once)");
      d.weight_shape = n.at("weight_shape").counts();
      for (int64_t s : d.weight_shape)
        if (s < 1) n.at("weight_shape").fail("a dimension is < 1");
      if (d.weight_shape.empty()) n.at("weight_shape").fail("is empty");
      d.bias = n.at("bias").count();
      d.next = n.at("next").string();
      d.next_fan = n.at("next_fan").count();
      try {
        d.precision = parse_precision(n.at("precision").string());
      } catch (const Error& e) {
        n.at("precision").fail(e.what());
      }
      d.pruned_units = n.at("pruned_units").counts();
      std::unordered_set<int64_t> units;
      for (int64_t j : d.pruned_units) {
        if (j >= d.weight_shape[0])
          n.at("pruned_units").fail("unit " + std::to_string(j) + " is not in 0.." + std::to_string(d.weight_shape[0] - 1));
        if (!units.insert(j).second) n.at("pruned_units").fail("unit " + std::to_string(j) + " is listed twice");
      }
      if (static_cast<int64_t>(d.pruned_units.size()) >= d.weight_shape[0])
        n.at("pruned_units").fail("prunes every unit");
      d.predicted_loss = n.at("predicted_loss").number();
      d.premise = n.at("premise").string();
      d.action = n.at("action").string();
      d.expected_effect = n.at("expected_effect").string();
      r.nodes.push_back(std::move(d));
    }
    recompute_bytes(r);  // sizes are computed, never taken from the file
    return r;
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

std::string render_compress_profile_json(const std::vector<NodeProfile>& nodes, int indent) {
  Json out = Json::array();
  auto list = [](const std::vector<double>& v) {
    Json a = Json::array();
    for (double x : v) a.push_back(number(x));
    return a;
  };
  for (const NodeProfile& p : nodes)
    out.push_back({{"node", p.node},
                   {"weight_shape", p.weight_shape},
                   {"bias", p.bias},
                   {"next", p.next},
                   {"next_fan", p.next_fan},
                   {"batch", p.batch},
                   {"positions", p.positions},
                   {"act_sq", list(p.act_sq)},
                   {"out_grad_sq", list(p.out_grad_sq)},
                   {"zero_frac", list(p.zero_frac)},
                   {"max_abs", list(p.max_abs)},
                   {"weight_sq", list(p.weight_sq)}});
  const Json doc = {{"gradscope_compression_profile", {{"version", 1}, {"nodes", out}}}};
  return doc.dump(indent, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::vector<NodeProfile> parse_compress_profile_json(const std::string& text, const std::string& source) {
  const Json doc = parse(text, source);
  std::vector<NodeProfile> out;
  try {
    const Field root = Field(doc).at("gradscope_compression_profile");
    if (root.at("version").count() != 1) root.at("version").fail("version is not 1");
    const Field nodes = root.at("nodes");
    for (std::size_t i = 0; i < nodes.size(); ++i) {
      const Field n = nodes.element(i);
      NodeProfile p;
      p.node = n.at("node").string();
      p.weight_shape = n.at("weight_shape").counts();
      p.bias = n.at("bias").count();
      p.next = n.at("next").string();
      p.next_fan = n.at("next_fan").count();
      p.batch = n.at("batch").count();
      // The rule scales every statistic by the batch: 0 would silently zero them all.
      if (p.batch < 1) n.at("batch").fail("must be at least 1 (samples per step), got " + std::to_string(p.batch));
      p.positions = n.at("positions").count();
      p.act_sq = numbers(n.at("act_sq"));
      p.out_grad_sq = numbers(n.at("out_grad_sq"));
      // A channel view measures the output gradient with the activation (profile_model keeps
      // activations without gradients when a step had none, never the reverse): gradients
      // alone are not a profile gradscope wrote.
      if (p.act_sq.empty() && !p.out_grad_sq.empty())
        n.at("act_sq").fail("is empty while out_grad_sq is not (a channel view measures the activation first)");
      p.zero_frac = numbers(n.at("zero_frac"));
      for (std::size_t j = 0; j < p.zero_frac.size(); ++j)
        if (!(p.zero_frac[j] <= 1.0)) n.at("zero_frac").element(j).fail("is not in 0..1");
      p.max_abs = numbers(n.at("max_abs"));
      p.weight_sq = numbers(n.at("weight_sq"));
      out.push_back(std::move(p));
    }
    check_profiles(out);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
  return out;
}

std::vector<NodeProfile> load_compress_profile(const std::string& path) {
  return parse_compress_profile_json(read_file(path, "compression profile"), path);
}

Recipe load_recipe(const std::string& path) { return parse_recipe_json(read_file(path, "recipe"), path); }

}  // namespace gradscope
