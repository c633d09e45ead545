#include "gradscope/io/render/flow_export.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "gradscope/io/render/csv.h"
#include "gradscope/io/render/safe_text.h"

namespace gradscope {
namespace {

nlohmann::ordered_json number(double v) { return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(); }

std::string dump(const nlohmann::ordered_json& j) {
  // Replace rather than throw on invalid UTF-8 in node names.
  return json_text(j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
}

}  // namespace

std::string render_frames_json(const Timeline& timeline) {
  std::string out = "[";
  bool first = true;
  for (const Frame& f : timeline.frames()) {
    nlohmann::ordered_json layers = nlohmann::ordered_json::array();
    for (const FlowEntry& e : f.layers) {
      layers.push_back({{"name", timeline.nodes()[e.node]},
                        {"mean_abs_grad", number(e.mean_abs_grad)},
                        {"max_abs_grad", number(e.max_abs_grad)},
                        {"grad_norm", number(e.grad_norm)},
                        {"is_vanishing", e.is_vanishing},
                        {"is_exploding", e.is_exploding},
                        {"flow_intensity", number(e.flow_intensity)}});
    }
    out += first ? "\n" : ",\n";
    first = false;
    out += dump({{"step", f.step}, {"layers", layers}});
  }
  return out + "\n]\n";
}

std::string render_frames_csv(const Timeline& timeline) {
  std::string out = "step,layer,mean_abs_grad,max_abs_grad,grad_norm,is_vanishing,is_exploding\n";
  for (const Frame& f : timeline.frames()) {
    for (const FlowEntry& e : f.layers) {
      out += std::to_string(f.step) + "," + csv_field(timeline.nodes()[e.node]) + "," +
             csv_number(e.mean_abs_grad) + "," + csv_number(e.max_abs_grad) + "," + csv_number(e.grad_norm) +
             "," + (e.is_vanishing ? "1" : "0") + "," + (e.is_exploding ? "1" : "0") + "\n";
    }
  }
  return out;
}

std::string record_jsonl(const Record& r) {
  const Stats& s = r.stats;
  nlohmann::ordered_json j = {{"step", r.step},         {"node", r.node},
                      {"site", site_name(r.site)}, {"count", s.count},
                      {"finite", s.finite},     {"nan", s.nan},
                      {"pos_inf", s.pos_inf},   {"neg_inf", s.neg_inf},
                      {"zero", s.zero},         {"saturated", s.saturated},
                      {"sum", number(s.sum)},   {"sum_sq", number(s.sum_sq)},
                      {"sum_abs", number(s.sum_abs)}, {"min", number(s.min)},
                      {"max", number(s.max)},   {"max_abs", number(s.max_abs)}};
  return dump(j) + "\n";
}

}  // namespace gradscope
