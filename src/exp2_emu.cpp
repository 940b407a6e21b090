// exp2_emu.cpp: the array form of ex2_emu (the scalar core is include/fa4sim/exp2_emu.h).
//
// The AVX2 path runs the same GPU op sequence 8 lanes at a time. It skips the `.ftz` and NaN
// canonicalisation steps that cannot change a bit (each one is argued below) and keeps every
// rounding step of the scalar form: TwoSum + one-ulp-down for add.rm, round-to-nearest
// subtracts, one fused multiply-add per Horner step (_mm256_fmadd_ps, never contracted by the
// compiler: -ffp-contract=off), a 32-bit shift-and-wrapping-add splice.
// tests/test_exp2_emu.cpp (slow) checks array == scalar == an independent model for all 2^32
// inputs and degrees 0-5.
#include <cstddef>

#include "fa4sim/exp2_emu.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FA4SIM_EX2_AVX2 1
#endif

namespace fa4sim {

namespace {

void ex2_emu_scalar(const float* in, float* out, size_t n, int degree) {
  for (size_t i = 0; i < n; ++i) out[i] = ex2_emu(in[i], degree);
}

#if FA4SIM_EX2_AVX2
template <int D>
void ex2_emu_avx2(const float* in, float* out, size_t n) {
  const __m256i exp_mask = _mm256_set1_epi32(0x7F800000);
  const __m256i sign_mask = _mm256_set1_epi32(static_cast<int>(0x80000000u));
  const __m256i gpu_nan = _mm256_set1_epi32(static_cast<int>(kGpuCanonicalNaN));
  const __m256 lo = _mm256_set1_ps(kExp2ClampLo);
  const __m256 magic = _mm256_set1_ps(kExp2RoundMagic);
  const __m256 zero = _mm256_setzero_ps();
  const float* c = kPolyEx2[D];
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(in + i));
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
    const __m256i down = _mm256_castps_si256(_mm256_cmp_ps(e, zero, _CMP_LT_OQ));
    const __m256i xr = _mm256_add_epi32(_mm256_castps_si256(s), down);
    // xb = floor(xc) is an integer (never subnormal); f = xc - xb is 0, >= 2^-24 or NaN (only for
    // xc = +inf), never subnormal: both .ftz are no-ops.
    const __m256 xb = _mm256_sub_ps(_mm256_castsi256_ps(xr), magic);
    const __m256 f = _mm256_sub_ps(xc, xb);
    // Horner, one rounding per step. Partial results stay >= c_i > 0.0018 (normal) for f in
    // [0, 1]; a NaN f makes p NaN, canonicalised once at the end (NaN stays NaN through fma).
    __m256 p = _mm256_set1_ps(c[D]);
    for (int k = D - 1; k >= 0; --k) p = _mm256_fmadd_ps(p, f, _mm256_set1_ps(c[k]));
    __m256i pb = _mm256_castps_si256(p);
    if constexpr (D > 0) {
      const __m256i isnan = _mm256_castps_si256(_mm256_cmp_ps(p, p, _CMP_UNORD_Q));
      pb = _mm256_blendv_epi8(pb, gpu_nan, isnan);
    }
    // shl.b32 + add.s32 (wrapping).
    const __m256i y = _mm256_add_epi32(_mm256_slli_epi32(xr, 23), pb);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), y);
  }
  ex2_emu_scalar(in + i, out + i, n - i, D);
}
#endif

}  // namespace

bool ex2_emu_array_is_simd() {
#if FA4SIM_EX2_AVX2
  return true;
#else
  return false;
#endif
}

void ex2_emu(std::span<const float> in, std::span<float> out, int degree) {
  FA4_DASSERT(out.size() >= in.size());
  FA4_DASSERT(degree >= 0 && degree <= kExp2MaxDegree);
  const size_t n = in.size() <= out.size() ? in.size() : out.size();
#if FA4SIM_EX2_AVX2
  switch (degree < 0 ? 0 : degree) {  // out-of-range degrees clamp like the scalar form
    case 0: return ex2_emu_avx2<0>(in.data(), out.data(), n);
    case 1: return ex2_emu_avx2<1>(in.data(), out.data(), n);
    case 2: return ex2_emu_avx2<2>(in.data(), out.data(), n);
    case 3: return ex2_emu_avx2<3>(in.data(), out.data(), n);
    case 4: return ex2_emu_avx2<4>(in.data(), out.data(), n);
    default: return ex2_emu_avx2<5>(in.data(), out.data(), n);
  }
#else
  ex2_emu_scalar(in.data(), out.data(), n, degree);
#endif
}

}  // namespace fa4sim
