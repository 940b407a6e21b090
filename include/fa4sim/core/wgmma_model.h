// wgmma_model.h: a bit-exact model of one output element of Hopper's `wgmma.mma_async` with
// float32 accumulation: D = A[row, 0..K) . B[0..K, col) + C, for bf16 and fp16 inputs (K = 16,
// m64nNk16) and E4M3/E5M2 inputs (K = 32, m64nNk32), in pure integer arithmetic.
//
// Models the fused dot-product-add ("T-FDPA") of MMA-Sim (arXiv 2511.10909), PyPI mmasim 2.1.1:
//   mmasim/nv_ptx/sim.py        class WGMMA: F = 25 (bf16/fp16) or 13 (FP8), rho = "RZ-FP32" or
//                               "RZ-E8M13", L_max = 32 bytes / element size (16 or 32: the
//                               whole K in one step), e_zero = -133 (float32 output)
//   mmasim/arithmetic/fdpa.py   t_fdpa, truncated_fused_sum, frexp_and_normalize,
//                               ldexp_and_normalize (the same functions as
//                               github.com/peichenxie/MMA-Sim src/mmasim/mmasim/arithmetic/fdpa.py
//                               @0a5ce40fbf6ea34ba93a184bdd8ee3a6d8c2b749, which lacks the final
//                               "-0.0 to +0.0" step)
// and, earlier, github.com/microsoft/MMA-Sim @c78513835c8b2ae61b35062afce4c4255bc6901c:
//   mmasim/simulator/nv_ptx.py      class wgmma: n_accum_fractional_bits 25, FP8 13 with output
//                                   "f32_e8m13"; the whole K in one nv_fused_dot_add
//   mmasim/simulator/arithmetic.py  fused_sum (math.trunc of each aligned term), nv_fused_dot_add
//                                   (RZ to 23 or 13 bits), extract_significand_exponent (a zero
//                                   gets e = -126 there: candidate "zero-exp-126")
// Khattak & Mikaitis, "Accurate Models of NVIDIA Tensor Cores" (arXiv 2512.07004), describe the
// H100 with the same kind of features (alignment to the largest exponent, truncation, one
// normalisation, round toward zero, fewer bits for FP8); their parameters are not compared here.
//
// The steps, for one fused group of products and the running C (Note [wgmma fused sum]):
//   1. each input x = s * 2^e with 1 <= |s| < 2, subnormals s < 1 at e = emin of their format
//      (frexp_and_normalize); a product a*b gets s = s_a * s_b (in [0, 4): NOT renormalised when
//      s >= 2) and e = e_a + e_b; an exact zero (product or C) gets e = zero_exp (-133).
//   2. e_max = the largest e; each term is s * 2^(e - e_max) truncated toward zero to frac_bits
//      fraction bits (25: sign-magnitude truncation, `torch.trunc`), and the terms are summed
//      exactly.
//   3. the sum times 2^e_max is normalised (float32 range, subnormals at 2^-126) and truncated
//      toward zero to out_frac_bits (23; 13 for FP8, "E8M13"); beyond float32's range: inf.
//   4. an exact zero result is +0 (mmasim 2.1.1 adds +0.0); NaN is 0x7FFFFFFF.
// Special values (t_fdpa through IEEE double arithmetic): a NaN input, inf * 0, or +inf and -inf
// among the products and C give NaN; otherwise any inf gives that inf. E4M3 has no inf (0x7F and
// 0xFF are NaN).
// K larger than `group` (a candidate, not MMA-Sim's Hopper choice) chains steps: the rounded
// result of one group is the C of the next.
//
// Every choice is a field of WgmmaModel, so that one GPU run can test several candidate parameter
// sets at once (kWgmmaCandidates16 / kWgmmaCandidates8; `fa4sim gpu verify --what wgmma`). Set 0 is
// MMA-Sim's Hopper model, and wgmma_dot with it is the model fa4sim uses.
//
// Does not model: float16 accumulation (`.f16` D), tf32, the imm-scale-a/b = -1 negations,
// sparse wgmma, and anything about the order of several wgmmas (a chain over K is the caller's).
//
// ---- Contract: wgmma_dot(model, input, a, b, c) -> float32 bits of D
// Inputs:       a[0..K), b[0..K): bit patterns of `input` (FP8 in the low 8 bits), any pattern;
//               c: any float32 bit pattern. K = wgmma_k(input).
// Bit-exact vs: mmasim 2.1.1 WGMMA("Hopper", "m64n8k16.f32.bf16.bf16" etc.).dpa on random and
//               adversarial vectors (tests/python/test_wgmma_mmasim.py, via
//               tests/core/test_wgmma_model.cpp SampleFile); the H200 itself: not yet
//               measured (docs/wgmma.md).
// Max error:    0 bits vs the hardware where it holds; vs the exact sum: each term loses less
//               than 2^(e_max - frac_bits), the result one more unit of its last place (RZ).
// Special values: above; exact zero -> +0 with zero_positive (set 0).
#pragma once

#include <cstdint>

#include "fa4sim/core/hd.h"

// The per-term helpers below are inlined on the host too (GCC left wgmma_decode out of line: 17 %
// of the time of `gpu upstream check --model sm90-wgmma` on the CPU); the device's FA4_HD inlines.
#if defined(__CUDACC__)
#define FA4_WGMMA_INLINE FA4_HD
#else
#define FA4_WGMMA_INLINE inline __attribute__((always_inline))
#endif

namespace fa4sim {

enum class WgmmaInput : uint8_t { bf16 = 0, fp16 = 1, e4m3 = 2, e5m2 = 3 };
inline constexpr int kWgmmaInputs = 4;
inline constexpr int kWgmmaMaxK = 32;

// K of one wgmma: 16 for the 16-bit inputs, 32 for FP8.
FA4_HD constexpr int wgmma_k(WgmmaInput in) {
  return in == WgmmaInput::e4m3 || in == WgmmaInput::e5m2 ? 32 : 16;
}

enum class WgmmaRounding : uint8_t { toward_zero = 0, nearest_even = 1 };
// How an aligned term loses its low bits: toward zero on the magnitude (`torch.trunc`, MMA-Sim's
// T-FDPA) or toward -inf on the two's complement value (`torch.floor`, MMA-Sim's TR-FDPA of other
// architectures).
enum class WgmmaAlign : uint8_t { toward_zero = 0, floor = 1 };

struct WgmmaModel {
  int frac_bits = 25;      // fraction bits kept by each aligned term (F)
  int group = 16;          // products fused per step with the running C (L_max)
  int zero_exp = -133;     // alignment exponent of an exact zero product or C (e_zero)
  int out_frac_bits = 23;  // fraction bits of the float32 result (23, or 13 for E8M13)
  WgmmaRounding out_round = WgmmaRounding::toward_zero;
  WgmmaAlign align = WgmmaAlign::toward_zero;
  bool renormalize_products = false;  // true: a product with s >= 2 aligns at e + 1
  bool overflow_to_inf = true;        // false: beyond float32's range -> max finite
  bool zero_positive = true;          // false: IEEE's sign of an exact zero sum
  uint32_t nan_bits = 0x7FFFFFFFu;
};

// MMA-Sim's Hopper model (set 0 of the candidates) for an input type.
FA4_HD constexpr WgmmaModel wgmma_model_hopper(WgmmaInput in) {
  WgmmaModel m;
  if (wgmma_k(in) == 32) {
    m.frac_bits = 13;
    m.group = 32;
    m.out_frac_bits = 13;
  }
  return m;
}

// ---- decoding (frexp_and_normalize in integers)

// One operand: value = (-1)^neg * sig * 2^(exp - frac), sig < 2^(frac + 1); subnormals have
// sig < 2^frac at exp = emin. kind: 0 zero, 1 finite nonzero, 2 inf, 3 NaN.
struct WgmmaOperand {
  uint32_t sig = 0;
  int exp = 0;
  int frac = 0;
  int kind = 0;
  bool neg = false;
};

FA4_WGMMA_INLINE WgmmaOperand wgmma_decode_ieee(uint32_t bits, int exp_bits, int man_bits,
                                                bool has_inf) {
  const int bias = (1 << (exp_bits - 1)) - 1;
  const uint32_t man = bits & ((1u << man_bits) - 1u);
  const uint32_t ef = (bits >> man_bits) & ((1u << exp_bits) - 1u);
  WgmmaOperand o;
  o.neg = ((bits >> (man_bits + exp_bits)) & 1u) != 0;
  o.frac = man_bits;
  const uint32_t all = (1u << exp_bits) - 1u;
  if (has_inf && ef == all) {
    o.kind = man != 0 ? 3 : 2;
  } else if (!has_inf && ef == all && man == (1u << man_bits) - 1u) {
    o.kind = 3;  // E4M3FN: only S.1111.111 is NaN, no inf
  } else if (ef == 0) {
    o.kind = man != 0 ? 1 : 0;
    o.sig = man;
    o.exp = 1 - bias;
  } else {
    o.kind = 1;
    o.sig = man | (1u << man_bits);
    o.exp = int(ef) - bias;
  }
  return o;
}

FA4_WGMMA_INLINE WgmmaOperand wgmma_decode(WgmmaInput in, uint32_t bits) {
  switch (in) {
    case WgmmaInput::bf16: return wgmma_decode_ieee(bits & 0xFFFFu, 8, 7, true);
    case WgmmaInput::fp16: return wgmma_decode_ieee(bits & 0xFFFFu, 5, 10, true);
    case WgmmaInput::e4m3: return wgmma_decode_ieee(bits & 0xFFu, 4, 3, false);
    case WgmmaInput::e5m2: return wgmma_decode_ieee(bits & 0xFFu, 5, 2, true);
  }
  return {};
}

FA4_WGMMA_INLINE WgmmaOperand wgmma_decode_f32(uint32_t bits) {
  return wgmma_decode_ieee(bits, 8, 23, true);
}

// One aligned term of the fused sum: |value| = sig * 2^(exp - frac), exp the alignment exponent.
struct WgmmaTerm {
  uint32_t sig;
  int exp, frac;
  bool neg;
};

FA4_WGMMA_INLINE WgmmaTerm wgmma_product_term(const WgmmaModel& m, const WgmmaOperand& a,
                                              const WgmmaOperand& b) {
  WgmmaTerm t{a.sig * b.sig, a.exp + b.exp, a.frac + b.frac, a.neg != b.neg};
  if (t.sig == 0) {
    t.exp = m.zero_exp;
  } else if (m.renormalize_products && (t.sig >> (t.frac + 1)) != 0) {
    ++t.exp;  // s in [2, 4): the same value with one more fraction bit, one exponent higher
    ++t.frac;
  }
  return t;
}

FA4_WGMMA_INLINE WgmmaTerm wgmma_c_term(const WgmmaModel& m, const WgmmaOperand& c) {
  return WgmmaTerm{c.sig, c.sig == 0 ? m.zero_exp : c.exp, c.frac, c.neg};
}

// trunc (or floor) of |t| * 2^(frac_bits + t.exp - e_max - t.frac), signed, in selects (the same
// results as the earlier branches; no measured speed difference on the CPU).
FA4_WGMMA_INLINE int64_t wgmma_align(const WgmmaModel& m, const WgmmaTerm& t, int e_max) {
  const int sh = m.frac_bits + t.exp - e_max - t.frac;
  const uint64_t sig = t.sig;
  // sh >= 0: exact (sh <= frac_bits - t.frac, sig < 2^(frac + 2): fits). sh < 0: the shift is
  // capped at 63, where sig (< 2^32) is gone whole, as for any larger shift.
  const int rs = sh < 0 ? (-sh < 63 ? -sh : 63) : 0;
  uint64_t mag = sh >= 0 ? sig << sh : sig >> rs;
  if (m.align == WgmmaAlign::floor) {
    const bool lost = (sig & ((uint64_t(1) << rs) - 1u)) != 0;
    if (t.neg && lost) ++mag;  // floor of a negative value
  }
  return t.neg ? -int64_t(mag) : int64_t(mag);
}

// ---- the result: sum * 2^(e_max - frac_bits) to float32 bits (ldexp_and_normalize)

// Index of the highest set bit of x (0 for x = 0 and 1): a count of leading zeros, not a loop
// over the bits (that loop was the model's most frequent instruction on the CPU).
FA4_WGMMA_INLINE int wgmma_top_bit(uint64_t x) {
  if (x == 0) return 0;
#if defined(__CUDA_ARCH__)
  return 63 - __clzll(static_cast<long long>(x));
#else
  return 63 - __builtin_clzll(x);
#endif
}

// Truth table of the final rounding of |sum| to M * 2^q (d dropped bits, r = dropped part):
//   toward_zero   M = |sum| >> d
//   nearest_even  M = |sum| >> d, +1 if r > half or (r == half and M odd)
FA4_HD uint32_t wgmma_pack(const WgmmaModel& m, int64_t sum, int e_max, bool all_neg_zero) {
  if (sum == 0) return m.zero_positive || !all_neg_zero ? 0u : 0x80000000u;
  const bool neg = sum < 0;
  const uint64_t mag = neg ? uint64_t(-sum) : uint64_t(sum);
  const uint32_t sign = neg ? 0x80000000u : 0u;
  const int q0 = e_max - m.frac_bits;  // value = mag * 2^q0
  const int top = wgmma_top_bit(mag) + q0;
  const int of = m.out_frac_bits;
  int q = (top > -126 ? top : -126) - of;  // quantum of the result
  const int d = q - q0;
  uint64_t mant;
  if (d <= 0) {
    mant = mag << -d;  // exact: fewer than of + 1 significant bits
  } else if (d >= 64) {
    mant = 0;
  } else {
    mant = mag >> d;
    if (m.out_round == WgmmaRounding::nearest_even) {
      const uint64_t rem = mag & ((uint64_t(1) << d) - 1u), half = uint64_t(1) << (d - 1);
      if (rem > half || (rem == half && (mant & 1u))) ++mant;
      if (mant >> (of + 1)) {
        mant >>= 1;
        ++q;
      }
    }
  }
  if (mant == 0) return m.zero_positive ? 0u : sign;
  const int e_out = q + of;  // exponent of the leading bit when mant >= 2^of
  if (mant >> of) {
    if (e_out > 127) {
      if (m.overflow_to_inf) return sign | 0x7F800000u;
      return sign | (0x7F7FFFFFu & ~((1u << (23 - of)) - 1u));
    }
    return sign | (uint32_t(e_out + 127) << 23) |
           (uint32_t(mant - (uint64_t(1) << of)) << (23 - of));
  }
  return sign | (uint32_t(mant) << (23 - of));  // subnormal: q = -126 - of
}

// ---- one fused step: C and the products of n operand pairs

// The operands of a step, pair k: `get(k)` returns a WgmmaPair. WgmmaBitsPairs decodes bit
// patterns as it goes (the device, where arrays of decoded operands would spill); a host caller
// that reuses operands across many steps decodes them once (Sm90WgmmaGemm's tiles).
struct WgmmaPair {
  WgmmaOperand a, b;
};

struct WgmmaBitsPairs {
  WgmmaInput in;
  const uint16_t* a;
  const uint16_t* b;
  FA4_WGMMA_INLINE WgmmaPair operator()(int k) const {
    return {wgmma_decode(in, a[k]), wgmma_decode(in, b[k])};
  }
};

struct WgmmaDecodedPairs {
  const WgmmaOperand* a;
  const WgmmaOperand* b;
  FA4_WGMMA_INLINE WgmmaPair operator()(int k) const { return {a[k], b[k]}; }
};

// Pairs k0 .. k0 + n - 1 of `get`.
template <class Pairs>
FA4_HD uint32_t wgmma_step_pairs(const WgmmaModel& m, const Pairs& get, int k0, int n, uint32_t c) {
  // Pass 1: special values and the largest alignment exponent (Note [wgmma fused sum]).
  const WgmmaOperand oc = wgmma_decode_f32(c);
  bool nan = oc.kind == 3, pinf = oc.kind == 2 && !oc.neg, ninf = oc.kind == 2 && oc.neg;
  bool all_neg_zero = oc.kind == 0 && oc.neg;
  int e_max = wgmma_c_term(m, oc).exp;
  for (int k = k0; k < k0 + n; ++k) {
    const WgmmaPair p = get(k);
    const WgmmaOperand &oa = p.a, &ob = p.b;
    const bool neg = oa.neg != ob.neg;
    if (oa.kind == 3 || ob.kind == 3) {
      nan = true;
    } else if (oa.kind == 2 || ob.kind == 2) {
      if (oa.kind == 0 || ob.kind == 0) nan = true;  // inf * 0
      (neg ? ninf : pinf) = true;
    } else {
      const WgmmaTerm t = wgmma_product_term(m, oa, ob);
      e_max = t.exp > e_max ? t.exp : e_max;
      all_neg_zero = all_neg_zero && t.sig == 0 && neg;
    }
  }
  if (nan || (pinf && ninf)) return m.nan_bits;
  if (pinf) return 0x7F800000u;
  if (ninf) return 0xFF800000u;
  // Pass 2: the aligned, truncated terms summed exactly (< 2^(frac_bits + 8) for n <= 32).
  int64_t sum = wgmma_align(m, wgmma_c_term(m, oc), e_max);
  for (int k = k0; k < k0 + n; ++k) {
    const WgmmaPair p = get(k);
    sum += wgmma_align(m, wgmma_product_term(m, p.a, p.b), e_max);
  }
  return wgmma_pack(m, sum, e_max, all_neg_zero);
}

// C and the products of a[0..n), b[0..n) (bit patterns of `in`).
FA4_HD uint32_t wgmma_step(const WgmmaModel& m, WgmmaInput in, const uint16_t* a, const uint16_t* b,
                           int n, uint32_t c) {
  return wgmma_step_pairs(m, WgmmaBitsPairs{in, a, b}, 0, n, c);
}

// D = A . B + C for one output element: k products (pairs 0 .. k - 1 of `get`), in steps of
// m.group.
template <class Pairs>
FA4_HD uint32_t wgmma_dot_pairs(const WgmmaModel& m, int k, const Pairs& get, uint32_t c) {
  const int g = m.group > 0 && m.group < k ? m.group : k;
  for (int k0 = 0; k0 < k; k0 += g) c = wgmma_step_pairs(m, get, k0, k - k0 < g ? k - k0 : g, c);
  return c;
}

// The same of bit patterns: wgmma_k(in) products.
FA4_HD uint32_t wgmma_dot(const WgmmaModel& m, WgmmaInput in, const uint16_t* a, const uint16_t* b,
                          uint32_t c) {
  return wgmma_dot_pairs(m, wgmma_k(in), WgmmaBitsPairs{in, a, b}, c);
}

// Note [wgmma fused sum]
//   Why two passes over the inputs instead of an array of terms: on the device the model runs
//   once per candidate set for every output element (`gpu verify --what wgmma`), and 33 terms in
//   a local array spill; decoding an element twice is a few integer operations. The sum fits in
//   int64: each aligned term is below 2^(frac_bits + 2) and there are at most 33.

// ---- the candidate parameter sets one GPU run discriminates (docs/wgmma.md)
struct WgmmaCandidate {
  const char* name;
  const char* what;
  WgmmaModel model;
};

namespace wgmma_detail {
// m with one choice changed by `f` (a candidate set: set 0 and one alternative)
template <class F>
constexpr WgmmaModel with(WgmmaModel m, F f) {
  f(m);
  return m;
}
constexpr WgmmaModel kH16 = wgmma_model_hopper(WgmmaInput::bf16);
constexpr WgmmaModel kH8 = wgmma_model_hopper(WgmmaInput::e4m3);
}  // namespace wgmma_detail

inline constexpr int kWgmmaCandidateSets = 10;
// bf16 / fp16 (K = 16). For fp16 two sets cannot differ from set 0: zero-exp-126 (a zero's
// exponent matters only below every nonzero term's, but fp16 products are >= 2^-48 and C's
// exponent is >= -126) and sat-overflow (|products| < 2^33 cannot carry C past float32's range).
inline constexpr WgmmaCandidate kWgmmaCandidates16[kWgmmaCandidateSets] = {
    {"mmasim", "MMA-Sim 2.1.1 Hopper: F 25, one step of 16, zero at 2^-133, RZ, +0",
     wgmma_detail::kH16},
    {"zero-exp-126", "a zero aligns at 2^-126 (microsoft/MMA-Sim@c785138)",
     wgmma_detail::with(wgmma_detail::kH16, [](WgmmaModel& m) { m.zero_exp = -126; })},
    {"frac-24", "24 fraction bits kept",
     wgmma_detail::with(wgmma_detail::kH16, [](WgmmaModel& m) { m.frac_bits = 24; })},
    {"frac-26", "26 fraction bits kept",
     wgmma_detail::with(wgmma_detail::kH16, [](WgmmaModel& m) { m.frac_bits = 26; })},
    {"group-8", "two steps of 8 products",
     wgmma_detail::with(wgmma_detail::kH16, [](WgmmaModel& m) { m.group = 8; })},
    {"align-floor", "terms floored (two's complement)",
     wgmma_detail::with(wgmma_detail::kH16, [](WgmmaModel& m) { m.align = WgmmaAlign::floor; })},
    {"renorm", "products renormalised before alignment",
     wgmma_detail::with(wgmma_detail::kH16, [](WgmmaModel& m) { m.renormalize_products = true; })},
    {"signed-zero", "IEEE sign of an exact zero",
     wgmma_detail::with(wgmma_detail::kH16, [](WgmmaModel& m) { m.zero_positive = false; })},
    {"out-rne", "result rounded to nearest even",
     wgmma_detail::with(wgmma_detail::kH16,
                        [](WgmmaModel& m) { m.out_round = WgmmaRounding::nearest_even; })},
    {"sat-overflow", "overflow to max finite",
     wgmma_detail::with(wgmma_detail::kH16, [](WgmmaModel& m) { m.overflow_to_inf = false; })},
};
// E4M3 / E5M2 (K = 32). The zero exponent cannot show here (products >= 2^-32, C's exponent
// >= -126), nor can overflow (|products| < 2^18): those two questions are bf16's.
inline constexpr WgmmaCandidate kWgmmaCandidates8[kWgmmaCandidateSets] = {
    {"mmasim", "MMA-Sim 2.1.1 Hopper: F 13, one step of 32, zero at 2^-133, RZ to E8M13, +0",
     wgmma_detail::kH8},
    {"group-8", "four steps of 8 products",
     wgmma_detail::with(wgmma_detail::kH8, [](WgmmaModel& m) { m.group = 8; })},
    {"frac-12", "12 fraction bits kept",
     wgmma_detail::with(wgmma_detail::kH8, [](WgmmaModel& m) { m.frac_bits = 12; })},
    {"frac-14", "14 fraction bits kept",
     wgmma_detail::with(wgmma_detail::kH8, [](WgmmaModel& m) { m.frac_bits = 14; })},
    {"group-16", "two steps of 16 products",
     wgmma_detail::with(wgmma_detail::kH8, [](WgmmaModel& m) { m.group = 16; })},
    {"align-floor", "terms floored (two's complement)",
     wgmma_detail::with(wgmma_detail::kH8, [](WgmmaModel& m) { m.align = WgmmaAlign::floor; })},
    {"renorm", "products renormalised before alignment",
     wgmma_detail::with(wgmma_detail::kH8, [](WgmmaModel& m) { m.renormalize_products = true; })},
    {"signed-zero", "IEEE sign of an exact zero",
     wgmma_detail::with(wgmma_detail::kH8, [](WgmmaModel& m) { m.zero_positive = false; })},
    {"out-23", "result truncated to float32's 23 bits, not 13",
     wgmma_detail::with(wgmma_detail::kH8, [](WgmmaModel& m) { m.out_frac_bits = 23; })},
    {"out-rne", "result rounded to nearest even",
     wgmma_detail::with(wgmma_detail::kH8,
                        [](WgmmaModel& m) { m.out_round = WgmmaRounding::nearest_even; })},
};

FA4_HD constexpr const char* wgmma_input_name(WgmmaInput in) {
  switch (in) {
    case WgmmaInput::bf16: return "bf16";
    case WgmmaInput::fp16: return "fp16";
    case WgmmaInput::e4m3: return "e4m3";
    case WgmmaInput::e5m2: return "e5m2";
  }
  return "?";
}

}  // namespace fa4sim
