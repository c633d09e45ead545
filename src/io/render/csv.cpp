#include "gradscope/io/render/csv.h"

#include <cmath>
#include <cstdio>

namespace gradscope {
namespace {

std::string number(double v) { return csv_number(v); }

}  // namespace

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string render_csv(const Report& report) {
  std::string out =
      "node,steps,first_step,last_step,act_mean_abs,act_std,out_grad_l2,param_grad_l2,param_l2,"
      "grad_param_ratio,update_ratio,grad_snr,effective_rank,dead_channels,ignored_channels,nan,inf,"
      "flags\n";
  for (const NodeReport& n : report.nodes) {
    out += csv_field(n.node) + "," + std::to_string(n.steps) + "," + std::to_string(n.first_step) +
           "," + std::to_string(n.last_step) + "," + number(n.act_mean_abs) + "," +
           number(n.act_std) + "," + number(n.out_grad_l2) + "," + number(n.param_grad_l2) + "," +
           number(n.param_l2) + "," + number(n.grad_param_ratio) + "," + number(n.update_ratio) +
           "," + number(n.grad_snr) + "," + number(n.effective_rank) + "," +
           std::to_string(n.dead_channels) + "," + std::to_string(n.ignored_channels) + "," +
           std::to_string(n.nan) +
           "," + std::to_string(n.inf) + "," + n.flags_label(";") + "\n";
  }
  return out;
}

}  // namespace gradscope
