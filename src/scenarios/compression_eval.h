// Compression, measured: trains a model under the audit (channel views on), builds the rule's
// profile, and applies recipes and baselines to it, each measured in bytes and held-out
// accuracy. Shared by the demo, `make validate-compression` and `make bench-compression`.
//
//   Trained t = train_for_compression(digits_mlp_task(), digits, /*seed=*/1);
//   for (const Measured& m : compare_methods(t, digits))
//     std::cout << m.method << " " << m.bytes << " B " << m.accuracy << "\n";
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "digits.h"
#include "gradscope/core/compress/recipe.h"
#include "gradscope/core/compress/rule.h"
#include "gradscope/core/compress/search.h"
#include "gradscope/core/audit/run_sink.h"
#include "gradscope/torch/compress/packed.h"
#include "scenario.h"

namespace gradscope::scenarios {

/// A model to compress and how it trains (Adam, cross-entropy, the scenario audit policy).
struct CompressionTask {
  std::string name;
  std::function<std::shared_ptr<ScenarioModel>()> make;
  int steps = 200;
  int64_t batch = kScenarioBatch;
  double lr = 1e-3;
};

/// The healthy digits MLP of the demo (64-64-32-10), 200 steps.
CompressionTask digits_mlp_task();
/// Fashion-MNIST: a 784-128-64-10 ReLU MLP, and a CNN (two 3x3 conv + max-pool, linear head).
CompressionTask fashion_mlp_task();
CompressionTask fashion_cnn_task();
/// Fashion-MNIST, a wider MLP (784-1024-512-10, 1.33M parameters): a model large enough that
/// the precision of its weights decides its accuracy at 2-3 bits.
CompressionTask fashion_wide_mlp_task();

struct Trained {
  std::shared_ptr<ScenarioModel> model;
  std::vector<compress::NodeProfile> profiles;
  std::vector<Record> records;
  Report report;        ///< the training audit's
  double accuracy = 0;  ///< held-out, FP32
  double seconds = 0;
};

/// Trains `task` on `data` with `seed` and builds the profile; `sink` (e.g. a RunWriter) gets
/// every step and the audit's summary. Throws Error naming the task when the data has fewer rows
/// than a batch.
Trained train_for_compression(const CompressionTask& task, const cli::Digits& data, uint64_t seed,
                              RunSink* sink = nullptr);

/// Held-out accuracy of `model` on (x, y).
double accuracy(ScenarioModel& model, const at::Tensor& x, const at::Tensor& y);

/// One compressed variant, measured.
struct Measured {
  std::string method;
  std::string budget;        ///< "int8", "int4", "int3", "int2": the uniform baseline whose bytes it matches
  int64_t bytes = 0;         ///< computed by apply() from what was kept
  double accuracy = 0;
  double predicted_loss = 0; ///< the rule's estimate (recipes of the rule only)
  double apply_ms = 0;
  compress::Recipe recipe;
};

/// Applies `recipe` to the trained model, measures it, and restores the FP32 weights. `grams`:
/// the nodes to round by GPTQ (calibration_grams) instead of to nearest.
Measured measure(Trained& trained, const compress::Recipe& recipe, const cli::Digits& data, const std::string& budget,
                 const compress::InputGrams& grams = {});
/// Held-out accuracy of the trained model loaded from a packed file (compress::load); its
/// trained weights are restored afterwards.
double accuracy_loaded(Trained& trained, const std::string& packed, const cli::Digits& data);
/// Per node, X^T X of its inputs when the trained model runs on `x` (the calibration batch).
/// Throws Error for a model whose node inputs it cannot follow (a Sequential of modules and
/// the Fashion CNN are followed).
compress::InputGrams calibration_grams(Trained& trained, const at::Tensor& x);

/// Uniform INT8, INT4, INT3 and INT2, and at each of their sizes: the dynamics recipe (when the
/// size is reachable), both also rounded by GPTQ on 512 training rows ("...-gptq"), its ablations (no Fisher, no unit saliency, neither = "static"), global
/// magnitude pruning (FP32) and magnitude pruning + INT8 (when their bitmaps fit). At INT4's
/// size also "int8-top-pruned": INT8 for the node of largest predicted INT4 cost, paid for by
/// pruning the units of least predicted cost (the Z > 0 attempt, docs/validation.md).
std::vector<Measured> compare_methods(Trained& trained, const cli::Digits& data);

/// The measured maximum-loss search (core/compress/search.h) on held-out data that never served to
/// judge it: the test set is split in two halves by `seed`; the search measures accuracy lost on
/// the first (validation), and the returned recipe is then measured on the second (report).
struct MeasuredBound {
  double max_loss = 0;           ///< accuracy points the search may lose on validation
  compress::MeasuredSearch search;
  int64_t bytes = 0;             ///< of the returned recipe, computed by apply()
  double validation_loss = 0;    ///< = search.loss
  double report_loss = 0;        ///< FP32 accuracy minus the recipe's, on the report half
  double report_accuracy = 0;    ///< the recipe's, on the report half
};
MeasuredBound measured_max_loss(Trained& trained, const cli::Digits& data, double max_loss, uint64_t seed);

}  // namespace gradscope::scenarios
