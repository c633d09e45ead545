// Applying a compression recipe to a LibTorch model, for real: pruned units (and the next
// node's matching inputs) are zeroed, which computes exactly what removing them would; weights
// are quantised and dequantised per output unit at the recipe's bits; the size is computed
// from what was kept. Also builds the profile the rule reads from a trained model's audit.
//
//   gradscope::torch::Audit audit(net, options);   // with a channel view of every node
//   ... train ...
//   auto nodes = gradscope::compress::profile_model(*net, audit, /*batch=*/64);
//   auto recipe = gradscope::compress::make_recipe(nodes, Budget::bytes(8000));
//   gradscope::compress::Applied a = gradscope::compress::apply(*net, recipe);  // a.bytes
#pragma once

#include <torch/nn/module.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gradscope/core/compress/recipe.h"
#include "gradscope/core/compress/rows.h"
#include "gradscope/core/embedding/rows.h"
#include "gradscope/torch/audit/audit.h"
#include "gradscope/torch/compress/packed.h"

namespace gradscope::compress {

/// What apply() left of one node.
struct AppliedNode {
  std::string node;
  Precision precision = Precision::kFp32;
  int64_t kept_units = 0;
  int64_t kept_weights = 0;  ///< weight elements stored
  int64_t bytes = 0;         ///< as stored (core/compress/recipe.h)
};

/// The model's size after apply(), computed from what it kept.
struct Applied {
  int64_t bytes = 0;
  int64_t fp32_bytes = 0;
  std::vector<AppliedNode> nodes;
};

/// Quantises and prunes `model`'s parameters in place. Node ids are module paths below
/// `model` ("fc1", "encoder/fc" = "encoder.fc"). Throws Error before changing anything when a
/// recipe node is missing from the model or its shapes differ (naming every such node), a
/// pruned unit is out of range, or a weight to quantise holds NaN or Inf. `grams`: nodes to
/// round by GPTQ on a calibration batch instead of to nearest (torch/compress/packed.h).
Applied apply(::torch::nn::Module& model, const Recipe& recipe, const InputGrams& grams = {});

/// Options for profile_model.
struct ProfileOptions {
  /// Nodes form a chain (each feeds the next, as in a Sequential or the scenario CNN): a node's
  /// units may be pruned with the matching inputs of the node after it. Off: nothing prunable.
  bool chain = true;
};

/// The rule's input from a trained model and its audit: every audited node with a weight of
/// 2+ dimensions, its final per-unit weight statistics, its channel view (activation and
/// output-gradient energy, dead fraction per unit) and its gradients from the records, over
/// the steps the audit keeps (AuditOptions::keep_steps; 0 for the whole run). `batch` is the
/// training batch size. Throws Error for batch < 1 or no such node.
std::vector<NodeProfile> profile_model(::torch::nn::Module& model, const torch::Audit& audit, int64_t batch,
                                       const ProfileOptions& options = {});
/// Same from what an audit kept: its node ids, records and channel records.
std::vector<NodeProfile> profile_model(::torch::nn::Module& model, const std::vector<std::string>& node_ids,
                                       const std::vector<Record>& records, const std::vector<ChannelRecord>& channels,
                                       int64_t batch, const ProfileOptions& options = {});

/// Applies a row recipe to an embedding table [rows, dim] (float32, in place): rows quantised
/// per row (symmetric, one scale each), pruned rows replaced by the recipe's fallback row, merged
/// rows by their representative's stored values.
/// Returns the bytes as stored (row_bytes). Throws Error when the shape differs from the
/// recipe's (naming both) or a row to quantise holds NaN or Inf.
int64_t apply_rows(at::Tensor& table, const RowRecipe& recipe);

/// Bounds within which two rows count as near-identical (docs/compression.md).
struct MergeOptions {
  double min_cosine = 0.99;  ///< cosine of the two rows at least this
  double max_norm_ratio = 1.05;  ///< the larger norm at most this times the smaller
};

/// Fills `t.merge_into` and `t.merge_sq` from the table's values: exposed rows in order of
/// positive lookups (most first) become representatives unless one already chosen is within
/// `options` (then the row may merge into the closest such); never-exposed rows merge into
/// nothing. Throws Error when the table's shape differs from the profile's.
void add_merge_candidates(RowProfile& t, const at::Tensor& table, const MergeOptions& options = {});

/// The row rule's input from a trained table and its tracker state: per row the positive
/// lookups (lookups - negatives), whether it was exposed, max |x|, sum x^2 and the squared
/// distance to the fallback row (the mean of the exposed rows; of all rows when none was).
RowProfile row_profile(const std::string& name, const at::Tensor& table, const EmbeddingRows& rows);

}  // namespace gradscope::compress
