// Embedding tables, row by row: the rule's profile from a trained table, and applying a recipe.
#include <torch/utils.h>

#include <ATen/ATen.h>

#include "gradscope/core/compress/packed.h"
#include "gradscope/core/error.h"
#include "gradscope/torch/compress/apply_recipe.h"

namespace gradscope::compress {

int64_t apply_rows(at::Tensor& table, const RowRecipe& recipe) {
  const std::string who = "embedding table '" + recipe.table + "': ";
  if (table.dim() != 2 || table.size(0) != recipe.rows || table.size(1) != recipe.dim)
    throw Error(who + "recipe for [" + std::to_string(recipe.rows) + ", " + std::to_string(recipe.dim) +
                "], table is " + (table.dim() == 2 ? "[" + std::to_string(table.size(0)) + ", " + std::to_string(table.size(1)) + "]"
                                                   : std::to_string(table.dim()) + "-dimensional"));
  if (static_cast<int64_t>(recipe.level.size()) != recipe.rows || static_cast<int64_t>(recipe.fallback.size()) != recipe.dim)
    throw Error(who + "recipe has " + std::to_string(recipe.level.size()) + " row levels and a fallback of " +
                std::to_string(recipe.fallback.size()) + " values");
  bool merged = false;
  for (uint8_t l : recipe.level) merged = merged || l == kRowMerged;
  if (merged && static_cast<int64_t>(recipe.merged_into.size()) != recipe.rows)
    throw Error(who + "recipe merges rows but names no row for each to share");
  ::torch::NoGradGuard no_grad;
  const at::Tensor level = at::from_blob(const_cast<uint8_t*>(recipe.level.data()), {recipe.rows}, at::kByte).to(at::kLong);
  const at::Tensor quantised = level.ge(kRowFp16).logical_and(level.lt(kRowPruned));
  if (!at::isfinite(table.index({quantised})).all().item<bool>())
    throw Error(who + "a row to quantise holds NaN or Inf");
  for (int64_t i = 0; i < recipe.rows; ++i) {
    if (recipe.level[i] != kRowMerged) continue;
    const int64_t m = recipe.merged_into[i];
    if (m < 0 || m >= recipe.rows || recipe.level[m] >= kRowPruned)
      throw Error(who + "merged row " + std::to_string(i) + " shares row " + std::to_string(m) + ", which is not a stored row");
  }
  // What the packed file holds, reconstructed as a loader does (core/compress/packed.h), so
  // that a table applied here equals one loaded from the file.
  const at::Tensor x = table.detach().to(at::kFloat).contiguous();
  const PackedModel packed =
      pack(Recipe{}, {{"table", "F32", {recipe.rows, recipe.dim}, x.data_ptr()}}, {}, {}, {{"table", recipe}});
  const std::vector<StoredTensor> dense = unpack(packed);
  table.copy_(at::from_blob(const_cast<uint8_t*>(dense.front().data.data()), {recipe.rows, recipe.dim}, at::kFloat));
  return packed.table_bytes;
}

RowProfile row_profile(const std::string& name, const at::Tensor& table, const EmbeddingRows& rows) {
  if (table.dim() != 2 || table.size(0) != rows.rows() || table.size(1) != rows.dim())
    throw Error("embedding table '" + name + "': the table and the tracker's rows differ in shape");
  RowProfile t;
  t.table = name;
  t.rows = rows.rows();
  t.dim = rows.dim();
  ::torch::NoGradGuard no_grad;
  const at::Tensor x = table.detach().to(at::kDouble).contiguous();
  std::vector<int64_t> exposed_rows;
  for (int64_t i = 0; i < t.rows; ++i) {
    t.lookups.push_back(static_cast<double>(rows.lookups(i)) - static_cast<double>(rows.negatives(i)));
    t.exposed.push_back(rows.exposure(i) > 0);
    if (rows.exposure(i) > 0) exposed_rows.push_back(i);
  }
  const at::Tensor basis = exposed_rows.empty() ? x : x.index_select(0, at::tensor(exposed_rows, at::kLong));
  const at::Tensor mean = basis.mean(0).contiguous();
  t.fallback.assign(mean.data_ptr<double>(), mean.data_ptr<double>() + t.dim);
  const at::Tensor amax = x.abs().amax(at::IntArrayRef{1}).contiguous(), sq = x.pow(2).sum(at::IntArrayRef{1}).contiguous(),
                   fsq = (x - mean).pow(2).sum(at::IntArrayRef{1}).contiguous();
  t.max_abs.assign(amax.data_ptr<double>(), amax.data_ptr<double>() + t.rows);
  t.sum_sq.assign(sq.data_ptr<double>(), sq.data_ptr<double>() + t.rows);
  t.fallback_sq.assign(fsq.data_ptr<double>(), fsq.data_ptr<double>() + t.rows);
  return t;
}

}  // namespace gradscope::compress
