// Element histograms (AuditOptions::histogram_every): the cost of counting a tensor into
// TensorBoard's default buckets, next to the statistics pass every audited step already makes
// over the same tensor. Interleaved rounds over 1M float elements (normal, as gradients and
// activations look); prints the medians and, last, one JSON object.
#include <algorithm>
#include <time.h>

#include <cstdio>
#include <random>
#include <vector>

#include "gradscope/core/audit/element_histogram.h"
#include "gradscope/core/stats/stats.h"
#include "gradscope/core/stats/tensor_view.h"

int main() {
  constexpr std::size_t kN = 1 << 20;
  constexpr int kRounds = 31;
  std::vector<float> x(kN);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.f, 0.05f);
  for (float& v : x) v = d(rng);
  const auto view = gradscope::TensorView::contiguous(x.data(), gradscope::DType::kFloat32,
                                                      {static_cast<int64_t>(kN)}, "x");
  gradscope::HistogramCounter counter;
  std::vector<double> hist_ns, stats_ns;
  double sink = 0;
  // The thread's CPU time: on a shared machine, wall time counts the other processes' turns.
  const auto now = [] {
    timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
  };
  for (int r = 0; r < kRounds; ++r) {
    const double t0 = now();
    counter.add(x.data(), kN);
    const gradscope::ElementHistogram h = counter.take(0, "x", gradscope::Site::kActivation);
    const double t1 = now();
    const gradscope::Stats s = gradscope::compute(view);
    const double t2 = now();
    sink += static_cast<double>(h.num) + s.sum;
    hist_ns.push_back((t1 - t0) / kN);
    stats_ns.push_back((t2 - t1) / kN);
  }
  const auto median = [](std::vector<double> v) {
    std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    return v[v.size() / 2];
  };
  const double h = median(hist_ns), s = median(stats_ns);
  std::printf("histogram: %.2f ns/element, statistics pass: %.2f ns/element, ratio %.1fx (checksum %g)\n", h, s,
              h / s, sink);
  std::printf("{\"elements\": %zu, \"histogram_ns_per_element\": %.3f, \"stats_ns_per_element\": %.3f, "
              "\"ratio\": %.2f}\n",
              kN, h, s, h / s);
}
