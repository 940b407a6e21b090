// softmax_ref.h: the float64 reference of one softmax(S) @ V (role `_ref`, docs/style.md §2),
// the one `fa4sim rescale` measures the online-softmax simulator against.
//
// ---- Contract: softmax_reference
// Inputs:         S (rows x keys, float32, row-major; scores in the units that scale_log2 turns
//                 into log2 units), V (keys x d, float32, row-major); rows, keys, d >= 1.
// Computes:       per row m = max_k S, p_k = exp2((S_k - m) * scale_log2) in float64,
//                 O = (sum_k p_k V_k) / sum_k p_k with one float64 fma per key in key order,
//                 LSE = (m * scale_log2 + log2(sum_k p_k)) * ln 2 (natural log).
// Bit-exact vs:   that plain float64 loop, for any thread count (the column panels, row chunks and
//                 AVX2 lanes only regroup independent fma chains; tests/ref/test_softmax_ref.cpp).
// Special values: -inf scores are masked keys (p = 0); a row with every key masked gives O = 0 and
//                 LSE = -inf. NaN and +inf scores are refused before this (check_scores, row_sim.h).
#pragma once

#include <vector>

namespace fa4sim {

// float64 softmax(S * scale_log2 in base 2) @ V and the natural-log LSE (O_ref: rows x d,
// lse_ref: rows; both resized).
void softmax_reference(const float* S, int rows, int keys, float scale_log2, const float* V, int d,
                       std::vector<double>& O_ref, std::vector<double>& lse_ref, int threads);

}  // namespace fa4sim
