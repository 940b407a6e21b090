// attention_scores.cpp: see attention_scores.h.
//
// ---- Note [Score product order]
// The model's scores are a float32 product of the quantized Q and K in one fixed order: every
// S[i][j] is the chain c = fma(Q[i][k], K[j][k], c) over k = 0..d-1 from +0, the naive loop, which
// the AVX2 kernel keeps lane by lane (simd::fma_panel) and the scalar loop spells out. So the
// -march=native build, the wheel (x86-64-v2, the AVX2 copy chosen at run time, or the scalar loop
// on a CPU without FMA) and a non-x86 build give the same bits. The order matters: Eigen's GEMM,
// which computed S before, sums in an order that depends on the vector width it is compiled for,
// and the error split's float32-P variant shows the difference (error_split.p_conversion moved by
// 1.4e-9 relative between an AVX2 and an SSE build, B1 H4/2 S128 d64); that is why S was compiled
// for the baseline ISA in every x86 build until this kernel, at about a third of the FMA rate
// that P V reached with the same panel kernel.
#include "attention_scores.h"

#include <cmath>
#include <cstddef>

#if FA4SIM_RUNTIME_DISPATCH
#include "../core/cpu_features.h"
#endif

namespace fa4sim::detail {

void score_product(const float* Q, int rows, const float* K, int nv, int d, float* S) {
#if defined(__AVX2__) && defined(__FMA__)
  thread_local std::vector<float> pack;  // reused: no allocation (page faults) per query tile
  score_panels16(Q, rows, K, nv, d, S, pack);
#else
#if FA4SIM_RUNTIME_DISPATCH
  if (cpu_has_avx2_fma()) return score_product_avx2(Q, rows, K, nv, d, S);
#endif
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < nv; ++j) {
      const float* q = Q + size_t(i) * size_t(d);
      const float* k = K + size_t(j) * size_t(d);
      float c = 0.0f;
      for (int t = 0; t < d; ++t) c = std::fma(q[t], k[t], c);
      S[size_t(i) * size_t(nv) + size_t(j)] = c;
    }
#endif
}

}  // namespace fa4sim::detail
