#include "gradscope/core/attention/head_stats.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "gradscope/core/error.h"

namespace gradscope {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// One query row into `h`: the largest visible logit first, then z and s around it (exp of a
// non-positive number never overflows). `see` (may be null) marks the keys the query may see.
void add_row(const float* row, const uint8_t* see, int64_t keys, HeadStats& h) {
  constexpr float kHidden = -std::numeric_limits<float>::infinity();
  const auto hidden = [&](int64_t k) { return (see && !see[k]) || row[k] == kHidden; };
  float m = kHidden;
  int64_t visible = 0;
  bool nonfinite = false;
  for (int64_t k = 0; k < keys; ++k) {
    if (hidden(k)) continue;
    const float l = row[k];
    ++visible;
    if (!(l < std::numeric_limits<float>::infinity())) nonfinite = true;  // NaN or +Inf
    else m = std::max(m, l);
  }
  if (visible == 0) return;
  if (nonfinite) {
    ++h.nonfinite_queries;
    return;
  }
  // exp in float (the logits are float; a few times faster than in double), sums in double.
  double z = 0, s = 0;
  for (int64_t k = 0; k < keys; ++k) {
    if (hidden(k)) continue;
    const float d = row[k] - m;
    const float e = std::exp(d);
    z += e;
    s += static_cast<double>(e) * d;
  }
  // z >= 1 (the largest key contributes exp(0)); rounding can make the entropy a hair negative.
  const double entropy = std::max(0.0, std::log(z) - s / z);
  h.max_logit = h.queries == 0 ? m : std::max(h.max_logit, static_cast<double>(m));
  ++h.queries;
  h.entropy_sum += entropy;
  if (visible >= 2) {
    ++h.fraction_queries;
    h.entropy_fraction_sum += std::min(1.0, entropy / std::log(static_cast<double>(visible)));
  }
  if (1.0 / z > kTopWeight) ++h.top_queries;
}

}  // namespace

double HeadStats::mean_entropy() const { return queries ? entropy_sum / queries : kNaN; }

double HeadStats::mean_entropy_fraction() const {
  return fraction_queries ? entropy_fraction_sum / fraction_queries : kNaN;
}

double HeadStats::top_fraction() const {
  return queries ? static_cast<double>(top_queries) / queries : kNaN;
}

HeadStats merge(const HeadStats& a, const HeadStats& b) {
  HeadStats r;
  r.queries = a.queries + b.queries;
  r.nonfinite_queries = a.nonfinite_queries + b.nonfinite_queries;
  r.max_logit = a.queries == 0 ? b.max_logit : b.queries == 0 ? a.max_logit : std::max(a.max_logit, b.max_logit);
  r.entropy_sum = a.entropy_sum + b.entropy_sum;
  r.fraction_queries = a.fraction_queries + b.fraction_queries;
  r.entropy_fraction_sum = a.entropy_fraction_sum + b.entropy_fraction_sum;
  r.top_queries = a.top_queries + b.top_queries;
  return r;
}

std::vector<HeadStats> attention_head_stats(const float* logits, const AttentionShape& shape, const uint8_t* visible) {
  if (shape.batch < 0 || shape.heads < 0 || shape.queries < 0 || shape.keys < 0)
    throw Error("attention logits: dimensions must be >= 0");
  std::vector<HeadStats> heads(static_cast<std::size_t>(shape.heads));
  const int64_t rows = shape.batch * shape.heads * shape.queries;
  if (rows == 0 || shape.keys == 0) return heads;
  if (logits == nullptr) throw Error("attention logits: null data");
  const float* p = logits;
  for (int64_t b = 0; b < shape.batch; ++b)
    for (int64_t h = 0; h < shape.heads; ++h)
      for (int64_t q = 0; q < shape.queries; ++q, p += shape.keys)
        add_row(p, visible ? visible + q * shape.keys : nullptr, shape.keys, heads[static_cast<std::size_t>(h)]);
  return heads;
}

}  // namespace gradscope
