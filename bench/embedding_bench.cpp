// make bench-embedding: training steps of sparse embedding tables (64 wide, batch 1024, SGD)
// with EmbeddingTrackers on every step.
//   R = tracking cost per step at 10M rows / at 10k rows (the tracker's own calls, timed around
//       observe, before_step and after_step; same batch size, so the target is ~1), the two
//       tables stepping in interleaved blocks;
//   O = step time with tracking / without, at 1M rows: two identical tables from the same
//       seed, the tracked and the untracked one stepping in interleaved blocks;
//   M = the same for a two-tower recommender: a user and an item table of 1M rows, each under
//       a 2-layer MLP of width 256 (Linear 64->256, ReLU, Linear 256->256), dot-product score,
//       logistic loss; both tables tracked (EmbeddingHub) or neither, interleaved blocks.
// Medians of per-step times. Also printed, not in the JSON: the overhead at 1M rows with
// track_every 10 and 100 (mean step time over blocks of 100 steps, so each block holds the
// same number of tracked steps; median over blocks). Last line: JSON.
//
// `bench_embedding tracking ROWS STEPS` runs only the tracking cost at ROWS rows, for a
// profiler (perf record, valgrind --tool=callgrind); `bench_embedding ratio` only R,
// `bench_embedding two-tower` only M.
#include <torch/nn/functional/loss.h>
#include <torch/nn/modules/embedding.h>
#include <torch/nn/modules/linear.h>
#include <torch/optim/sgd.h>

#include <ATen/ATen.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "gradscope/torch/embedding/tracker.h"

// OpenBLAS (Debian's LibTorch 1.13 did its matrix products there) keeps its own threads, which
// at::set_num_threads does not reach; its idle threads spin on sched_yield and take the second
// core from whatever else runs. Weak: absent when LibTorch uses another BLAS (the PyPI wheel's
// MKL, whose threads at::set_num_threads sets).
extern "C" void openblas_set_num_threads(int) __attribute__((weak));

namespace {

namespace nn = ::torch::nn;
using Clock = std::chrono::steady_clock;
constexpr int64_t kDim = 64, kBatch = 1024, kWidth = 256;

double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))];
}

double median(std::vector<double> v) { return quantile(std::move(v), 0.5); }

nn::Embedding sparse_table(int64_t rows) {
  return nn::Embedding(nn::EmbeddingOptions(rows, kDim).sparse(true));
}

struct Table {
  nn::Embedding emb;
  ::torch::optim::SGD opt;
  std::unique_ptr<gradscope::torch::EmbeddingTracker> tracker;
  std::vector<double> step_s, track_s;

  Table(int64_t rows, bool tracked, int track_every = 1)
      : emb((::torch::manual_seed(0), sparse_table(rows))),
        opt(emb->parameters(), ::torch::optim::SGDOptions(0.01)) {
    gradscope::torch::EmbeddingTrackerOptions options;
    options.track_every = track_every;
    if (tracked)
      tracker = std::make_unique<gradscope::torch::EmbeddingTracker>(emb, "table", options);
  }

  void step(const at::Tensor& idx, const at::Tensor& target) {
    const auto t0 = Clock::now();
    double track = 0.0;
    opt.zero_grad();
    if (tracker) {
      const auto a = Clock::now();
      tracker->observe(idx);
      track += seconds(a, Clock::now());
    }
    (emb->forward(idx) - target).pow(2).sum().backward();
    if (tracker) {
      auto a = Clock::now();
      tracker->before_step();
      track += seconds(a, Clock::now());
      opt.step();
      a = Clock::now();
      tracker->after_step();
      track += seconds(a, Clock::now());
    } else {
      opt.step();
    }
    step_s.push_back(seconds(t0, Clock::now()));
    track_s.push_back(track);
  }
};

void print_tracking(int64_t rows, const Table& t) {
  std::printf("rows %9lld: tracking %.1f us/step (median of %zu; quartiles %.1f-%.1f), step %.1f "
              "us\n",
              static_cast<long long>(rows), median(t.track_s) * 1e6, t.track_s.size(),
              quantile(t.track_s, 0.25) * 1e6, quantile(t.track_s, 0.75) * 1e6,
              median(t.step_s) * 1e6);
}

// Tracking cost per step on a table of `rows` rows.
double tracking_cost(int64_t rows, int steps) {
  Table t(rows, true);
  at::manual_seed(1);
  for (int s = 0; s < steps; ++s)
    t.step(at::randint(0, rows, {kBatch}, at::kLong), at::randn({kBatch, kDim}));
  t.track_s.erase(t.track_s.begin(), t.track_s.begin() + steps / 5);  // warm-up
  print_tracking(rows, t);
  return median(t.track_s);
}

// R: a 10k-row and a 10M-row table step in interleaved blocks of 20 (400 steps each), so that
// load from other processes and drift fall on both alike.
double tracking_ratio() {
  constexpr int kBlocks = 20, kSteps = 20;
  constexpr int64_t kSmall = 10000, kLarge = 10000000;
  Table small(kSmall, true), large(kLarge, true);
  for (int block = 0; block < kBlocks; ++block) {
    for (Table* t : {&small, &large}) {
      const int64_t rows = t == &small ? kSmall : kLarge;
      at::manual_seed(2 * block + (t == &large));
      for (int s = 0; s < kSteps; ++s)
        t->step(at::randint(0, rows, {kBatch}, at::kLong), at::randn({kBatch, kDim}));
    }
  }
  for (Table* t : {&small, &large}) {  // warm-up: the first 2 blocks
    t->track_s.erase(t->track_s.begin(), t->track_s.begin() + 2 * kSteps);
    t->step_s.erase(t->step_s.begin(), t->step_s.begin() + 2 * kSteps);
  }
  print_tracking(kSmall, small);
  print_tracking(kLarge, large);
  return median(large.track_s) / median(small.track_s);
}

// Step time tracked every `every`-th step over untracked, on 1M rows. A median of single steps
// would hide the tracked ones, so: the mean step time of each block of 100 interleaved steps,
// then the median over blocks.
double sparse_overhead(int every) {
  constexpr int64_t kRows = 1000000;
  constexpr int kBlocks = 24, kSteps = 100;
  Table a(kRows, false), b(kRows, true, every);
  std::vector<double> mean_a, mean_b;
  for (int block = 0; block < kBlocks; ++block) {
    for (Table* t : {&a, &b}) {
      at::manual_seed(1000 + block);
      t->step_s.clear();
      for (int s = 0; s < kSteps; ++s)
        t->step(at::randint(0, kRows, {kBatch}, at::kLong), at::randn({kBatch, kDim}));
      double sum = 0.0;
      for (double x : t->step_s) sum += x;
      (t == &a ? mean_a : mean_b).push_back(sum / kSteps);
    }
  }
  mean_a.erase(mean_a.begin(), mean_a.begin() + 4);  // warm-up
  mean_b.erase(mean_b.begin(), mean_b.begin() + 4);
  const double o = median(mean_b) / median(mean_a);
  std::printf("1M rows, track_every %d: step %.1f us untracked, %.1f us tracked (mean per block "
              "of %d), overhead %.3f\n",
              every, median(mean_a) * 1e6, median(mean_b) * 1e6, kSteps, o);
  return o;
}

// One tower of a two-tower recommender: a sparse table under a 2-layer MLP of width 256.
struct Tower {
  nn::Embedding emb;
  nn::Linear hidden, out;
  explicit Tower(int64_t rows)
      : emb(sparse_table(rows)), hidden(kDim, kWidth), out(kWidth, kWidth) {}
  at::Tensor operator()(const at::Tensor& e) { return out(at::relu(hidden(e))); }
  void add_parameters(std::vector<at::Tensor>& p) const {
    for (const at::Tensor& t : emb->parameters()) p.push_back(t);
    for (const at::Tensor& t : hidden->parameters()) p.push_back(t);
    for (const at::Tensor& t : out->parameters()) p.push_back(t);
  }
};

struct TwoTower {
  Tower user, item;
  ::torch::optim::SGD opt;
  std::unique_ptr<gradscope::torch::EmbeddingHub> hub;
  std::vector<double> step_s, track_s;  // track_s: the hub's calls around the optimizer step

  static std::vector<at::Tensor> parameters(const Tower& u, const Tower& i) {
    std::vector<at::Tensor> p;
    u.add_parameters(p);
    i.add_parameters(p);
    return p;
  }

  TwoTower(int64_t rows, bool tracked)
      : user((::torch::manual_seed(0), rows)), item(rows),
        opt(parameters(user, item), ::torch::optim::SGDOptions(0.01)) {
    if (!tracked) return;
    hub = std::make_unique<gradscope::torch::EmbeddingHub>();
    hub->track(user.emb, "user");
    hub->track(item.emb, "item");
  }

  void step(const at::Tensor& users, const at::Tensor& items, const at::Tensor& labels) {
    const auto t0 = Clock::now();
    opt.zero_grad();
    const at::Tensor u = hub ? (*hub)["user"].forward(users) : user.emb(users);
    const at::Tensor i = hub ? (*hub)["item"].forward(items) : item.emb(items);
    const at::Tensor score = (user(u) * item(i)).sum(1);
    nn::functional::binary_cross_entropy_with_logits(score, labels).backward();
    if (hub) {
      double opt_s = 0.0;
      const auto a = Clock::now();
      hub->step([&] {
        const auto o = Clock::now();
        opt.step();
        opt_s = seconds(o, Clock::now());
      });
      track_s.push_back(seconds(a, Clock::now()) - opt_s);
    } else {
      opt.step();
    }
    step_s.push_back(seconds(t0, Clock::now()));
  }
};

// M: the two-tower step with both tables tracked over the same step untracked, at 1M rows.
double two_tower_overhead() {
  constexpr int64_t kRows = 1000000;
  // Blocks of 4 steps (~40 ms each here): short, so that load from other processes falls on
  // both sides alike.
  constexpr int kBlocks = 50, kSteps = 4;
  TwoTower a(kRows, false), b(kRows, true);
  for (int block = 0; block < kBlocks; ++block) {
    for (TwoTower* m : {&a, &b}) {
      at::manual_seed(500 + block);
      for (int s = 0; s < kSteps; ++s)
        m->step(at::randint(0, kRows, {kBatch}, at::kLong),
                at::randint(0, kRows, {kBatch}, at::kLong),
                at::randint(0, 2, {kBatch}, at::kFloat));
    }
  }
  a.step_s.erase(a.step_s.begin(), a.step_s.begin() + 5 * kSteps);  // warm-up
  b.step_s.erase(b.step_s.begin(), b.step_s.begin() + 5 * kSteps);
  b.track_s.erase(b.track_s.begin(), b.track_s.begin() + 5 * kSteps);
  const double m = median(b.step_s) / median(a.step_s);
  std::printf("two towers, 2 x 1M rows + MLP 64-256-256: step %.1f us untracked, %.1f us "
              "tracked every step (of which before_step + after_step of both tables %.1f us), "
              "overhead %.3f\n",
              median(a.step_s) * 1e6, median(b.step_s) * 1e6, median(b.track_s) * 1e6, m);
  return m;
}

}  // namespace

int main(int argc, char** argv) {
  at::set_num_threads(1);
  if (openblas_set_num_threads) openblas_set_num_threads(1);
  if (argc == 4 && std::strcmp(argv[1], "tracking") == 0) {
    (void)tracking_cost(std::atoll(argv[2]), std::atoi(argv[3]));
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "two-tower") == 0) {
    (void)two_tower_overhead();
    return 0;
  }
  if (argc > 2 || (argc == 2 && std::strcmp(argv[1], "ratio") != 0)) {
    std::fprintf(stderr, "usage: bench_embedding [ratio | two-tower | tracking ROWS STEPS]\n");
    return 2;
  }
  const double R = tracking_ratio();
  if (argc == 2 && std::strcmp(argv[1], "ratio") == 0) return 0;
  (void)tracking_cost(1000000, 400);

  // O: tracked and untracked 1M-row tables, interleaved blocks of 20 steps.
  Table a(1000000, false), b(1000000, true);
  for (int block = 0; block < 40; ++block) {
    for (Table* t : {&a, &b}) {
      at::manual_seed(100 + block);
      for (int s = 0; s < 20; ++s)
        t->step(at::randint(0, 1000000, {kBatch}, at::kLong), at::randn({kBatch, kDim}));
    }
  }
  a.step_s.erase(a.step_s.begin(), a.step_s.begin() + 100);
  b.step_s.erase(b.step_s.begin(), b.step_s.begin() + 100);
  const double O = median(b.step_s) / median(a.step_s);
  std::printf("1M rows: step %.1f us untracked, %.1f us tracked every step\n",
              median(a.step_s) * 1e6, median(b.step_s) * 1e6);
  for (int every : {10, 100}) (void)sparse_overhead(every);
  const double M = two_tower_overhead();
  std::printf("{\"bench\":\"embedding\",\"ratio_10M_vs_10k\":%.3f,\"overhead_every_step_1M\":%.3f,"
              "\"overhead_every_step_1M_mlp\":%.3f}\n",
              R, O, M);
  return 0;
}
