// fma_panel.h (private to src/): the register-blocked inner kernel shared by the simulator's
// float32 P_cast @ V (online_softmax.cpp) and the float64 reference (src/ref/softmax_ref.cpp).
//
// fma_panel<R>(C, ldc, A, lda, B, ldb, n): for i < R rows and the 2W columns of one panel
// (W = 8 floats or 4 doubles per AVX2 vector), C[i][j] = fma(A[i][k], B[k][j], C[i][j]) for
// k = 0..n-1 in order: lane by lane the scalar std::fma chain, so any blocking of rows, columns or
// keys around it leaves every value unchanged. The 2R accumulators and the two B vectors of a key
// stay in registers (R = 6: 12 + 2 + 1 broadcast of 16), so a key costs 2 + R loads for 2R fmas.
#pragma once

#include <cstddef>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

namespace fa4sim::simd {

template <class T>
struct Vec;
template <>
struct Vec<float> {
  using V = __m256;
  static constexpr int kW = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
};
template <>
struct Vec<double> {
  using V = __m256d;
  static constexpr int kW = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
};

// The accumulators are named variables, not an array: GCC 12 keeps an array of vectors in memory
// and stores all of it on every key, which halves the fma rate.
template <int R, class T>
inline void fma_panel(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int n) {
  static_assert(R >= 1 && R <= 6);
  using X = Vec<T>;
  using V = typename X::V;
  constexpr int W = X::kW;
  V c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{}, c40{}, c41{}, c50{}, c51{};
  auto row = [&](int i) { return C + size_t(i) * ldc; };
  c00 = X::load(row(0)), c01 = X::load(row(0) + W);
  if constexpr (R > 1) c10 = X::load(row(1)), c11 = X::load(row(1) + W);
  if constexpr (R > 2) c20 = X::load(row(2)), c21 = X::load(row(2) + W);
  if constexpr (R > 3) c30 = X::load(row(3)), c31 = X::load(row(3) + W);
  if constexpr (R > 4) c40 = X::load(row(4)), c41 = X::load(row(4) + W);
  if constexpr (R > 5) c50 = X::load(row(5)), c51 = X::load(row(5) + W);
  for (int k = 0; k < n; ++k) {
    const T* b = B + size_t(k) * ldb;
    const V b0 = X::load(b), b1 = X::load(b + W);
    const T* a = A + size_t(k);
    V x = X::bcast(a);
    c00 = X::fma(x, b0, c00), c01 = X::fma(x, b1, c01);
    if constexpr (R > 1) x = X::bcast(a + lda), c10 = X::fma(x, b0, c10), c11 = X::fma(x, b1, c11);
    if constexpr (R > 2)
      x = X::bcast(a + 2 * lda), c20 = X::fma(x, b0, c20), c21 = X::fma(x, b1, c21);
    if constexpr (R > 3)
      x = X::bcast(a + 3 * lda), c30 = X::fma(x, b0, c30), c31 = X::fma(x, b1, c31);
    if constexpr (R > 4)
      x = X::bcast(a + 4 * lda), c40 = X::fma(x, b0, c40), c41 = X::fma(x, b1, c41);
    if constexpr (R > 5)
      x = X::bcast(a + 5 * lda), c50 = X::fma(x, b0, c50), c51 = X::fma(x, b1, c51);
  }
  X::store(row(0), c00), X::store(row(0) + W, c01);
  if constexpr (R > 1) X::store(row(1), c10), X::store(row(1) + W, c11);
  if constexpr (R > 2) X::store(row(2), c20), X::store(row(2) + W, c21);
  if constexpr (R > 3) X::store(row(3), c30), X::store(row(3) + W, c31);
  if constexpr (R > 4) X::store(row(4), c40), X::store(row(4) + W, c41);
  if constexpr (R > 5) X::store(row(5), c50), X::store(row(5) + W, c51);
}

// fma_panel for any row count 1..6 (the remainder of a group of 6).
template <class T>
inline void fma_panel_rows(int rows, T* C, size_t ldc, const T* A, size_t lda, const T* B,
                           size_t ldb, int n) {
  switch (rows) {
    case 6: fma_panel<6>(C, ldc, A, lda, B, ldb, n); break;
    case 5: fma_panel<5>(C, ldc, A, lda, B, ldb, n); break;
    case 4: fma_panel<4>(C, ldc, A, lda, B, ldb, n); break;
    case 3: fma_panel<3>(C, ldc, A, lda, B, ldb, n); break;
    case 2: fma_panel<2>(C, ldc, A, lda, B, ldb, n); break;
    case 1: fma_panel<1>(C, ldc, A, lda, B, ldb, n); break;
    default: break;
  }
}

}  // namespace fa4sim::simd
#endif
