// EmbeddingHub: several tables stepped together, and their gradient-norm correlations.
#include <algorithm>
#include <cmath>
#include <map>

#include "embedding/state.h"
#include "gradscope/core/embedding/math.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/embedding/tracker.h"

namespace gradscope::torch {

// Tables that share a process group merge through one EmbeddingRankMerge, in one collective a
// step: a hub of N tables on one group costs the latency of one allgather, not N.
struct EmbeddingHub::Groups {
  struct Group {
    c10d::ProcessGroup* group;  // the key: the trackers' options hold it alive
    EmbeddingRankMerge merge;
    std::vector<EmbeddingTracker*> tables;  // in the order tracked, the same on every rank
    std::vector<RanksTable*> parts;         // their parts of the merge (kept: no allocation a step)
  };
  std::vector<Group> list;
};

EmbeddingHub::EmbeddingHub() : groups_(std::make_unique<Groups>()) {}
EmbeddingHub::~EmbeddingHub() = default;
EmbeddingHub::EmbeddingHub(EmbeddingHub&&) noexcept = default;
EmbeddingHub& EmbeddingHub::operator=(EmbeddingHub&&) noexcept = default;

EmbeddingTracker& EmbeddingHub::track(std::shared_ptr<::torch::nn::Module> module,
                                      std::string layer, EmbeddingTrackerOptions options) {
  for (const auto& t : trackers_)
    if (t->layer() == layer) throw Error("embedding hub: layer '" + layer + "' tracked twice");
  trackers_.push_back(
      std::make_unique<EmbeddingTracker>(std::move(module), std::move(layer), std::move(options)));
  EmbeddingTracker& t = *trackers_.back();
  if (const ProcessGroupPtr& pg = t.state_->options.process_group) {
    auto it = std::find_if(groups_->list.begin(), groups_->list.end(),
                           [&](const Groups::Group& g) { return g.group == pg.get(); });
    if (it == groups_->list.end()) it = groups_->list.insert(groups_->list.end(), {pg.get(), EmbeddingRankMerge(pg), {}, {}});
    it->tables.push_back(&t);
    it->parts.push_back(&t.state_->ranks_part);
  }
  return t;
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
  // Each tracker's before_step() in three parts, so that every table of a group is ready before
  // the group's one collective.
  for (auto& t : trackers_) t->state_->begin_step();
  for (Groups::Group& g : groups_->list) {
    bool any = false;
    for (EmbeddingTracker* t : g.tables) {
      t->state_->prepare_merge();
      any = any || t->state_->tracking;
    }
    // Untracked tables still travel (no rows, their step): the buffer's size must not depend on
    // which tables a rank tracks at this step. A step that tracks none of them makes none.
    if (!any) continue;
    g.merge.merge(g.parts);
    for (EmbeddingTracker* t : g.tables) t->state_->merged();
  }
  for (auto& t : trackers_)
    if (t->state_->tracking) t->state_->finish_before_step();
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
