#include "gradscope/core/audit/element_histogram.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>

namespace gradscope {
namespace {

// The positive limits (1e-12 x 1.1^k below 1e20, then DBL_MAX) and, for each key of a double
// (its 11 exponent bits and the top 4 bits of its mantissa: a slice of an octave whose ends
// are 2^(1/16) = 1.044 apart, less than the limits' ratio of 1.1), how many limits lie below
// the slice. A slice holds at most one limit, so a value's bucket is one table read and one
// comparison, with no branch to mispredict (a search over all 1,551 limits takes 11).
constexpr int kKeyBits = 15;

struct Layout {
  std::vector<double> positive;
  std::vector<double> all;
  std::vector<uint16_t> below_slice;
};

const Layout& layout() {
  static const Layout l = [] {
    Layout l;
    // TensorFlow's histogram.cc (InitDefaultBucketsInner): a 10% ratio between limits keeps
    // every bucket's relative width the same from 1e-12 to 1e20, so one layout serves any scale.
    for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) l.positive.push_back(v);
    l.positive.push_back(DBL_MAX);
    for (auto it = l.positive.rbegin(); it != l.positive.rend(); ++it) l.all.push_back(-*it);
    l.all.push_back(0.0);
    l.all.insert(l.all.end(), l.positive.begin(), l.positive.end());
    l.below_slice.resize(std::size_t{1} << kKeyBits);
    for (uint64_t key = 0; key < l.below_slice.size(); ++key) {
      const uint64_t bits = key << (64 - 1 - kKeyBits);  // the slice's smallest double
      double low;
      std::memcpy(&low, &bits, sizeof low);
      l.below_slice[key] = static_cast<uint16_t>(
          std::lower_bound(l.positive.begin(), l.positive.end(), low) - l.positive.begin());
    }
    return l;
  }();
  return l;
}

// The bucket of a finite v.
inline std::size_t bucket_of(const Layout& l, double v) {
  const std::size_t m = l.positive.size();
  const double a = std::fabs(v);
  uint64_t bits;
  std::memcpy(&bits, &a, sizeof bits);
  const std::size_t j = l.below_slice[bits >> (64 - 1 - kKeyBits)];
  // Finite, so the slice is below DBL_MAX's and positive[j] exists.
  if (v >= 0) return std::min(m + 1 + j + (l.positive[j] <= a), l.all.size() - 1);  // limits <= v
  return m - (j + (l.positive[j] < a));  // the first limit above v is -positive[j - 1], or 0
}

template <class T>
void count(const T* data, std::size_t n, std::vector<uint64_t>& counts, uint64_t& num, uint64_t& nonfinite,
           double& mn, double& mx, double& sum, double& sum_sq) {
  const Layout& l = layout();
  for (std::size_t i = 0; i < n; ++i) {
    const double v = static_cast<double>(data[i]);
    if (!std::isfinite(v)) {
      ++nonfinite;
      continue;
    }
    ++counts[bucket_of(l, v)];
    ++num;
    mn = std::min(mn, v);
    mx = std::max(mx, v);
    sum += v;
    sum_sq += v * v;
  }
}

}  // namespace

const std::vector<double>& histogram_bucket_limits() { return layout().all; }

std::size_t histogram_bucket(double v) { return bucket_of(layout(), v); }

void merge_into(ElementHistogram& a, const ElementHistogram& b) {
  if (b.num > 0) {
    a.min = a.num > 0 ? std::min(a.min, b.min) : b.min;
    a.max = a.num > 0 ? std::max(a.max, b.max) : b.max;
  }
  a.num += b.num;
  a.nonfinite += b.nonfinite;
  a.sum += b.sum;
  a.sum_squares += b.sum_squares;
  std::vector<std::pair<uint32_t, uint64_t>> merged;
  merged.reserve(a.buckets.size() + b.buckets.size());
  auto x = a.buckets.cbegin();
  auto y = b.buckets.cbegin();
  while (x != a.buckets.cend() || y != b.buckets.cend()) {
    if (y == b.buckets.cend() || (x != a.buckets.cend() && x->first < y->first)) {
      merged.push_back(*x++);
    } else if (x == a.buckets.cend() || y->first < x->first) {
      merged.push_back(*y++);
    } else {
      merged.emplace_back(x->first, x->second + y->second);
      ++x, ++y;
    }
  }
  a.buckets = std::move(merged);
}

HistogramCounter::HistogramCounter()
    : counts_(histogram_bucket_limits().size(), 0), min_(DBL_MAX), max_(-DBL_MAX) {}

void HistogramCounter::add(const float* data, std::size_t n) {
  count(data, n, counts_, num_, nonfinite_, min_, max_, sum_, sum_squares_);
}

void HistogramCounter::add(const double* data, std::size_t n) {
  count(data, n, counts_, num_, nonfinite_, min_, max_, sum_, sum_squares_);
}

ElementHistogram HistogramCounter::take(int64_t step, std::string node, Site site) {
  ElementHistogram h;
  h.step = step;
  h.node = std::move(node);
  h.site = site;
  h.num = num_;
  h.nonfinite = nonfinite_;
  h.min = num_ > 0 ? min_ : 0;
  h.max = num_ > 0 ? max_ : 0;
  h.sum = sum_;
  h.sum_squares = sum_squares_;
  for (std::size_t i = 0; i < counts_.size(); ++i)
    if (counts_[i] > 0) {
      h.buckets.emplace_back(static_cast<uint32_t>(i), counts_[i]);
      counts_[i] = 0;
    }
  num_ = nonfinite_ = 0;
  min_ = DBL_MAX;
  max_ = -DBL_MAX;
  sum_ = sum_squares_ = 0;
  return h;
}

}  // namespace gradscope
