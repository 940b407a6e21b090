// exp2_emu.h: bit-exact CPU model of FlashAttention-4's software exp2 (`ex2_emulation`).
//
// Models: Dao-AILab/flash-attention, flash_attn/cute/utils.py, ex2_emulation / add_round_down /
// evaluate_polynomial / combine_int_frac_ex2, and POLY_EX2, at commit 0251105a (2026-08-15).
// The GPU executes, per element (all float32, all `.ftz`):
//   xc = max.ftz.f32(x, -127)                    PTX max returns the non-NaN operand
//   xr = add.rm.ftz.f32(xc, 0x1.8p23)            round toward -inf: floor(xc) in xr's low bits
//   xb = sub.rn.ftz.f32(xr, 0x1.8p23)
//   f  = sub.rn.ftz.f32(xc, xb)                  f in [0, 1]; 1.0 for tiny negative xc
//   p  = c_deg; p = fma.rn.ftz.f32(p, f, c_i)    for i = deg-1 .. 0 (Horner, fused)
//   bits(y) = (bits(xr) << 23) + bits(p)          shl.b32, add.s32 (32-bit wrap)
// Does not model: MUFU ex2.approx (that is the hardware's own instruction, see the GPU backend).
//
// ---- Contract: ex2_emu(x, degree)
// Inputs:      any float32 bit pattern; degree 0..5 (others: FA4_DASSERT, clamped to 0..5).
// Valid domain: -126 <= x < 128 (upstream assumes x <= 127). There the result is 2^x up to the
//              polynomial's error, e.g. float32 max rel over [-20, 8) (`fa4sim exp2 --exhaustive`):
//              degree 3: 8.77e-5, 4: 3.05e-6, 5: 1.56e-7 (1.44e-7 for x >= 0: for x in (-0.5, 0)
//              the rounded fraction f = RN(x + 1) adds up to ln2 * 2^-25 = 2.1e-8).
// Bit-exact vs: the GPU sequence above, for all 2^32 inputs and every degree (0 bits tolerance;
//              tests/core/test_exp2_emu.cpp proves it exhaustively against an independent model,
//              `fa4sim gpu verify` against the H200).
// Large error by design:
//   * floor(x) = -127, i.e. x in [-127, -126) (and everything below -127, NaN and -inf, which are
//     clamped to -127): the splice wraps the exponent field to 0, so the bits are the subnormal
//     pattern 2^-126 * (p - 1) instead of 2^-127 * p (nothing is flushed: the integer add is not
//     a float op). With p ~ 2^f that is 2^x * (2 - 2^(1-f)): too small by a factor in (0, 1],
//     and exactly +0 at x = -127 (p = 1). So every x <= -127 gives +0.
//   * x >= 128: only floor(x) mod 512 survives the shift, so the result is garbage by design:
//     x = 128 gives +inf (0x7F800000), x in (128, 129) NaN patterns, x = 129 gives -0
//     (0x80000000), x = 2^23 gives 1.0 (floor mod 512 = 0). Reported, never "fixed".
// Special values: NaN -> treated as -127 (PTX max), so +0 like x = -127.
//              +inf -> f = inf - inf = NaN -> canonical NaN 0x7FFFFFFF for degree >= 1 (the GPU's
//              NaN; x86 would give 0xFFC00000, so the model canonicalises), and bits(1.0) for
//              degree 0 (the polynomial ignores f; bits(inf) << 23 = 0). -inf -> +0.
//              +-0 and subnormals -> flushed to zero -> 1.0 exactly.
// Array form:  ex2_emu(span in, span out, degree) gives the same bits as the scalar form for
//              every input (AVX2 path where the build has it; tested over all 2^32 inputs).
#pragma once

#include <cmath>
#include <cstdint>
#include <span>

#include "fa4sim/core/hd.h"

namespace fa4sim {

inline constexpr int kExp2MaxDegree = 5;
inline constexpr float kExp2ClampLo = -127.0f;
inline constexpr float kExp2RoundMagic = 12582912.0f;  // 2^23 + 2^22 = 0x1.8p23
inline constexpr uint32_t kGpuCanonicalNaN = 0x7FFFFFFFu;

// POLY_EX2[degree][i] = c_i, exact float32 values (Sollya fpminimax, relative error, c0 = 1).
inline constexpr float kPolyEx2[kExp2MaxDegree + 1][kExp2MaxDegree + 1] = {
    {1.0f, 0, 0, 0, 0, 0},
    {1.0f, 0.922497093677520751953125f, 0, 0, 0, 0},
    {1.0f, 0.6657850742340087890625f, 0.330107033252716064453125f, 0, 0, 0},
    {1.0f, 0.695146143436431884765625f, 0.227564394474029541015625f, 0.077119089663028717041015625f,
     0, 0},
    {1.0f, 0.693042695522308349609375f, 0.2412912547588348388671875f,
     5.2225358784198760986328125e-2f, 1.3434938155114650726318359375e-2f, 0},
    {1.0f, 0.693151414394378662109375f, 0.24016360938549041748046875f,
     5.5802188813686370849609375e-2f, 9.01452265679836273193359375e-3f,
     1.86810153536498546600341796875e-3f},
};

// ---- float32 ops with the GPU's `.ftz` semantics and explicit rounding (no global state).

// Flush a subnormal to a zero of the same sign (what `.ftz` does to inputs and results).
FA4_HD float ftz(float x) {
  const uint32_t u = f32_bits(x);
  return (u & 0x7F800000u) == 0 ? f32_from_bits(u & 0x80000000u) : x;
}

// Canonicalise NaN to the GPU's 0x7FFFFFFF.
FA4_HD float gpu_nan_canon(float x) { return x != x ? f32_from_bits(kGpuCanonicalNaN) : x; }

// max.ftz.f32: NaN operands are ignored (returns the other one; both NaN -> canonical NaN).
FA4_HD float max_ftz(float a, float b) {
  a = ftz(a);
  b = ftz(b);
  if (a != a) return b != b ? f32_from_bits(kGpuCanonicalNaN) : b;
  if (b != b) return a;
  // -0 vs +0: PTX max treats them as equal; the operands here never tie at zero (b = -127).
  return a > b ? a : b;
}

// add.rm.f32 (round toward -inf) without touching the FPU's rounding mode: TwoSum gives the
// round-to-nearest sum s and the exact error e = (a + b) - s. If e < 0 the exact sum lies below s,
// so round-down is the next float toward -inf; otherwise it is s. Valid for all finite a, b
// whose sum does not overflow, and for infinities (e is NaN, s is kept).
// Truth table (e = exact - s):   e > 0 -> s      e == 0 -> s      e < 0 -> nextdown(s)
FA4_HD float add_rm(float a, float b) {
  const float s = a + b;
  const float bb = s - a;
  const float e = (a - (s - bb)) + (b - bb);
  if (!(e < 0.0f)) return s;
  const uint32_t u = f32_bits(s);
  if (s == 0.0f) return f32_from_bits(0x80000001u);  // -0 + tiny below: -min subnormal
  return f32_from_bits(s > 0.0f ? u - 1u : u + 1u);  // one ulp toward -inf
}

// ---- the emulation

// The per-element sequence with any float32 coefficients c[0..degree] (p(f) = c0 + c1 f + ...),
// named after upstream's steps: what `fa4sim fit` scores and `fa4sim exp2 --coeffs` analyses.
// `degree` must be 0..5. Same contract as ex2_emu below for every input and coefficient set
// whose Horner steps stay positive normal floats on f in [0, 1] (true for every fit of 2^f).
FA4_HD float ex2_emu_poly(float x, const float* c, int degree) {
  FA4_DASSERT(degree >= 0 && degree <= kExp2MaxDegree);
  degree = degree < 0 ? 0 : (degree > kExp2MaxDegree ? kExp2MaxDegree : degree);
  const float xc = max_ftz(x, kExp2ClampLo);
  const float xr = ftz(add_rm(xc, kExp2RoundMagic));  // add.rm.ftz
  const float xb = ftz(xr - kExp2RoundMagic);         // sub.rn.ftz
  const float f = gpu_nan_canon(ftz(xc - xb));        // sub.rn.ftz
  float p = c[degree];
  for (int i = degree - 1; i >= 0; --i) p = gpu_nan_canon(ftz(std::fma(p, f, c[i])));  // fma.rn.ftz
  const uint32_t bits = (f32_bits(xr) << 23) + f32_bits(p);  // shl.b32 + add.s32, wraps mod 2^32
  return f32_from_bits(bits);
}

// The per-element sequence with upstream's POLY_EX2[degree]. `degree` must be 0..5.
FA4_HD float ex2_emu(float x, int degree) {
  FA4_DASSERT(degree >= 0 && degree <= kExp2MaxDegree);
  degree = degree < 0 ? 0 : (degree > kExp2MaxDegree ? kExp2MaxDegree : degree);
  return ex2_emu_poly(x, kPolyEx2[degree], degree);
}

// Array form (src/core/exp2_emu.cpp): out[i] = ex2_emu(in[i], degree), bit for bit. Sizes must
// match (out.size() >= in.size(); only in.size() elements are written). Vectorised (AVX2 + FMA,
// 8 lanes) when the build targets it, or, in a baseline build (the wheel), when the CPU has them
// (chosen at run time); `ex2_emu_array_is_simd()` says which path runs.
void ex2_emu(std::span<const float> in, std::span<float> out, int degree);
bool ex2_emu_array_is_simd();
// Array form of ex2_emu_poly: degree = coeffs.size() - 1 (1 to 6 coefficients), same bits as the
// scalar form for every input (AVX2 path where the build has it).
void ex2_emu_poly(std::span<const float> in, std::span<float> out, std::span<const float> coeffs);

}  // namespace fa4sim
