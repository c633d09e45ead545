// A compressed LibTorch model on disk and back (docs/compression.md, "The packed file"):
// save() packs the model's state under a recipe (bit-packed codes, per-unit scales, pruned
// units and inputs removed) into one safetensors-layout file; load() restores a model of the
// same architecture from it, equal bit for bit to apply() of the same recipe.
//
//   gradscope::PackedFileSize s = gradscope::compress::save(*net, recipe, "model.gsq.safetensors");
//   Net fresh;                                      // the same architecture, any weights
//   gradscope::compress::load(*fresh, "model.gsq.safetensors");   // runs as the applied model
//   gradscope::compress::save_weights(*net, "weights.safetensors");   // FP32, for the CLI
#pragma once

#include <torch/nn/module.h>

#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/compress/packed.h"
#include "gradscope/io/compress/packed_file.h"

namespace gradscope::compress {

/// A model's state by dotted path: its parameters, then its buffers (BatchNorm's statistics).
std::vector<std::pair<std::string, at::Tensor>> model_state(::torch::nn::Module& model);

/// Unstructured pruning's keep masks (recipe.magnitude_keep < 1): the largest |w| over every
/// recipe node's weight, as apply() keeps them. Empty for any other recipe.
std::map<std::string, std::vector<uint8_t>> magnitude_masks(const std::vector<std::pair<std::string, at::Tensor>>& state,
                                                            const Recipe& recipe);

/// Per recipe node (its id, as in the recipe), X^T X of its inputs on a calibration batch:
/// [cols, cols] with cols = the weight's elements per output unit (input_gram builds one).
/// Given, a node at an integer precision is rounded to minimise its output error on that batch
/// (core/compress/gptq.h) instead of to nearest; the file's format is the same.
using InputGrams = std::map<std::string, at::Tensor>;

/// X^T X in float64 of `rows` [N, cols]: one node input per row (a Linear's inputs; a conv's
/// unfolded patches, at::im2col transposed, columns in the weight's (channel, kh, kw) order).
at::Tensor input_gram(const at::Tensor& rows);

/// Embedding tables to pack row by row: state entry ("item.weight") -> its row recipe (rows.h).
using RowRecipes = std::map<std::string, RowRecipe>;

/// `state` packed under `recipe` (compress::pack; node weights read as float32), rounding the
/// nodes `grams` covers by GPTQ, and the tables `tables` names row by row.
PackedModel pack_state(const std::vector<std::pair<std::string, at::Tensor>>& state, const Recipe& recipe,
                       const InputGrams& grams = {}, const RowRecipes& tables = {});

/// Writes `model` packed under `recipe` (and its embedding tables under `tables`) to `path`. The
/// model is not changed. Throws Error as pack() does (the recipe does not fit the model) or when
/// the file cannot be written.
PackedFileSize save(::torch::nn::Module& model, const Recipe& recipe, const std::string& path,
                    const InputGrams& grams = {}, const RowRecipes& tables = {});

/// Every parameter and buffer at its own dtype, nothing compressed: the weights file that
/// `gradscope compress RUN --weights` reads.
PackedFileSize save_weights(::torch::nn::Module& model, const std::string& path);

/// The dense state a packed file holds (dequantised node weights as float32, zeros where
/// pruned), by dotted path.
std::vector<std::pair<std::string, at::Tensor>> load_state(const std::string& path);

/// `state`'s entries as check_state_fits compares them (a dtype the packed file cannot hold
/// is "", not compared).
std::vector<EntryShape> entry_shapes(const std::vector<std::pair<std::string, at::Tensor>>& state);

/// load_state(path), checked against `model`'s entries (check_state_fits: names, shapes, dtypes)
/// before anything is decoded: a file whose manifest declares a dense state larger than the
/// model's is refused without allocating it.
std::vector<std::pair<std::string, at::Tensor>> load_state(const std::string& path, const std::vector<EntryShape>& model);

/// Copies load_state(path) into `model`'s parameters and buffers. Throws Error before changing
/// anything when the file lacks an entry of the model or has one the model lacks (naming them),
/// a shape differs or a dtype cannot load (an integer entry into a float parameter).
void load(::torch::nn::Module& model, const std::string& path);

/// Copies `state` into the model's parameters and buffers, checked as load() does; `source`
/// names where it came from in errors.
void load_state_into(::torch::nn::Module& model, const std::vector<std::pair<std::string, at::Tensor>>& state,
                     const std::string& source);

}  // namespace gradscope::compress
