// ziggurat_avx2.h (private to src/): the fast path of NumPy's ziggurat (numpy_rng.h,
// ziggurat_normal) for four raw 64-bit draws at once, shared by fa4sim's own generator
// (row_stream.cpp) and NumPy's PCG64 stream (numpy_rng.cpp).
//
// For each lane: idx = r & 0xff, sign = bit 8, rabs = bits 9..60, x = +-double(rabs) * w[idx];
// the draw is accepted on its first try iff rabs < k[idx] (99.3 % of draws), and then
// ziggurat_normal returns exactly x. Returns the mask of accepted lanes (bit l = lane l) and
// stores x for all four lanes. A caller keeps the accepted lanes before the first rejected one and
// redoes that draw with the scalar ziggurat_normal from the generator state just before it, so the
// output is the scalar stream draw for draw.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <cstdint>

#include "fa4sim/util/numpy_rng.h"

namespace fa4sim::simd {

inline int ziggurat_fast4(__m256i z, double* x_out) {
  using namespace numpy_detail;
  const __m256i idx = _mm256_and_si256(z, _mm256_set1_epi64x(0xFF));
  const __m256i r = _mm256_srli_epi64(z, 8);
  const __m256i sign = _mm256_slli_epi64(_mm256_and_si256(r, _mm256_set1_epi64x(1)), 63);
  const __m256i rabs =
      _mm256_and_si256(_mm256_srli_epi64(r, 1), _mm256_set1_epi64x(0x000FFFFFFFFFFFFFll));
  // double(rabs) exactly (rabs < 2^52): the bits of 2^52 + rabs, minus 2^52.
  const __m256d rd = _mm256_sub_pd(
      _mm256_castsi256_pd(_mm256_or_si256(rabs, _mm256_set1_epi64x(0x4330000000000000ll))),
      _mm256_set1_pd(0x1p52));
  // four scalar table loads per table (faster than vpgatherqq on the AMD cores this runs on)
  alignas(32) uint64_t ix[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(ix), idx);
  const __m256d w = _mm256_set_pd(kZigWi[ix[3]], kZigWi[ix[2]], kZigWi[ix[1]], kZigWi[ix[0]]);
  const __m256i k = _mm256_set_epi64x(int64_t(kZigKi[ix[3]]), int64_t(kZigKi[ix[2]]),
                                      int64_t(kZigKi[ix[1]]), int64_t(kZigKi[ix[0]]));
  _mm256_storeu_pd(x_out, _mm256_castsi256_pd(
                              _mm256_xor_si256(_mm256_castpd_si256(_mm256_mul_pd(rd, w)), sign)));
  return _mm256_movemask_pd(_mm256_castsi256_pd(_mm256_cmpgt_epi64(k, rabs)));
}

}  // namespace fa4sim::simd
#endif
