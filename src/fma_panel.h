// fma_panel.h (private to src/): the register-blocked inner kernel shared by the simulator's
// float32 P_cast @ V (online_softmax.cpp) and the float64 reference (rescale.cpp).
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

template <class T> struct Vec;
template <> struct Vec<float> {
  using V = __m256;
  static constexpr int kW = 8;
  static V load(const float* p) { return _mm256_loadu_ps(p); }
  static void store(float* p, V v) { _mm256_storeu_ps(p, v); }
  static V bcast(const float* p) { return _mm256_broadcast_ss(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
};
template <> struct Vec<double> {
  using V = __m256d;
  static constexpr int kW = 4;
  static V load(const double* p) { return _mm256_loadu_pd(p); }
  static void store(double* p, V v) { _mm256_storeu_pd(p, v); }
  static V bcast(const double* p) { return _mm256_broadcast_sd(p); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
};

template <int R, class T>
inline void fma_panel(T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb, int n) {
  using X = Vec<T>;
  typename X::V acc[R][2];
  for (int i = 0; i < R; ++i) {
    acc[i][0] = X::load(C + size_t(i) * ldc);
    acc[i][1] = X::load(C + size_t(i) * ldc + X::kW);
  }
  for (int k = 0; k < n; ++k) {
    const T* b = B + size_t(k) * ldb;
    const typename X::V b0 = X::load(b), b1 = X::load(b + X::kW);
    for (int i = 0; i < R; ++i) {
      const typename X::V a = X::bcast(A + size_t(i) * lda + size_t(k));
      acc[i][0] = X::fma(a, b0, acc[i][0]);
      acc[i][1] = X::fma(a, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < R; ++i) {
    X::store(C + size_t(i) * ldc, acc[i][0]);
    X::store(C + size_t(i) * ldc + X::kW, acc[i][1]);
  }
}

// fma_panel for any row count 1..6 (the remainder of a group of 6).
template <class T>
inline void fma_panel_rows(int rows, T* C, size_t ldc, const T* A, size_t lda, const T* B, size_t ldb,
                           int n) {
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
