// EmbeddingHub: several tables stepped together, and their gradient-norm correlations.
#include <cmath>
#include <map>

#include "gradscope/core/embedding_math.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/embedding.h"

namespace gradscope::torch {

EmbeddingTracker& EmbeddingHub::track(std::shared_ptr<::torch::nn::Module> module,
                                      std::string layer, EmbeddingTrackerOptions options) {
  for (const auto& t : trackers_)
    if (t->layer() == layer) throw Error("embedding hub: layer '" + layer + "' tracked twice");
  trackers_.push_back(
      std::make_unique<EmbeddingTracker>(std::move(module), std::move(layer), std::move(options)));
  return *trackers_.back();
}

EmbeddingTracker& EmbeddingHub::operator[](const std::string& layer) {
  for (const auto& t : trackers_)
    if (t->layer() == layer) return *t;
  throw Error("embedding hub: no table '" + layer + "'");
}

void EmbeddingHub::step(::torch::optim::Optimizer& optimizer) {
  step([&] { optimizer.step(); });
}

void EmbeddingHub::step(const std::function<void()>& apply_update) {
  for (auto& t : trackers_) t->before_step();
  apply_update();
  for (auto& t : trackers_) t->after_step();
}

EmbeddingHubReport EmbeddingHub::report() const {
  // Each tracker's own thresholds, zombie rule and sampler: a hub must not judge a table
  // differently from the same tracker on its own.
  EmbeddingHubReport out;
  for (const auto& t : trackers_) out.tables.push_back(t->report());
  return with_correlations(std::move(out));
}

EmbeddingHubReport EmbeddingHub::report(const EmbeddingRuleOptions& rules) const {
  EmbeddingHubReport out;
  for (const auto& t : trackers_) out.tables.push_back(t->report(rules));
  return with_correlations(std::move(out));
}

EmbeddingHubReport EmbeddingHub::with_correlations(EmbeddingHubReport out) const {
  for (std::size_t i = 0; i < trackers_.size(); ++i) {
    std::map<int64_t, double> a;
    for (const auto& [step, norm] : trackers_[i]->gradient_norms())
      if (std::isfinite(norm)) a[step] = norm;
    for (std::size_t j = i + 1; j < trackers_.size(); ++j) {
      std::vector<double> x, y;  // steps where both tables measured a gradient
      for (const auto& [step, norm] : trackers_[j]->gradient_norms()) {
        auto it = a.find(step);
        if (it != a.end() && std::isfinite(norm)) x.push_back(it->second), y.push_back(norm);
      }
      out.correlations.push_back({trackers_[i]->layer(), trackers_[j]->layer(), pearson(x, y),
                                  static_cast<int64_t>(x.size())});
    }
  }
  return out;
}

}  // namespace gradscope::torch
