// attention_gemm.h (private to src/): the matrix products of `fa4sim attention` whose order is part
// of what they compute: the float64 references' S = Q K^T and O = P V (reference_tile in
// attention.cpp) and the model's float32 scores (attention_scores.h).
//
// Order: every element is one chain of fmas over the reduction index in order, from +0:
//   C[i][j] = fma(A[i][d-1], B[d-1][j], ... fma(A[i][1], B[1][j], fma(A[i][0], B[0][j], +0)))
// the naive loop `c = 0; for k: c = std::fma(a[k], b[k], c)`, whatever the blocking around it
// (simd::fma_panel keeps each element's chain). The AVX2/FMA path and the scalar path give the
// same bits. The operand B is first copied into column panels of two vectors (Panels: 8 doubles or
// 16 floats), once per (batch, head), so that a key block of a panel stays in L1 while groups of 6
// rows sweep it. Eigen's GEMM (the references' products before) runs at about half the float64
// FMA rate here on d = 128 tiles; its order depends on Eigen's blocking and the ISA.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

#include "../core/fma_panel.h"

namespace fa4sim::detail {

// Column panels of a matrix B (depth x cols, as the right operand of a product), kCols columns
// each (two AVX2 vectors): panel p holds B[k][kCols p + l] at data[(p * depth + k) * kCols + l];
// only the full panels (cols / kCols of them).
template <class T>
struct Panels {
  static constexpr int kCols = 64 / int(sizeof(T));
  std::vector<T> data;
  int depth = 0, panels = 0;
};
using Panels8 = Panels<double>;

// Copies b(k, kCols p + l) = M[k * sk + (kCols p + l) * sj] into panel order.
template <class T>
Panels<T> make_panels(const T* M, size_t sk, size_t sj, int depth, int cols) {
  constexpr int w = Panels<T>::kCols;
  Panels<T> p;
  p.depth = depth;
  p.panels = cols / w;
  p.data.resize(size_t(p.panels) * size_t(depth) * w);
  for (int q = 0; q < p.panels; ++q)
    for (int k = 0; k < depth; ++k)
      for (int l = 0; l < w; ++l)
        p.data[(size_t(q) * size_t(depth) + size_t(k)) * w + size_t(l)] =
            M[size_t(k) * sk + size_t(w * q + l) * sj];
  return p;
}

// Panels of the transpose of M (rows x cols, row stride ld): B = M^T, for C = A M^T.
template <class T>
Panels<T> panels_of_transpose(const T* M, size_t ld, int rows, int cols) {
  return make_panels(M, 1, ld, cols, rows);  // b(k, j) = M[j][k]
}

// Panels of M itself (rows x cols, row stride ld): B = M, for C = A M.
template <class T>
Panels<T> panels_of(const T* M, size_t ld, int rows, int cols) {
  return make_panels(M, ld, 1, rows, cols);  // b(k, j) = M[k][j]
}

// C (rows x n) = A (rows x depth, stride lda) B, where B is given twice: as `Bp`, its panels
// (covering at least the full panels of the first n columns, depth Bp.depth >= depth), and as
// b(k, j) = Bs[k * bk + j * bj] for the columns past the last full panel. Every C[i][j] is the
// chain above over k = 0..depth-1. Keys are blocked by 256 inside (same values).
template <class T>
void gemm_panels(const T* A, size_t lda, int rows, int depth, const Panels<T>& Bp, const T* Bs,
                 size_t bk, size_t bj, int n, T* C, size_t ldc) {
  constexpr int kRows = 6, kKeyBlock = 256, w = Panels<T>::kCols;
  for (int i = 0; i < rows; ++i) std::fill_n(C + size_t(i) * ldc, n, T(0));
  int j0 = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const int full = std::min(Bp.panels, n / w);
  for (int k0 = 0; k0 < depth; k0 += kKeyBlock) {
    const int kn = std::min(kKeyBlock, depth - k0);
    for (int q = 0; q < full; ++q) {
      const T* panel = Bp.data.data() + (size_t(q) * size_t(Bp.depth) + size_t(k0)) * w;
      for (int r = 0; r < rows; r += kRows)
        simd::fma_panel_rows(std::min(kRows, rows - r), C + size_t(r) * ldc + size_t(w * q), ldc,
                             A + size_t(r) * lda + size_t(k0), lda, panel, w, kn);
    }
  }
  j0 = w * full;
#endif
  for (int i = 0; i < rows; ++i)
    for (int j = j0; j < n; ++j) {
      T c = 0;
      for (int k = 0; k < depth; ++k)
        c = std::fma(A[size_t(i) * lda + size_t(k)], Bs[size_t(k) * bk + size_t(j) * bj], c);
      C[size_t(i) * ldc + size_t(j)] = c;
    }
}

}  // namespace fa4sim::detail
