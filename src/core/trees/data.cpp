#include "gradscope/core/trees/data.h"

#include <random>

#include "gradscope/core/error.h"

namespace gradscope {

TreeData select_rows(const TreeData& data, const std::vector<std::size_t>& index) {
  TreeData out;
  out.cols = data.cols;
  out.rows = index.size();
  out.names = data.names;
  out.x.reserve(index.size() * data.cols);
  for (const std::size_t i : index) {
    GRADSCOPE_INTERNAL_ASSERT(i < data.rows);
    out.x.insert(out.x.end(), data.row(i), data.row(i) + data.cols);
    if (data.labelled()) out.y.push_back(data.y[i]);
  }
  return out;
}

std::pair<TreeData, TreeData> split_rows(const TreeData& data, double second_fraction,
                                         uint64_t seed) {
  if (!(second_fraction >= 0 && second_fraction <= 1))
    throw Error("split: fraction " + std::to_string(second_fraction) + " must be in [0, 1]");
  std::vector<std::size_t> order(data.rows);
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  // Fisher-Yates with the generator's raw output: std::shuffle and the distributions differ
  // between standard libraries, this does not.
  std::mt19937_64 gen(seed);
  for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[gen() % i]);
  const std::size_t second =
      static_cast<std::size_t>(second_fraction * static_cast<double>(data.rows) + 0.5);
  const std::vector<std::size_t> a(order.begin(),
                                   order.end() - static_cast<std::ptrdiff_t>(second));
  const std::vector<std::size_t> b(order.end() - static_cast<std::ptrdiff_t>(second), order.end());
  return {select_rows(data, a), select_rows(data, b)};
}

}  // namespace gradscope
