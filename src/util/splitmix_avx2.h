// splitmix_avx2.h (private to src/): splitmix64_mix (include/fa4sim/core/splitmix.h) on four
// 64-bit lanes, for the counter-based streams of exp2_analysis.cpp and row_stream.cpp. Each lane
// equals the scalar function bit for bit.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include <cstdint>

#include "fa4sim/core/splitmix.h"

namespace fa4sim::simd {

// a * c mod 2^64 in each 64-bit lane, c a constant. AVX2 has no 64-bit multiply-low: the low
// 32 x 32 product plus both cross products shifted up; the high x high product falls out mod 2^64.
inline __m256i mul64_const(__m256i a, uint64_t c) {
  const __m256i c_lo = _mm256_set1_epi64x(static_cast<long long>(c & 0xFFFFFFFFu));
  const __m256i c_hi = _mm256_set1_epi64x(static_cast<long long>(c >> 32));
  const __m256i lo = _mm256_mul_epu32(a, c_lo);
  const __m256i cross =
      _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), c_lo), _mm256_mul_epu32(a, c_hi));
  return _mm256_add_epi64(lo, _mm256_slli_epi64(cross, 32));
}

// splitmix64_mix of each lane.
inline __m256i splitmix64_mix4(__m256i z) {
  z = mul64_const(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), kMixMul1);
  z = mul64_const(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), kMixMul2);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

}  // namespace fa4sim::simd
#endif
