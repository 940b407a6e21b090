// attention_scores.cpp: see attention_scores.h.
//
// ---- Note [Score product order]
// The model's scores are a float32 product of the quantized Q and K in one fixed order: every
// S[i][j] is the chain c = fma(Q[i][k], K[j][k], c) over k = 0..d-1 from +0, the naive loop, which
// gemm_panels (attention_gemm.h) keeps lane by lane in its AVX2 kernel and spells out in its scalar loop. So the
// -march=native build, the wheel (x86-64-v2, the AVX2 copy chosen at run time, or the scalar loop
// on a CPU without FMA) and a non-x86 build give the same bits. The order matters: Eigen's GEMM,
// which computed S before, sums in an order that depends on the vector width it is compiled for,
// and the error split's float32-P variant shows the difference (error_split.p_conversion moved by
// 1.4e-9 relative between an AVX2 and an SSE build, B1 H4/2 S128 d64); that is why S was compiled
// for the baseline ISA in every x86 build until this kernel, at about a third of the FMA rate
// that P V reached with the same panel kernel.
#include "attention_scores.h"

#if FA4SIM_RUNTIME_DISPATCH
#include "../core/cpu_features.h"
#endif

namespace fa4sim::detail {

void score_product(const float* Q, int rows, const Panels<float>& Kp, const float* K, int nv, int d,
                   float* S) {
#if FA4SIM_RUNTIME_DISPATCH && !(defined(__AVX2__) && defined(__FMA__))
  if (cpu_has_avx2_fma()) return score_product_avx2(Q, rows, Kp, K, nv, d, S);
#endif
  gemm_panels(Q, size_t(d), rows, d, Kp, K, 1, size_t(d), nv, S, size_t(nv));
}

}  // namespace fa4sim::detail
