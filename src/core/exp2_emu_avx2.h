// exp2_emu_avx2.h: the AVX2 lane kernel of ex2_emu, 8 floats at a time (internal to src/).
//
// The array form (exp2_emu.cpp) and the fused sampled analysis (exp2_analysis.cpp) both run
// these functions, so both give the bits that tests/core/test_exp2_emu.cpp (slow) checks for all 2^32
// inputs and degrees 0-5 against the scalar ex2_emu and an independent model.
// The op sequence is the GPU's (see exp2_emu.h): it skips the `.ftz` and NaN canonicalisation
// steps that cannot change a bit (each one is argued below) and keeps every rounding step of the
// scalar form: TwoSum + one-ulp-down for add.rm, round-to-nearest subtracts, one fused
// multiply-add per Horner step (_mm256_fmadd_ps, never contracted by the compiler:
// -ffp-contract=off), a 32-bit shift-and-wrapping-add splice.
// The input-only part (clamp, floor, fraction) does not depend on the degree: ex2_split8 does it
// once, ex2_finish8<D> the polynomial and the splice for one degree.
#pragma once

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>

#include "fa4sim/core/exp2_emu.h"

#define FA4SIM_EX2_AVX2 1

namespace fa4sim::detail {

struct Ex2Split8 {
  __m256i xr;  // bits of add.rm(max(x, -127), 2^23 + 2^22): floor(x) in the low mantissa bits
  __m256 f;    // x - floor(x) (round to nearest)
};

[[gnu::always_inline]] inline Ex2Split8 ex2_split8(__m256i u) {
  const __m256i exp_mask = _mm256_set1_epi32(0x7F800000);
  const __m256i sign_mask = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256 lo = _mm256_set1_ps(kExp2ClampLo);
  const __m256 magic = _mm256_set1_ps(kExp2RoundMagic);
  // .ftz on the input: exponent field 0 (zero or subnormal) -> signed zero.
  const __m256i denorm = _mm256_cmpeq_epi32(_mm256_and_si256(u, exp_mask), _mm256_setzero_si256());
  u = _mm256_blendv_epi8(u, _mm256_and_si256(u, sign_mask), denorm);
  // max.ftz(x, -127): MAXPS returns its second operand when the first is NaN = PTX's rule.
  const __m256 xc = _mm256_max_ps(_mm256_castsi256_ps(u), lo);
  // add.rm(xc, magic): s = RN sum, e = exact error (TwoSum); e < 0 -> one ulp down. s > 0
  // always (xc >= -127), so "one ulp toward -inf" is bits - 1: add the all-ones mask.
  // xr >= 2^23 + 2^22 - 127 is never subnormal, so its .ftz is a no-op.
  const __m256 s = _mm256_add_ps(xc, magic);
  const __m256 bb = _mm256_sub_ps(s, xc);
  const __m256 e = _mm256_add_ps(_mm256_sub_ps(xc, _mm256_sub_ps(s, bb)), _mm256_sub_ps(magic, bb));
  const __m256i down = _mm256_castps_si256(_mm256_cmp_ps(e, _mm256_setzero_ps(), _CMP_LT_OQ));
  const __m256i xr = _mm256_add_epi32(_mm256_castps_si256(s), down);
  // xb = floor(xc) is an integer (never subnormal); f = xc - xb is 0, >= 2^-24 or NaN (only for
  // xc = +inf), never subnormal: both .ftz are no-ops.
  const __m256 xb = _mm256_sub_ps(_mm256_castsi256_ps(xr), magic);
  return {xr, _mm256_sub_ps(xc, xb)};
}

// The bits of ex2_emu(x, D) for the 8 inputs that `s` was split from. kFiniteInput: the caller
// guarantees finite inputs, so f (and p) is never NaN and the NaN canonicalisation is skipped.
template <int D, bool kFiniteInput = false>
[[gnu::always_inline]] inline __m256i ex2_finish8(const Ex2Split8& s) {
  const float* c = kPolyEx2[D];
  // Horner, one rounding per step. Partial results stay >= c_i > 0.0018 (normal) for f in
  // [0, 1]; a NaN f makes p NaN, canonicalised once at the end (NaN stays NaN through fma).
  __m256 p = _mm256_set1_ps(c[D]);
  for (int k = D - 1; k >= 0; --k) p = _mm256_fmadd_ps(p, s.f, _mm256_set1_ps(c[k]));
  __m256i pb = _mm256_castps_si256(p);
  if constexpr (D > 0 && !kFiniteInput) {
    const __m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
    pb = _mm256_blendv_epi8(pb, _mm256_set1_epi32(static_cast<int>(kGpuCanonicalNaN)), isnan);
  }
  // shl.b32 + add.s32 (wrapping).
  return _mm256_add_epi32(_mm256_slli_epi32(s.xr, 23), pb);
}

// ex2_finish8 with run-time coefficients c[0..degree] (fa4sim fit, exp2 --coeffs): the same op
// sequence, with the NaN canonicalisation kept (degree >= 1).
[[gnu::always_inline]] inline __m256i ex2_finish8_poly(const Ex2Split8& s, const float* c,
                                                       int degree) {
  __m256 p = _mm256_set1_ps(c[degree]);
  for (int k = degree - 1; k >= 0; --k) p = _mm256_fmadd_ps(p, s.f, _mm256_set1_ps(c[k]));
  __m256i pb = _mm256_castps_si256(p);
  if (degree > 0) {
    const __m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
    pb = _mm256_blendv_epi8(pb, _mm256_set1_epi32(static_cast<int>(kGpuCanonicalNaN)), isnan);
  }
  return _mm256_add_epi32(_mm256_slli_epi32(s.xr, 23), pb);
}

}  // namespace fa4sim::detail

#endif
