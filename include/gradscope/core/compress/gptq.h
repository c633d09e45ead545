// Error-minimising rounding of one node's weights on a calibration batch, after GPTQ (Frantar,
// Ashkboos, Hoefler, Alistarh 2023, "GPTQ: Accurate Post-Training Quantization for Generative
// Pre-trained Transformers", arXiv:2210.17323): the weight's columns (inputs x kernel) are rounded
// one at a time, and each column's rounding error, scaled by the inverse of H = X^T X (X: the
// node's inputs on the calibration batch, one row per input vector), is spread over the columns
// not yet rounded, so that the node's output on that batch moves as little as possible. The
// per-unit scales stay those of round-to-nearest (max |w_j| / qmax), so the result is stored
// exactly as round-to-nearest's is (packed.h: pack with these scales).
//
//   std::vector<float> scales = gradscope::compress::gptq_round(w, units, cols, gram, /*qmax=*/7);
//   // w now holds q * scale per element, on each unit's grid
#pragma once

#include <cstdint>
#include <vector>

namespace gradscope::compress {

/// `w`: [units, cols] row-major, replaced by its rounded values q x scale_j (q in [-qmax, qmax]).
/// `gram`: [cols, cols] row-major, X^T X over the calibration inputs. `damp`: added to H's
/// diagonal as a fraction of its mean (GPTQ's 1%), so that H is invertible. A column no input
/// reaches (H_ii = 0) cannot change the output: rounded to nearest, its error not spread.
/// Returns the per-unit scales. Throws Error for qmax < 1, a size < 1, NaN or Inf in w or gram,
/// or a gram that is not positive definite after damping.
std::vector<float> gptq_round(float* w, int64_t units, int64_t cols, const double* gram, int qmax, double damp = 0.01);

}  // namespace gradscope::compress
