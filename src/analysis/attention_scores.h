// attention_scores.h (private to src/): the kernel model's float32 scores S = Q K^T of `fa4sim
// attention` (run_unit in attention.cpp), on one instruction set in every build (Note [Scores on
// the baseline ISA] in attention_scores.cpp).
#pragma once

namespace fa4sim::detail {

// S (rows x nv, row-major) = Q (rows x d, row-major) times K (nv x d, row-major) transposed.
void score_product(const float* Q, int rows, const float* K, int nv, int d, float* S);

}  // namespace fa4sim::detail
