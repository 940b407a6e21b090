// attention_scores.h (private to src/): the kernel model's float32 scores S = Q K^T of `fa4sim
// attention` (run_unit in attention.cpp), one order on every instruction set (Note [Score product
// order] in attention_scores.cpp).
#pragma once

#include "attention_gemm.h"

namespace fa4sim::detail {

// S (rows x nv, row-major) = Q (rows x d, row-major) times K (nv x d, row-major) transposed, every
// element gemm_panels' fma chain: Kp = panels_of_transpose(K, d, keys, d) for keys >= nv (the
// unit's keys, packed once).
void score_product(const float* Q, int rows, const Panels<float>& Kp, const float* K, int nv, int d,
                   float* S);

// The dispatched copy (a baseline x86 build only; call it on a CPU with AVX2 and FMA).
void score_product_avx2(const float* Q, int rows, const Panels<float>& Kp, const float* K, int nv,
                        int d, float* S);

}  // namespace fa4sim::detail
