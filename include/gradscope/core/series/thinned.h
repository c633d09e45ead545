// ThinnedList: the values of one series kept for drawing in bounded memory, evenly spread: once
// it holds 2 x max values, every other one goes and only every other later one is kept, so a
// run of a million steps draws as well as a short one, in the same memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace gradscope {

template <class T>
class ThinnedList {
 public:
  void add(T value, std::size_t max) {
    // Value i is kept when i is a multiple of the stride: after a halving the kept ones are
    // still values 0, stride, 2 stride, ...
    if (seen_++ % stride_ != 0) return;
    kept_.push_back(std::move(value));
    if (kept_.size() < 2 * max) return;
    std::size_t w = 0;
    for (std::size_t r = 0; r < kept_.size(); r += 2, ++w)
      if (w != r) kept_[w] = std::move(kept_[r]);
    kept_.resize(w);
    stride_ *= 2;
  }
  const std::vector<T>& kept() const { return kept_; }

 private:
  std::vector<T> kept_;
  int64_t seen_ = 0, stride_ = 1;
};

}  // namespace gradscope
