// attention_gemm.cpp: the references' float64 matrix products (see attention_gemm.h).
#include "attention_gemm.h"

#include <algorithm>
#include <cmath>

#include "../core/fma_panel.h"

namespace fa4sim::detail {

namespace {

// Copies b(k, 8p + l) = M[k * sk + (8p + l) * sj] into panel order.
Panels8 make_panels(const double* M, size_t sk, size_t sj, int depth, int cols) {
  Panels8 p;
  p.depth = depth;
  p.panels = cols / 8;
  p.data.resize(size_t(p.panels) * size_t(depth) * 8);
  for (int q = 0; q < p.panels; ++q)
    for (int k = 0; k < depth; ++k)
      for (int l = 0; l < 8; ++l)
        p.data[(size_t(q) * size_t(depth) + size_t(k)) * 8 + size_t(l)] =
            M[size_t(k) * sk + size_t(8 * q + l) * sj];
  return p;
}

}  // namespace

Panels8 panels_of_transpose(const double* M, size_t ld, int rows, int cols) {
  return make_panels(M, 1, ld, cols, rows);  // b(k, j) = M[j][k]
}

Panels8 panels_of(const double* M, size_t ld, int rows, int cols) {
  return make_panels(M, ld, 1, rows, cols);  // b(k, j) = M[k][j]
}

void gemm_panels(const double* A, size_t lda, int rows, int depth, const Panels8& Bp,
                 const double* Bs, size_t bk, size_t bj, int n, double* C, size_t ldc) {
  constexpr int kRows = 6, kKeyBlock = 256;
  for (int i = 0; i < rows; ++i) std::fill_n(C + size_t(i) * ldc, n, 0.0);
  int j0 = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const int full = std::min(Bp.panels, n / 8);
  for (int k0 = 0; k0 < depth; k0 += kKeyBlock) {
    const int kn = std::min(kKeyBlock, depth - k0);
    for (int q = 0; q < full; ++q) {
      const double* panel = Bp.data.data() + (size_t(q) * size_t(Bp.depth) + size_t(k0)) * 8;
      for (int r = 0; r < rows; r += kRows)
        simd::fma_panel_rows(std::min(kRows, rows - r), C + size_t(r) * ldc + size_t(8 * q), ldc,
                             A + size_t(r) * lda + size_t(k0), lda, panel, 8, kn);
    }
  }
  j0 = 8 * full;
#endif
  for (int i = 0; i < rows; ++i)
    for (int j = j0; j < n; ++j) {
      double c = 0.0;
      for (int k = 0; k < depth; ++k)
        c = std::fma(A[size_t(i) * lda + size_t(k)], Bs[size_t(k) * bk + size_t(j) * bj], c);
      C[size_t(i) * ldc + size_t(j)] = c;
    }
}

}  // namespace fa4sim::detail
