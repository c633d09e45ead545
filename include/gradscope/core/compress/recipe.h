// Compression recipes: per node a precision and the output units to prune, with the size the
// result takes as stored. Standard library only; the rule that chooses them from a run's
// dynamics is rule.h, applying one to a LibTorch model is torch/compress/apply_recipe.h.
//
//   gradscope::compress::Recipe r = gradscope::compress::uniform_recipe(profiles, Precision::kInt8);
//   std::cout << r.bytes << " of " << r.fp32_bytes << " bytes\n";
//   int64_t b = gradscope::compress::node_bytes(shape, /*bias=*/64, Precision::kInt4, 0, 0);
//
// Storage, computed (docs/compression.md): weights at `bits` per kept element, rounded up to a
// byte per node; the integer precisions (INT8/4/3/2) add one FP32 scale per kept output unit (symmetric, per channel);
// biases FP32 on FP32 nodes, FP16 otherwise; unstructured (magnitude) pruning adds a bitmap of
// one bit per weight. Structured pruning removes units and the next node's matching inputs.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace gradscope::compress {

/// How a node's weights are stored.
enum class Precision : uint8_t { kFp32, kFp16, kInt8, kInt4, kInt3, kInt2 };

/// 32, 16, 8, 4, 3 or 2.
int precision_bits(Precision p);
/// Levels on each side of zero of an integer precision's symmetric grid: 127, 7, 3, 1 (the
/// most negative code unused); 0 for FP16 and FP32.
int quant_max(Precision p);
/// "fp32", "fp16", "int8", "int4", "int3", "int2".
const char* precision_name(Precision p);
/// Inverse of precision_name; throws Error naming the text otherwise.
Precision parse_precision(const std::string& name);

/// One compressible node (a module with a weight whose dim 0 are its output units): shapes and
/// the dynamics the rule reads. Per-unit vectors are empty or hold one value per unit.
struct NodeProfile {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  std::string node;
  std::vector<int64_t> weight_shape;  ///< [units, inputs, kernel...]
  int64_t bias = 0;                   ///< bias elements: 0 or units
  std::string next;   ///< node whose input indices (weight dim 1) follow this node's units; "" none
  int64_t next_fan = 0;  ///< input indices of `next` per unit of this node (0: units not prunable)
  // Whole run, from the run store's records (rule.h: add_run_dynamics).
  double grad_sq = kNone;       ///< mean over steps of ||parameter gradient||^2
  int64_t param_elements = 0;   ///< elements behind grad_sq (weight and bias)
  double update_ratio = kNone;  ///< sum over steps of ||update|| / sum of ||parameters||
  int64_t steps = 0;            ///< steps with a parameter gradient
  int64_t batch = 0;            ///< samples per training step
  int64_t positions = 1;        ///< outputs per unit per sample (conv: height x width)
  // Per output unit: channel views over sampled steps, and the final weights.
  std::vector<double> act_sq;     ///< E[a_j^2] of the node's output (after its activation)
  std::vector<double> out_grad_sq;  ///< E[dL/da_j ^2]
  std::vector<double> zero_frac;  ///< fraction of outputs with |a_j| <= dead_eps
  std::vector<double> max_abs;    ///< max |w| over unit j's weights
  std::vector<double> weight_sq;  ///< sum of w^2 over unit j's weights

  int64_t units() const { return weight_shape.empty() ? 0 : weight_shape[0]; }
  /// Weight elements per unit (product of weight_shape[1:]).
  int64_t unit_elements() const;
  /// Weight elements per input index (product of weight_shape[2:]).
  int64_t input_elements() const;
};

/// What to do with one node, and why.
struct NodeDecision {
  std::string node;
  std::vector<int64_t> weight_shape;
  int64_t bias = 0;
  std::string next;
  int64_t next_fan = 0;
  Precision precision = Precision::kFp32;
  std::vector<int64_t> pruned_units;  ///< whole output units removed, ascending
  int64_t bytes = 0;                  ///< as stored (node_bytes), inputs pruned upstream included
  double predicted_loss = 0;          ///< second-order estimate of this decision's loss increase
  std::string premise, action, expected_effect;  ///< evidence, as in the agent JSON
};

/// A recipe for a whole model. `magnitude_keep` < 1: unstructured global magnitude pruning
/// (the baselines) keeps that fraction of all weights, the largest |w|, with a bitmap.
struct Recipe {
  std::string method;         ///< "dynamics", "uniform-int8", "magnitude-int8", ...
  int64_t budget_bytes = 0;   ///< 0: none given
  double max_loss = NodeProfile::kNone;  ///< predicted-loss bound given, NaN: none
  double magnitude_keep = 1.0;
  int64_t fp32_bytes = 0;     ///< the same model in FP32, nothing pruned
  int64_t bytes = 0;          ///< sum of the nodes' bytes (baselines with magnitude: planned)
  double predicted_loss = 0;
  std::vector<NodeDecision> nodes;
};

/// One compressed model as measured (apply() and a held-out evaluation), for reports.
struct MeasuredPoint {
  std::string method;  ///< "dynamics", "uniform-int4", ...
  std::string budget;  ///< what its size was set by, e.g. "quarter of fp32", "int4"
  int64_t bytes = 0;
  double accuracy = NodeProfile::kNone;
};

/// Measured points of one model, saved with its run (the compression.json document) for the
/// HTML report and the TensorBoard export.
struct MeasuredComparison {
  std::string model;  ///< what was compressed and evaluated on what
  double fp32_accuracy = NodeProfile::kNone;
  int64_t fp32_bytes = 0;
  std::vector<MeasuredPoint> points;
};

/// Bytes of one node as stored: `kept_units` units of `kept_inputs` input indices each at
/// `p`, plus scales and biases; `bitmap_weights` > 0 adds a 1-bit mask over that many weights
/// and then `kept_weights` (not units x inputs) is what is stored.
int64_t node_bytes(const std::vector<int64_t>& weight_shape, int64_t bias, Precision p, int64_t kept_units,
                   int64_t kept_inputs, int64_t bitmap_weights = 0, int64_t kept_weights = -1);

/// Input indices of each node removed by the units its predecessor prunes, by node name.
int64_t pruned_inputs(const std::vector<NodeDecision>& nodes, const std::string& node);

/// Recomputes every node's bytes and the recipe's total from its decisions.
void recompute_bytes(Recipe& recipe);

/// The decisions for `profiles` with nothing compressed (FP32, nothing pruned), bytes set.
Recipe fp32_recipe(const std::vector<NodeProfile>& profiles);

/// Every node at `p`, nothing pruned.
Recipe uniform_recipe(const std::vector<NodeProfile>& profiles, Precision p);

/// Global magnitude pruning at `p` (fp32 or int8): keeps as many of the largest weights as fit
/// in `budget_bytes` with their bitmap. Throws Error when even no weight at all does not fit.
Recipe magnitude_recipe(const std::vector<NodeProfile>& profiles, Precision p, int64_t budget_bytes);

/// Checks that profiles are usable: names unique and non-empty, shapes positive, per-unit
/// vectors empty or one per unit, `next` naming a later node whose inputs fit. Throws Error
/// naming the node.
void check_profiles(const std::vector<NodeProfile>& profiles);

}  // namespace gradscope::compress
