// make bench-compression: the time to make a recipe from a 3.2M-parameter MLP's run
// (784-2048-768-10 ReLU, 30 Adam steps of batch 64 on Fashion-MNIST under the audit with
// channel views, which is what the rule reads) at uniform INT4's size, and the time to apply
// it to the model (quantise-dequantise, prune, size); medians of 5. Then the accuracy gain
// of the recipe over uniform INT4 at equal bytes on the healthy digits MLP, mean over seeds
// 1..5 (the same runs as `make validate-compression`'s digits table). Last line: JSON.
// Usage: bench_compression [DATA_DIR=data].
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "compression_eval.h"
#include "fashion_mnist.h"
#include "gradscope/torch/compress/apply_recipe.h"

namespace sc = gradscope::scenarios;
namespace cp = gradscope::compress;
namespace nn = ::torch::nn;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "data";
  try {
    const gradscope::cli::Digits fashion = sc::load_fashion_mnist(dir + "/fashion-mnist", 5000, 1);
    sc::CompressionTask big{"mlp-3.2m",
                            [] {
                              return std::make_shared<sc::SequentialModel>(nn::Sequential(
                                  {{"fc1", nn::Linear(784, 2048)}, {"relu1", nn::ReLU()}, {"fc2", nn::Linear(2048, 768)},
                                   {"relu2", nn::ReLU()}, {"out", nn::Linear(768, 10)}}));
                            },
                            30, 64, 1e-3};
    sc::Trained t = sc::train_for_compression(big, fashion, 1);
    int64_t params = 0;
    for (const at::Tensor& p : t.model->parameters()) params += p.numel();
    const int64_t budget = cp::uniform_recipe(t.profiles, cp::Precision::kInt4).bytes;
    std::vector<double> recipe_ms, apply_ms;
    cp::Recipe recipe;
    for (int rep = 0; rep < 5; ++rep) {
      const auto start = std::chrono::steady_clock::now();
      recipe = cp::make_recipe(t.profiles, cp::Budget::bytes(budget));
      recipe_ms.push_back(ms_since(start));
      apply_ms.push_back(sc::measure(t, recipe, fashion, "int4").apply_ms);
    }
    std::printf("3.2M MLP: %lld parameters, recipe %lld of %lld bytes (uniform int4 %lld); recipe %.1f ms, apply %.1f ms "
                "(medians of 5)\n",
                static_cast<long long>(params), static_cast<long long>(recipe.bytes),
                static_cast<long long>(recipe.fp32_bytes), static_cast<long long>(budget), median(recipe_ms),
                median(apply_ms));

    std::vector<double> gains;
    for (int seed = 1; seed <= 5; ++seed) {
      const gradscope::cli::Digits digits = gradscope::cli::load_digits(dir + "/digits.csv", 0.25, seed, 64);
      sc::Trained d = sc::train_for_compression(sc::digits_mlp_task(), digits, seed);
      const sc::Measured u = sc::measure(d, cp::uniform_recipe(d.profiles, cp::Precision::kInt4), digits, "int4");
      const sc::Measured r = sc::measure(d, cp::make_recipe(d.profiles, cp::Budget::bytes(u.bytes)), digits, "int4");
      gains.push_back(r.accuracy - u.accuracy);
      std::printf("digits seed %d: uniform int4 %lld B accuracy %.4f, recipe %lld B accuracy %.4f\n", seed,
                  static_cast<long long>(u.bytes), u.accuracy, static_cast<long long>(r.bytes), r.accuracy);
    }
    double gain = 0;
    for (double g : gains) gain += g;
    gain /= static_cast<double>(gains.size());
    std::printf("{\"bench\":\"compression\",\"recipe_ms\":%.1f,\"apply_ms\":%.1f,"
                "\"accuracy_gain_vs_uniform_int4_at_equal_bytes\":%.4f}\n",
                median(recipe_ms), median(apply_ms), gain);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_compression: error: %s\n", e.what());
    return 3;
  }
  return 0;
}
