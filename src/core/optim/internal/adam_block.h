// The update of one block of the fused Adam pass, in a portable build and an AVX2 build of the
// same source (adam_block.inc): the same float operations in the same order, so both give the
// same bits; the AVX2 one runs only after a runtime CPU check.
#pragma once

#include <cstdint>

#include "gradscope/core/optim/adam_pass.h"

namespace gradscope::internal {

using AdamBlock = void (*)(float* p, const float* g, float* m, float* v, int64_t n, const AdamCoefficients& c,
                           float* delta);

void adam_block_portable(float* p, const float* g, float* m, float* v, int64_t n, const AdamCoefficients& c,
                         float* delta);
/// Only valid when avx2_available().
void adam_block_avx2(float* p, const float* g, float* m, float* v, int64_t n, const AdamCoefficients& c,
                     float* delta);

}  // namespace gradscope::internal
