// attention_scores.h (private to src/): the kernel model's float32 scores S = Q K^T of `fa4sim
// attention` (run_unit in attention.cpp), one order on every instruction set (Note [Score product
// order] in attention_scores.cpp).
#pragma once

#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <algorithm>
#include <cstddef>

#include "../core/fma_panel.h"
#endif

namespace fa4sim::detail {

// S (rows x nv, row-major) = Q (rows x d, row-major) times K (nv x d, row-major) transposed:
// S[i][j] = fma(Q[i][d-1], K[j][d-1], ... fma(Q[i][0], K[j][0], +0)).
void score_product(const float* Q, int rows, const float* K, int nv, int d, float* S);

#if defined(__AVX2__) && defined(__FMA__)
// score_product's AVX2/FMA form, for a -march=native build (attention_scores.cpp) and for the
// run-time-dispatched copy of a baseline build (attention_scores_avx2.cpp): K copied into column
// panels of 16 keys (pack; the last panel padded with zeros), then simd::fma_panel over groups of
// 6 query rows, whose lanes keep each element's fma chain over k in order.
inline void score_panels16(const float* Q, int rows, const float* K, int nv, int d, float* S,
                           std::vector<float>& pack) {
  constexpr int kW = 16, kRows = 6;
  const int panels = (nv + kW - 1) / kW;
  pack.assign(size_t(panels) * size_t(d) * kW, 0.0f);
  for (int j = 0; j < nv; ++j) {
    float* dst = pack.data() + size_t(j / kW) * size_t(d) * kW + size_t(j % kW);
    const float* src = K + size_t(j) * size_t(d);
    for (int k = 0; k < d; ++k) dst[size_t(k) * kW] = src[k];
  }
  std::fill_n(S, size_t(rows) * size_t(nv), 0.0f);
  float tail[kRows * kW];
  for (int p = 0; p < panels; ++p) {
    const float* B = pack.data() + size_t(p) * size_t(d) * kW;
    const int cols = std::min(kW, nv - p * kW);
    for (int r = 0; r < rows; r += kRows) {
      const int rr = std::min(kRows, rows - r);
      const float* A = Q + size_t(r) * size_t(d);
      if (cols == kW) {
        simd::fma_panel_rows(rr, S + size_t(r) * size_t(nv) + size_t(p) * kW, size_t(nv), A,
                             size_t(d), B, kW, d);
        continue;
      }
      std::fill_n(tail, kRows * kW, 0.0f);  // the last, partial panel: through a 6 x 16 tile
      simd::fma_panel_rows(rr, tail, kW, A, size_t(d), B, kW, d);
      for (int i = 0; i < rr; ++i)
        std::copy_n(tail + i * kW, cols, S + size_t(r + i) * size_t(nv) + size_t(p) * kW);
    }
  }
}
#endif

// The dispatched copy (a baseline x86 build only; call it on a CPU with AVX2 and FMA).
void score_product_avx2(const float* Q, int rows, const float* K, int nv, int d, float* S);

}  // namespace fa4sim::detail
