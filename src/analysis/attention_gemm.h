// attention_gemm.h (private to src/): the float64 matrix products of `fa4sim attention`'s
// references (reference_tile in attention.cpp): S = Q K^T and O = P V.
//
// Order: every element is one chain of float64 fmas over the reduction index in order, from +0:
//   C[i][j] = fma(A[i][d-1], B[d-1][j], ... fma(A[i][1], B[1][j], fma(A[i][0], B[0][j], +0)))
// the naive loop `c = 0; for k: c = std::fma(a[k], b[k], c)`, whatever the blocking around it
// (simd::fma_panel keeps each element's chain). The AVX2/FMA path and the scalar path give the
// same bits. The operand B is first copied into column panels of 8 (Panels8), once per
// (batch, head), so that a key block of a panel stays in L1 while groups of 6 rows sweep it.
// Eigen's GEMM (the references' products before) runs at about half the float64 FMA rate here
// on d = 128 tiles; its order depends on Eigen's blocking and the ISA.
#pragma once

#include <cstddef>
#include <vector>

namespace fa4sim::detail {

// Column panels of 8 of a matrix B (depth x cols, as the right operand of a product): panel p
// holds B[k][8p + l] at data[(p * depth + k) * 8 + l]; only the full panels (cols / 8 of them).
struct Panels8 {
  std::vector<double> data;
  int depth = 0, panels = 0;
};

// Panels of the transpose of M (rows x cols, row stride ld): B = M^T, for C = A M^T.
Panels8 panels_of_transpose(const double* M, size_t ld, int rows, int cols);
// Panels of M itself (rows x cols, row stride ld): B = M, for C = A M.
Panels8 panels_of(const double* M, size_t ld, int rows, int cols);

// C (rows x n) = A (rows x depth, stride lda) B, where B is given twice: as `Bp`, its panels
// (covering at least the full panels of the first n columns, depth Bp.depth >= depth), and as
// b(k, j) = Bs[k * bk + j * bj] for the columns past the last full panel. Every C[i][j] is the
// chain above over k = 0..depth-1. Keys are blocked by 256 inside (same values).
void gemm_panels(const double* A, size_t lda, int rows, int depth, const Panels8& Bp,
                 const double* Bs, size_t bk, size_t bj, int n, double* C, size_t ldc);

}  // namespace fa4sim::detail
