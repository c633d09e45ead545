#include "internal/objective_names.h"

#include <cstdlib>

namespace gradscope::trees_internal {

LightGBMObjective lightgbm_objective(std::string_view value) {
  LightGBMObjective o;
  std::size_t i = 0;
  bool first = true;
  while (i < value.size()) {
    const std::size_t end = std::min(value.find(' ', i), value.size());
    const std::string_view word = value.substr(i, end - i);
    i = end + 1;
    if (word.empty()) continue;
    if (first) {
      o.name = std::string(word);
      first = false;
    } else if (word.substr(0, 8) == "sigmoid:") {
      const std::string s(word.substr(8));
      char* stop = nullptr;
      const double v = std::strtod(s.c_str(), &stop);
      if (!s.empty() && stop == s.c_str() + s.size() && v > 0 && v < 1e300) o.sigmoid = v;
    }
  }
  const std::string& n = o.name;
  if (n == "binary" || n == "cross_entropy" || n == "xentropy" || n == "multiclassova" ||
      n == "multiclass_ova" || n == "ova" || n == "ovr")
    o.link = TreeLink::kSigmoid;
  else if (n == "multiclass" || n == "softmax")
    o.link = TreeLink::kSoftmax;
  else if (n == "cross_entropy_lambda" || n == "xentlambda")
    o.link = TreeLink::kLog1pExp;
  else if (n == "poisson" || n == "gamma" || n == "tweedie")
    o.link = TreeLink::kExp;
  if (n == "cross_entropy" || n == "xentropy") o.sigmoid = 1;  // always the plain logistic
  return o;
}

TreeLink catboost_link(const std::string& loss) {
  if (loss == "Logloss" || loss == "CrossEntropy" || loss == "MultiClassOneVsAll")
    return TreeLink::kSigmoid;
  if (loss == "MultiClass") return TreeLink::kSoftmax;
  if (loss == "Poisson" || loss == "Tweedie") return TreeLink::kExp;
  return TreeLink::kIdentity;
}

}  // namespace gradscope::trees_internal
