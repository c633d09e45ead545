// Metrics as XGBoost 1.7 defines them (src/metric/elementwise_metric.cu: LogLoss clips p to
// [1e-16, 1 - 1e-16]; multiclass_metric.cu: mlogloss = -log max(p_y, 1e-16); rmse), computed in
// double from the margins.
#include "gradscope/core/trees/loss.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

constexpr double kEps = 1e-16;

bool squared_error(const std::string& o) {
  static const char* const kNames[] = {"reg:squarederror",
                                       "reg:linear",  // XGBoost (reg:linear is the old name)
                                       "regression",
                                       "regression_l2",
                                       "l2",
                                       "mean_squared_error",
                                       "mse",
                                       "l2_root",
                                       "root_mean_squared_error",
                                       "rmse",   // LightGBM and its aliases
                                       "RMSE"};  // CatBoost
  for (const char* n : kNames)
    if (o == n) return true;
  return false;
}

// The objective's first word: LightGBM writes "binary sigmoid:1", CatBoost "RMSE:..." params.
std::string first_word(const std::string& o) {
  const std::size_t end = o.find_first_of(" :");
  // XGBoost names contain ':' ("reg:squarederror"): keep them whole.
  if (o.rfind("reg:", 0) == 0 || o.rfind("binary:", 0) == 0 || o.rfind("multi:", 0) == 0) return o;
  return o.substr(0, end);
}

double clipped_log(double p) { return std::log(std::min(std::max(p, kEps), 1.0 - kEps)); }

}  // namespace

const char* tree_loss_name(TreeLoss loss) {
  switch (loss) {
    case TreeLoss::kNone:
      return "";
    case TreeLoss::kLogLoss:
      return "logloss";
    case TreeLoss::kMLogLoss:
      return "mlogloss";
    case TreeLoss::kRmse:
      return "rmse";
  }
  return "";
}

TreeLoss tree_loss_of(const TreeEnsemble& m) {
  if (m.link == TreeLink::kSigmoid && m.num_outputs == 1) return TreeLoss::kLogLoss;
  if (m.objective == "binary:logitraw" && m.num_outputs == 1) return TreeLoss::kLogLoss;
  if (m.link == TreeLink::kSoftmax || m.link == TreeLink::kSoftmaxArgmax)
    return TreeLoss::kMLogLoss;
  if (m.link == TreeLink::kIdentity && m.num_outputs == 1 && squared_error(first_word(m.objective)))
    return TreeLoss::kRmse;
  return TreeLoss::kNone;
}

void check_tree_labels(const TreeEnsemble& m, TreeLoss loss, const TreeData& data,
                       const std::string& what) {
  if (!data.labelled()) return;
  for (std::size_t i = 0; i < data.y.size(); ++i) {
    const double y = data.y[i];
    auto bad = [&](const std::string& why) {
      throw Error(what + ": row " + std::to_string(i + 1) + ": label " + std::to_string(y) + " " +
                  why);
    };
    if (!std::isfinite(y)) bad("is not finite");
    if (loss == TreeLoss::kLogLoss && !(y >= 0 && y <= 1))
      bad("is outside [0, 1] (a binary model's logloss)");
    if (loss == TreeLoss::kMLogLoss && (y != std::floor(y) || y < 0 || y >= m.num_outputs))
      bad("is not a class of this " + std::to_string(m.num_outputs) + "-class model");
  }
}

double row_loss(const TreeEnsemble& m, TreeLoss loss, const double* raw, double y) {
  switch (loss) {
    case TreeLoss::kNone:
      return std::numeric_limits<double>::quiet_NaN();
    case TreeLoss::kLogLoss: {
      // In double from the margin, not from the library's float32 probability: XGBoost's
      // sigmoid rounds to exactly 1 past margin ~17, where its own metric then charges a
      // confident miss -log(1e-16) = 36.8 instead of the margin itself (docs/trees.md).
      const double scale = m.dialect == TreeDialect::kLightGBM ? m.sigmoid_scale : 1.0;
      const double p = 1.0 / (1.0 + std::exp(-scale * raw[0]));
      return -(y * clipped_log(p) + (1 - y) * clipped_log(1 - p));
    }
    case TreeLoss::kMLogLoss: {
      const std::size_t k = static_cast<std::size_t>(m.num_outputs);
      if (!(y >= 0 && y < static_cast<double>(k))) return std::numeric_limits<double>::quiet_NaN();
      const double top = *std::max_element(raw, raw + k);
      double sum = 0;
      for (std::size_t c = 0; c < k; ++c) sum += std::exp(raw[c] - top);
      return -clipped_log(std::exp(raw[static_cast<std::size_t>(y)] - top) / sum);
    }
    case TreeLoss::kRmse: {
      const double e = raw[0] - y;
      return e * e;
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double finish_loss(TreeLoss loss, double sum, std::size_t rows) {
  if (loss == TreeLoss::kNone || rows == 0) return std::numeric_limits<double>::quiet_NaN();
  const double mean = sum / static_cast<double>(rows);
  return loss == TreeLoss::kRmse ? std::sqrt(mean) : mean;
}

}  // namespace gradscope
