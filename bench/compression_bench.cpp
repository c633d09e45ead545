// make bench-compression: the time to make a recipe from a 3.2M-parameter MLP's run
// (784-2048-768-10 ReLU, 30 Adam steps of batch 64 on Fashion-MNIST under the audit with
// channel views, which is what the rule reads) at uniform INT4's size, and the time to apply
// it to the model (quantise-dequantise, prune, size); medians of 5. Then the accuracy gain
// of the recipe over uniform INT4 at equal bytes on the healthy digits MLP, mean over seeds
// 1..5 (the same runs as `make validate-compression`'s digits table), at the sizes of uniform
// INT8, INT4, INT3 and INT2, rounded to nearest and, against the better uniform of the two
// roundings, by GPTQ on 512 training rows. The 3.2M MLP's recipe is also saved packed (its size on disk) and
// loaded back (medians of 5), beside the same model's uncompressed weights file (save_weights)
// saved and loaded the same way. Last line: JSON.
// Usage: bench_compression [DATA_DIR=data].
#include <torch/nn/modules/activation.h>
#include <torch/nn/modules/linear.h>

#include <ATen/Parallel.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "compression_eval.h"
#include "fashion_mnist.h"
#include "gradscope/torch/compress/apply_recipe.h"
#include "gradscope/torch/compress/packed.h"

namespace sc = gradscope::scenarios;
namespace cp = gradscope::compress;
namespace nn = ::torch::nn;
namespace fs = std::filesystem;

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

    // The recipe on disk and back, beside the uncompressed weights file.
    const fs::path tmp = fs::temp_directory_path() / ("gradscope-bench-compression-" + std::to_string(::getpid()));
    fs::create_directories(tmp);
    const std::string packed = (tmp / "packed.safetensors").string(), weights = (tmp / "weights.safetensors").string();
    std::vector<double> save_ms, load_ms, fp32_save_ms, fp32_load_ms;
    gradscope::PackedFileSize packed_size, fp32_size;
    std::vector<at::Tensor> kept;
    for (const at::Tensor& p : t.model->parameters()) kept.push_back(p.detach().clone());
    auto& module = *t.model->audit_root();
    for (int rep = 0; rep < 5; ++rep) {
      auto start = std::chrono::steady_clock::now();
      fp32_size = cp::save_weights(module, weights);
      fp32_save_ms.push_back(ms_since(start));
      start = std::chrono::steady_clock::now();
      packed_size = cp::save(module, recipe, packed);
      save_ms.push_back(ms_since(start));
      start = std::chrono::steady_clock::now();
      cp::load(module, packed);
      load_ms.push_back(ms_since(start));
      start = std::chrono::steady_clock::now();
      cp::load(module, weights);
      fp32_load_ms.push_back(ms_since(start));
    }
    for (std::size_t i = 0; i < kept.size(); ++i) {
      if (!at::equal(kept[i], t.model->parameters()[i])) throw std::runtime_error("the weights file did not restore the model");
    }
    std::printf("3.2M MLP on disk: packed %lld bytes (recipe %lld + header %lld), weights file %lld bytes; save %.1f ms "
                "(weights %.1f), load %.1f ms (weights %.1f) (medians of 5)\n",
                static_cast<long long>(packed_size.file_bytes), static_cast<long long>(packed_size.data_bytes),
                static_cast<long long>(packed_size.header_bytes), static_cast<long long>(fp32_size.file_bytes),
                median(save_ms), median(fp32_save_ms), median(load_ms), median(fp32_load_ms));
    fs::remove_all(tmp);

    // Per size: the recipe against uniform (both rounded to nearest), and the recipe rounded by
    // GPTQ against the better of uniform rounded to nearest and by GPTQ, seed by seed.
    const cp::Precision sizes[] = {cp::Precision::kInt8, cp::Precision::kInt4, cp::Precision::kInt3, cp::Precision::kInt2};
    std::vector<std::vector<double>> gains(4), best_gains(4);
    for (int seed = 1; seed <= 5; ++seed) {
      const gradscope::cli::Digits digits = gradscope::cli::load_digits(dir + "/digits.csv", 0.25, seed, 64);
      sc::Trained d = sc::train_for_compression(sc::digits_mlp_task(), digits, seed);
      const cp::InputGrams grams = sc::calibration_grams(d, digits.x_train.narrow(0, 0, 512));
      for (int k = 0; k < 4; ++k) {
        const char* name = cp::precision_name(sizes[k]);
        const cp::Recipe uniform = cp::uniform_recipe(d.profiles, sizes[k]);
        const sc::Measured u = sc::measure(d, uniform, digits, name);
        const sc::Measured ug = sc::measure(d, uniform, digits, name, grams);
        const cp::Recipe recipe_k = cp::make_recipe(d.profiles, cp::Budget::bytes(u.bytes));
        const sc::Measured r = sc::measure(d, recipe_k, digits, name);
        const sc::Measured rg = sc::measure(d, recipe_k, digits, name, grams);
        gains[k].push_back(r.accuracy - u.accuracy);
        best_gains[k].push_back(rg.accuracy - std::max(u.accuracy, ug.accuracy));
        std::printf("digits seed %d, %s: uniform %lld B accuracy %.4f (gptq %.4f), recipe %lld B accuracy %.4f (gptq %.4f)\n",
                    seed, name, static_cast<long long>(u.bytes), u.accuracy, ug.accuracy, static_cast<long long>(r.bytes),
                    r.accuracy, rg.accuracy);
      }
    }
    auto mean = [](const std::vector<double>& v) {
      double s = 0;
      for (double x : v) s += x;
      return s / static_cast<double>(v.size());
    };
    std::printf("{\"bench\":\"compression\",\"recipe_ms\":%.1f,\"apply_ms\":%.1f,"
                "\"accuracy_gain_vs_uniform_int4_at_equal_bytes\":%.4f,\"gain_vs_uniform_int8\":%.4f,"
                "\"gain_vs_uniform_int3\":%.4f,\"gain_vs_uniform_int2\":%.4f,\"packed_bytes_on_disk\":%lld,"
                "\"fp32_weights_bytes_on_disk\":%lld,\"save_ms\":%.1f,\"load_ms\":%.1f,\"fp32_load_ms\":%.1f,"
                "\"gptq_gain_vs_best_uniform_int8\":%.4f,\"gptq_gain_vs_best_uniform_int4\":%.4f,"
                "\"gptq_gain_vs_best_uniform_int3\":%.4f,\"gptq_gain_vs_best_uniform_int2\":%.4f}\n",
                median(recipe_ms), median(apply_ms), mean(gains[1]), mean(gains[0]), mean(gains[2]), mean(gains[3]),
                static_cast<long long>(packed_size.file_bytes), static_cast<long long>(fp32_size.file_bytes),
                median(save_ms), median(load_ms), median(fp32_load_ms), mean(best_gains[0]), mean(best_gains[1]),
                mean(best_gains[2]), mean(best_gains[3]));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_compression: error: %s\n", e.what());
    return 3;
  }
  return 0;
}
