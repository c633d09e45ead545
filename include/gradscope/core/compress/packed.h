// A compressed model as it is stored: per recipe node its kept weights as bit-packed integer
// codes with one FP32 scale per kept output unit (or FP16 / FP32 values), its bias, a bitmap
// when unstructured pruning chose the kept weights, and which units and inputs were removed;
// every other entry of the model's state (biases of other modules, norms' buffers) as it was.
// Standard library only: the CLI packs saved weights without LibTorch. The file around it is
// io/compress/packed_file.h (safetensors' layout); LibTorch's side torch/compress/packed.h.
//
//   std::vector<gradscope::compress::StateEntry> state = ...;   // "fc1.weight" -> float32 data
//   gradscope::compress::PackedModel p = gradscope::compress::pack(recipe, state);
//   p.data_bytes();                                          // == the recipe's bytes + other entries
//   std::vector<gradscope::compress::StoredTensor> dense = gradscope::compress::unpack(p);
//
// Quantisation is symmetric per output unit (quantise_unit): scale = max|w_j| / qmax in float,
// q = nearest integer of w / scale (ties to even) clamped to +-qmax, value = q * scale. apply()
// (torch/compress/apply_recipe.h) and every loader reconstruct values through unpack_node, so a
// loaded model equals the applied one bit for bit.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "gradscope/core/compress/recipe.h"
#include "gradscope/core/compress/rows.h"

namespace gradscope::compress {

/// One tensor as the file holds it. `dtype` uses safetensors' names: "F32", "F16", "F64",
/// "BF16", "I64", "I32", "I16", "I8", "U8", "BOOL". `data` is little-endian, row-major.
struct StoredTensor {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

/// Bytes per element of a safetensors dtype; throws Error naming an unknown one.
int64_t stored_dtype_size(const std::string& dtype);

/// A node id's module path as state entries name it: "encoder/fc" -> "encoder.fc" (a node's
/// weight is the entry "<path>.weight").
std::string node_path(const std::string& node);

/// One entry of a model's state to pack: a parameter or buffer by its dotted path
/// ("fc1.weight", "bn.running_mean"), pointing at its contiguous data.
struct StateEntry {
  std::string name;
  std::string dtype;  ///< as StoredTensor; node weights and biases must be "F32"
  std::vector<int64_t> shape;
  const void* data = nullptr;
};

/// What the manifest says of one packed node.
struct PackedNode {
  std::string node;           ///< module path, dotted ("encoder.fc")
  Precision precision = Precision::kFp32;
  std::vector<int64_t> weight_shape;  ///< the full weight's shape
  bool has_bias = false;
  std::vector<int64_t> pruned_units;  ///< output units removed (dim 0), ascending
  std::vector<int64_t> pruned_inputs;  ///< input indices removed (dim 1) with the previous node's units
  bool bitmap = false;        ///< kept weights chosen by a bitmap (unstructured pruning)
  int64_t bytes = 0;          ///< bytes of its tensors in the file (== node_bytes of the recipe)
};

/// What the manifest says of one embedding table packed row by row (rows.h): tensors
/// "<name>.rows.codes" (U8, each row's level as an index into `levels`, ceil(log2 k) bits a
/// row), ".rows.fp32" / ".rows.fp16" (the rows at that precision, in row order),
/// ".rows.intN.codes" for N = 8, 4, 3, 2 (U8, each row's codes from a byte boundary) with
/// ".rows.intN.scales" (F32 per row), ".rows.fallback" (F32, what pruned
/// rows are served) and ".rows.merged" (U8, each merged row's representative, ceil(log2 rows)
/// bits); only the tensors with content are written.
struct PackedTable {
  std::string name;             ///< its state entry ("item.weight")
  int64_t rows = 0, dim = 0;
  std::vector<uint8_t> levels;  ///< the RowLevels present, ascending
  int64_t bytes = 0;            ///< bytes of its tensors (== row_bytes of its recipe)
};

/// A packed model: the manifest's nodes and the file's tensors (node parts first, named
/// "<node>.weight.codes" / ".weight.scales" / ".weight.mask" / ".weight" / ".bias", then every
/// other state entry under its own name).
struct PackedModel {
  std::vector<PackedNode> nodes;
  std::vector<PackedTable> tables;
  std::vector<StoredTensor> tensors;
  int64_t node_bytes = 0;   ///< the nodes' tensors
  int64_t table_bytes = 0;  ///< the tables' tensors
  int64_t other_bytes = 0;  ///< the other state entries, stored as they were
  int64_t data_bytes() const { return node_bytes + table_bytes + other_bytes; }
};

/// Symmetric quantisation of one unit's `n` weights to integers in [-qmax, qmax]: returns the
/// scale (max|w| / qmax in float; 0 for an all-zero unit, whose codes are all 0).
float quantise_unit(const float* w, int64_t n, int qmax, int32_t* q);

/// Packs `state` under `recipe`: every recipe node needs "<node>.weight" (and ".bias" when the
/// recipe says so) as F32 with the recipe's shapes. `keep_masks` (node -> one byte per weight,
/// non-zero kept) gives unstructured pruning's choice, needed when recipe.magnitude_keep < 1.
/// Throws Error for a missing entry or shape (naming it), NaN or Inf in a weight to quantise,
/// a pruned unit out of range or twice, or a pruned unit whose next node is not in the recipe.
/// `unit_scales` (node -> one scale per kept unit, integer precisions only) replaces
/// round-to-nearest's max|w_j| / qmax: each weight then goes to the nearest level of the given
/// grid (gptq.h gives weights already on it, so they are stored exactly).
/// `row_recipes` (state entry name -> its row recipe) packs those F32 [rows, dim] entries row by
/// row: each row at its level (quantise_unit per INT8/INT4 row), pruned rows left out and served
/// the recipe's fallback row, merged rows their representative's stored values.
PackedModel pack(const Recipe& recipe, const std::vector<StateEntry>& state,
                 const std::map<std::string, std::vector<uint8_t>>& keep_masks = {},
                 const std::map<std::string, std::vector<float>>& unit_scales = {},
                 const std::map<std::string, RowRecipe>& row_recipes = {});

/// An entry's name, dtype (StoredTensor's names; "" when not known) and shape, to check that a
/// file's state fits a model.
struct EntryShape {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
};

/// Whether a file entry of dtype `file` may load into a model entry of dtype `model`: the same
/// dtype, or two floating-point ones (a node's dequantised F32 weight into a float64 model);
/// an integer or bool entry only into its own dtype. "" on either side: not compared.
bool loads_into(const std::string& file, const std::string& model);

/// Throws Error "<source> does not fit this model: ..." naming the model's entries the file
/// lacks, the file's entries the model lacks, the entries whose shapes differ and those whose
/// dtypes cannot load (loads_into).
void check_state_fits(const std::vector<EntryShape>& model, const std::vector<EntryShape>& file,
                      const std::string& source);

/// Checks that a packed model's manifest and tensors agree, as a crafted file may not, and
/// returns the names and shapes of the entries unpack() gives, without decoding or allocating
/// them. Sizes are computed without overflow and compared with the tensors', so nothing the
/// parts cannot back is allocated; names, nodes, tables, levels and pruned units and inputs are
/// unique (indices ascending, in range, not all of them); each part is declared with the dtype
/// and the one-dimensional shape its node or table implies (codes, masks, row codes and merged
/// indices U8; scales F32; values and biases F32 at FP32, F16 otherwise; see PackedTable), and
/// holds the bytes the manifest says; scales are finite, >= 0 and finite times their grid's top
/// level, fallback rows finite, merged rows share a stored row. Stored FP32 / FP16 values are
/// the model's data: NaN and Inf there load as they are. Throws Error "<source>: node 'fc':
/// <field>: <what>" (or table, tensor) for the first problem.
std::vector<EntryShape> check_packed(const PackedModel& packed, const std::string& source = "packed model");

/// The dense state back: node weights and biases as F32 of their full shapes (zeros where
/// pruned or masked, q * scale where quantised), every other entry as stored. Runs
/// check_packed first and throws its Error for a packed model whose manifest and tensors
/// disagree. Pruned units, inputs and rows store nothing, so a valid manifest may declare a dense
/// state far larger than its file: a loader that has its model can compare check_packed's
/// shapes with it (check_state_fits) before it unpacks, and allocate no more than the model.
std::vector<StoredTensor> unpack(const PackedModel& packed);

}  // namespace gradscope::compress
