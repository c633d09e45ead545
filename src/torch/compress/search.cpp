#include "gradscope/torch/compress/search.h"

#include <torch/utils.h>

#include <ATen/ATen.h>

#include <cmath>
#include <optional>

#include "gradscope/core/error.h"
#include "gradscope/torch/compress/apply_recipe.h"

namespace gradscope::compress {
namespace {

// Puts every parameter back as it was when constructed, on every way out of a probe.
class Restore {
 public:
  explicit Restore(::torch::nn::Module& model) : params_(model.parameters()) {
    ::torch::NoGradGuard no_grad;
    for (const at::Tensor& p : params_) saved_.push_back(p.detach().clone());
  }
  void now() {
    ::torch::NoGradGuard no_grad;
    for (std::size_t i = 0; i < params_.size(); ++i) params_[i].detach().copy_(saved_[i]);
  }

 private:
  std::vector<at::Tensor> params_, saved_;
};

}  // namespace

MeasuredSearch search_max_loss(::torch::nn::Module& model, const std::vector<NodeProfile>& profiles, double max_loss,
                               const std::function<double()>& evaluate, Metric metric, const SearchOptions& options) {
  Restore weights(model);
  std::optional<double> reference;  // measured on the first probe: a bad bound measures nothing
  auto measure = [&](const Recipe& recipe) {
    if (!reference) {
      reference = evaluate();
      if (!std::isfinite(*reference))
        throw Error("measured maximum loss: the validation measurement of the model as given is " +
                    std::to_string(*reference));
    }
    struct Guard {
      Restore& r;
      ~Guard() { r.now(); }
    } guard{weights};
    compress::apply(model, recipe);
    const double v = evaluate();
    return metric == Metric::kAccuracy ? *reference - v : v - *reference;
  };
  return search_max_loss(profiles, max_loss, measure, options);
}

}  // namespace gradscope::compress
