// The attention statistics kernel (attention_head_stats), scalar against AVX2, interleaved in
// one process on the same logits: the validation GPT's block ([16, 4, 64, 64], causal mask as
// bytes, as the LibTorch and Python layers pass it) and a longer context ([2, 8, 512, 512]).
// Logits ~ N(0, 2); prints the medians of thread CPU time and, last, one JSON object.
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "gradscope/core/attention/head_stats.h"
#include "gradscope/core/stats/stats.h"

namespace {

double now_ns() {  // the thread's CPU time: wall time counts the other processes' turns
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

struct Case {
  const char* name;
  gradscope::AttentionShape shape;
  double scalar_ms = 0, avx2_ms = 0;
};

void run(Case& c, int rounds) {
  const auto& s = c.shape;
  std::vector<float> logits(static_cast<std::size_t>(s.batch * s.heads * s.queries * s.keys));
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.f, 2.f);
  for (float& l : logits) l = d(rng);
  std::vector<uint8_t> causal(static_cast<std::size_t>(s.queries * s.keys));
  for (int64_t q = 0; q < s.queries; ++q)
    for (int64_t k = 0; k < s.keys; ++k) causal[static_cast<std::size_t>(q * s.keys + k)] = k <= q;
  std::vector<double> scalar, avx2;
  double checksum = 0;
  for (int r = 0; r < rounds; ++r)
    for (const gradscope::Kernel k : {gradscope::Kernel::kScalar, gradscope::Kernel::kAvx2}) {
      const double t0 = now_ns();
      const auto h = gradscope::attention_head_stats(logits.data(), s, causal.data(), k);
      const double ms = (now_ns() - t0) / 1e6;
      (k == gradscope::Kernel::kScalar ? scalar : avx2).push_back(ms);
      checksum += h[0].entropy_sum;
    }
  c.scalar_ms = median(scalar);
  c.avx2_ms = median(avx2);
  std::printf("%-28s scalar %8.3f ms   avx2 %8.3f ms   %.2fx   (checksum %.6g)\n", c.name, c.scalar_ms, c.avx2_ms,
              c.scalar_ms / c.avx2_ms, checksum);
}

}  // namespace

int main() {
  if (!gradscope::avx2_available()) {
    std::printf("this CPU lacks AVX2/FMA: only the scalar kernel runs here\n{\"bench\": \"attention\", \"avx2\": false}\n");
    return 0;
  }
  Case gpt{"gpt block [16,4,64,64]", {16, 4, 64, 64}};
  Case longer{"long context [2,8,512,512]", {2, 8, 512, 512}};
  run(gpt, 101);
  run(longer, 21);
  std::printf("{\"bench\": \"attention\", \"gpt_block_scalar_ms\": %.4f, \"gpt_block_avx2_ms\": %.4f, "
              "\"gpt_block_speedup\": %.2f, \"long_scalar_ms\": %.3f, \"long_avx2_ms\": %.3f, \"long_speedup\": %.2f}\n",
              gpt.scalar_ms, gpt.avx2_ms, gpt.scalar_ms / gpt.avx2_ms, longer.scalar_ms, longer.avx2_ms,
              longer.scalar_ms / longer.avx2_ms);
}
