// formats.h: bit-exact float32 -> {fp32, bf16, fp16, E4M3FN, E5M2, E2M1, E2M3, E3M2, E8M0}
// conversions and back.
//
// Models: the GPU's conversion instructions as measured on an H200 over all 2^32 float32 inputs
// (docs/facts.md §3): `cvt.rn.satfinite.e4m3x2.f32`, `cvt.rn.satfinite.e5m2x2.f32`,
// `cvt.rn.bf16.f32` (and its `.satfinite` form), `cvt.rn.f16.f32`; and the OCP OFP8 v1.0
// non-saturating mode / IEEE 754 overflow for `Overflow::ieee`. FlashAttention-4 converts P to
// the MMA input type with these instructions before P @ V (flash_attn/cute/softmax.py @0251105a).
// Does not model: other rounding directions (toward zero etc.: see rounding.h when it exists),
// or conversions between two narrow formats. Block scales are block_scale.h's.
//
// The OCP MX element formats (OCP Microscaling Formats (MX) v1.0, section 5.3,
// https://www.opencompute.org/documents/ocp-microscaling-formats-mx-v1-0-spec-final-pdf):
// E2M1 (FP4), E2M3 and E3M2 (FP6) have no inf and no NaN: every code is a finite number
// (NanEncoding::none). Their conversion follows the PTX rule of `cvt.rn.satfinite.e2m1x2.f32`
// (and `.e2m3x2`, `.e3m2x2`; sm_100a), PTX ISA "Data Movement and Conversion Instructions: cvt",
// https://docs.nvidia.com/cuda/parallel-thread-execution/index.html#data-movement-and-conversion-instructions-cvt:
// `.satfinite` is mandatory for these destinations, so round to nearest even, then a magnitude
// beyond max finite (and +-inf) becomes the sign-preserved max finite (+-6 for E2M1), and NaN
// becomes +max finite (0x7 for E2M1, 0x1F for the FP6 formats). satfinite is the only overflow
// rule of these formats: the array functions refuse Overflow::ieee for them (fa4sim::Error).
// ml_dtypes (float4_e2m1fn, float6_e2m3fn, float6_e3m2fn) agrees on every input but NaN, which it
// sends to -0 (+NaN) or +0 (-NaN) ("implementation-defined" in the MX spec; ml_dtypes
// include/mxfloat.h@b793a6e quiet_NaN()).
// E8M0 is the MX scale: unsigned, 8 exponent bits, no mantissa, bias 127, no zero, no inf,
// 0xFF = NaN; code c is 2^(c - 127), so code 0 is 2^-127 (Note [E8M0 encode]).
//
// A format is data (docs/style.md §3; cpfloat's COMPUTE_GLOBAL_PARAMS): sign/exponent/mantissa
// widths, bias, whether it has inf, how NaN is encoded. Every limit is derived once, at compile
// time, by make_format(). Special values are bit patterns.
//
// ---- Contract: encode(f, x, overflow) -> bits of f (in the low f.total_bits bits)
// Inputs:      any float32 bit pattern, +-0, subnormals, +-inf, NaN included.
// Rounding:    to nearest, ties to even, on the exact float32 value; subnormals of f are kept
//              (gradual underflow); float32 subnormal inputs are not flushed. A value that rounds
//              to zero keeps its sign (-tiny -> -0).
// Overflow:    a finite x whose rounded magnitude exceeds max_finite (e.g. |x| >= 464 for E4M3,
//              since 464 is the tie between 448 and the non-existent 480 and ties go to the even
//              448), or x = +-inf:
//                satfinite: sign-preserved max finite (0x7E/0xFE E4M3, 0x7B/0xFB E5M2,
//                           0x7BFF fp16, 0x7F7F bf16, 0x7F7FFFFF fp32), as `cvt.rn.satfinite`;
//                ieee:      sign-preserved inf where the format has one (E5M2, fp16, bf16, fp32);
//                           the canonical NaN for E4M3FN (OCP non-saturating mode); +-inf stays
//                           +-inf (E4M3FN: NaN).
// NaN:         any NaN input -> the canonical NaN `f.nan_code` (0x7F for both FP8 formats, 0x7FFF
//              for bf16 and fp16, 0x7FFFFFFF for fp32, the GPU's), in both modes; sign dropped.
//              Formats without NaN (E2M1, E2M3, E3M2): +max finite, the PTX rule above.
// E8M0:        see Note [E8M0 encode].
// Bit-exact vs: the hardware for all 2^32 inputs in satfinite mode (docs/facts.md §3), and an independent
//              nearest-value-by-table reference in both modes (tests/core/test_formats.cpp, slow).
//
// ---- Contract: encode_f64(f, x, overflow)
// The same rules for a double input, rounded ONCE from the double (no double rounding through
// float32): the reference path for correctly rounded bf16/fp16/fp8 of an exact value.
//
// ---- Contract: encode_sr(f, x, overflow, random_bits)
// Stochastic rounding: x rounds away from the truncated value with probability equal to the
// discarded fraction of an ulp, resolved to 2^-32 using the 32 random bits (uniform random
// input). Overflow/NaN rules as encode(). Deterministic for given bits: use sr_random_bits(seed,
// index) for a counter-based seeded stream independent of thread count.
//
// ---- Contract: decode(f, bits) -> float32
// Every pattern of f decodes exactly (all nine formats are subsets of float32). NaN codes
// decode to a quiet float32 NaN with the code's sign and payload (bf16: bits << 16 with the
// quiet bit set). Bits above f.total_bits are ignored. E8M0: code c -> 2^(c - 127) (code 0 is the
// float32 subnormal 2^-127), 0xFF -> +NaN (0x7FC00000).
//
// Note [E8M0 encode]
// float32 -> E8M0 follows the float8_e8m0fnu cast of ml_dtypes 0.7.0 (PyPI), as the exhaustive
// check (scripts/check/check_ml_dtypes.py) measures it on all 2^32 inputs under Overflow::ieee:
//   * x > 0 finite: round to nearest on the significand 1.m with the implicit bit as the last
//     kept bit, so a tie (1.m = 1.5 exactly) rounds UP: 3.0 -> 2^2, 1.5 -> 2^1; i.e.
//     x -> 2^(e + [1.m >= 1.5]). float32 subnormals get the same rule on their normalised
//     significand: x >= 1.5 * 2^-127 -> 2^-126 (code 1), x < 1.5 * 2^-127 -> 2^-127 (code 0, the
//     smallest value; nothing rounds to NaN from below). (ml_dtypes' later source,
//     include/float8.h@b793a6e after its conversion refactor 49471a9, sends every subnormal
//     above 2^-127 up instead; 0.7.0 does not.)
//   * rounds beyond 2^127 (x >= 1.5 * 2^127) or x = +inf: ieee -> 0xFF (NaN: E8M0 has no inf);
//     satfinite -> 0xFE (2^127).
//   * x = +-0, x < 0, x = -inf: ieee -> 0xFF (NaN); satfinite -> 0x00 (2^-127, the value
//     nearest to any x <= 2^-127; ml_dtypes' kSaturate branch gives the same for zeros and
//     negatives).
//   * NaN -> 0xFF in both modes.
// Stochastic rounding is not defined for E8M0 (the array functions refuse it).
#pragma once

#include <cstdint>

#include "fa4sim/core/constants.h"
#include "fa4sim/core/hd.h"
#include "fa4sim/core/splitmix.h"

namespace fa4sim {

enum class Overflow : uint8_t { satfinite, ieee };

// How a format spells NaN.
enum class NanEncoding : uint8_t {
  ieee,      // exponent all ones, mantissa != 0 (fp32, bf16, fp16, E5M2)
  all_ones,  // only exponent and mantissa all ones (E4M3FN: 0x7F, 0xFF; E8M0: 0xFF); no inf
  none,      // no NaN and no inf: every code is finite (E2M1, E2M3, E3M2); NaN encodes to +max
};

struct Format {
  // ---- parameters (the data)
  const char* name;
  int exp_bits;
  int man_bits;
  int bias;
  bool has_inf;
  NanEncoding nan_encoding;
  // ---- derived once by make_format()
  int total_bits;     // 1 + exp_bits + man_bits
  uint32_t max_code;  // bits of +max finite
  uint32_t inf_code;  // bits of +inf (0 when !has_inf)
  uint32_t nan_code;  // canonical NaN the encoder produces
  int emax;           // unbiased exponent of max finite
  int emin;           // unbiased exponent of min normal (1 - bias)
  double max_finite;
  double min_normal;
  double min_subnormal;
  double epsilon;   // 2^-man_bits: distance from 1 to the next value
  double log2_max;  // log2(max_finite): the kernel's `max_offset + tau < log2(dtype_max)`
  // ---- parameter with a default (formats made before it existed are signed)
  bool has_sign = true;  // false: E8M0-style, no sign bit, no zero, no subnormals (code 0 is
                         // 2^-bias), man_bits 0, NaN all ones (validate() checks this)
};

namespace formats_detail {

constexpr double pow2(int k) {
  double r = 1.0;
  for (; k > 0; --k) r *= 2.0;
  for (; k < 0; ++k) r *= 0.5;
  return r;
}

// log2(x) for x > 0 at compile time: x = 2^k * y, y in [1, 2), ln y = 2 atanh((y-1)/(y+1))
// (z <= 1/3, 60 terms are far past double precision). Tested against std::log2.
constexpr double log2_constexpr(double x) {
  int k = 0;
  while (x >= 2.0) {
    x *= 0.5;
    ++k;
  }
  while (x < 1.0) {
    x *= 2.0;
    --k;
  }
  const double z = (x - 1.0) / (x + 1.0);
  double term = z, sum = 0.0;
  for (int n = 1; n < 120; n += 2) {
    sum += term / n;
    term *= z * z;
  }
  return k + 2.0 * sum / kLn2;
}

}  // namespace formats_detail

constexpr Format make_format(const char* name, int exp_bits, int man_bits, int bias, bool has_inf,
                             NanEncoding nan, bool has_sign = true) {
  Format f{name, exp_bits, man_bits, bias, has_inf, nan, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, has_sign};
  f.total_bits = (has_sign ? 1 : 0) + exp_bits + man_bits;
  const uint32_t exp_all = (1u << exp_bits) - 1u;
  const uint32_t man_all = (1u << man_bits) - 1u;
  if (nan == NanEncoding::none) {
    f.max_code = (exp_all << man_bits) | man_all;  // every code is finite
    f.nan_code = f.max_code;                       // NaN -> +max finite (the PTX rule)
    f.emax = int(exp_all) - bias;
    f.max_finite = (2.0 - formats_detail::pow2(-man_bits)) * formats_detail::pow2(f.emax);
  } else if (nan == NanEncoding::ieee || man_bits == 0) {
    // IEEE: the all-ones exponent is inf/NaN. E8M0 (all-ones NaN, no mantissa): the all-ones
    // code is NaN, so the max finite code is the one below it, as for IEEE.
    f.max_code = ((exp_all - 1u) << man_bits) | man_all;  // exponent all ones is inf/NaN
    f.nan_code = (exp_all << man_bits) | man_all;
    f.emax = int(exp_all) - 1 - bias;
    f.max_finite = (2.0 - formats_detail::pow2(-man_bits)) * formats_detail::pow2(f.emax);
  } else {
    f.max_code = (exp_all << man_bits) | (man_all - 1u);  // only all-ones is NaN
    f.nan_code = (exp_all << man_bits) | man_all;
    f.emax = int(exp_all) - bias;
    f.max_finite = (2.0 - formats_detail::pow2(1 - man_bits)) * formats_detail::pow2(f.emax);
  }
  f.inf_code = has_inf ? exp_all << man_bits : 0u;
  f.emin = has_sign ? 1 - bias : -bias;  // unsigned (E8M0): code 0 is 2^-bias, no subnormals
  f.min_normal = formats_detail::pow2(f.emin);
  f.min_subnormal = formats_detail::pow2(f.emin - man_bits);
  f.epsilon = formats_detail::pow2(-man_bits);
  f.log2_max = formats_detail::log2_constexpr(f.max_finite);
  return f;
}

inline constexpr Format kFP32 = make_format("fp32", 8, 23, 127, true, NanEncoding::ieee);
inline constexpr Format kBF16 = make_format("bf16", 8, 7, 127, true, NanEncoding::ieee);
inline constexpr Format kFP16 = make_format("fp16", 5, 10, 15, true, NanEncoding::ieee);
inline constexpr Format kE4M3 = make_format("e4m3", 4, 3, 7, false, NanEncoding::all_ones);
inline constexpr Format kE5M2 = make_format("e5m2", 5, 2, 15, true, NanEncoding::ieee);
// The OCP MX formats (MX v1.0 section 5.3; see the file header).
inline constexpr Format kE2M1 = make_format("e2m1", 2, 1, 1, false, NanEncoding::none);
inline constexpr Format kE2M3 = make_format("e2m3", 2, 3, 1, false, NanEncoding::none);
inline constexpr Format kE3M2 = make_format("e3m2", 3, 2, 3, false, NanEncoding::none);
inline constexpr Format kE8M0 = make_format("e8m0", 8, 0, 127, false, NanEncoding::all_ones, false);

// Spot checks of the derivation against docs/facts.md §3 (the tests check every value and limit).
static_assert(kE4M3.max_code == 0x7E && kE4M3.nan_code == 0x7F && kE4M3.max_finite == 448.0);
static_assert(kE5M2.max_code == 0x7B && kE5M2.inf_code == 0x7C && kE5M2.max_finite == 57344.0);
static_assert(kFP16.max_code == 0x7BFF && kFP16.max_finite == 65504.0);
static_assert(kBF16.max_code == 0x7F7F && kBF16.nan_code == 0x7FFF);
static_assert(kFP32.max_code == 0x7F7FFFFF && kFP32.nan_code == 0x7FFFFFFF);
static_assert(kE4M3.min_subnormal == 0x1p-9 && kBF16.min_subnormal == 0x1p-133);
static_assert(kE2M1.max_code == 0x7 && kE2M1.max_finite == 6.0 && kE2M1.min_subnormal == 0.5);
static_assert(kE2M3.max_code == 0x1F && kE2M3.max_finite == 7.5 && kE2M3.min_subnormal == 0.125);
static_assert(kE3M2.max_code == 0x1F && kE3M2.max_finite == 28.0 && kE3M2.min_subnormal == 0.0625);
static_assert(kE8M0.total_bits == 8 && kE8M0.max_code == 0xFE && kE8M0.nan_code == 0xFF &&
              kE8M0.max_finite == 0x1p127 && kE8M0.min_normal == 0x1p-127);

// ---- encoding

// The code for an out-of-range value of sign `sign` (0 or 1): see the contract block.
// Formats without inf or NaN (NanEncoding::none) saturate in both modes (the shells refuse ieee
// for them). E8M0 has no sign bit: see Note [E8M0 encode].
FA4_HD uint32_t overflow_code(const Format& f, uint32_t sign, Overflow ov) {
  if (!f.has_sign) return ov == Overflow::satfinite ? (sign ? 0u : f.max_code) : f.nan_code;
  const uint32_t s = sign << (f.total_bits - 1);
  if (ov == Overflow::satfinite || f.nan_encoding == NanEncoding::none) return s | f.max_code;
  return f.has_inf ? (s | f.inf_code) : f.nan_code;
}

// Magnitude part shared by the rounding modes. A float32 magnitude a (finite, not NaN) is
// sig * 2^(e - 150) with sig = 1.m (24 bits) for normal a and 0.m for subnormal a (e = 1).
// In f, the biased exponent would be t = e - 127 + bias. Writing the result as
//   code = base + (sig >> shift, rounded)
// with base = (t - 1) << man_bits and shift = 23 - man_bits when t >= 1 (the implicit bit of sig
// adds the final 1 to the exponent field, and a rounding carry out of the mantissa bumps the
// exponent: 1.111.. -> 10.000), and base = 0, shift = 23 - man_bits + (1 - t) when t < 1 (the
// result is a subnormal of f, or rounds up to min normal: the carry again lands in the exponent
// field). Codes above max_code overflowed. `shift` is capped at 30 for round to nearest: from 26
// on the result is 0 anyway (sig < 2^24 is less than half of 2^shift); `shift_exact` is not.
struct EncodeSplit {
  uint32_t sig;
  uint32_t base;
  int shift;
  int shift_exact;
};
FA4_HD EncodeSplit encode_split(const Format& f, uint32_t a) {
  const uint32_t e = a >> 23;
  const uint32_t sig = (a & 0x7FFFFFu) | (e != 0 ? 0x800000u : 0u);
  const int t = int(e != 0 ? e : 1u) - 127 + f.bias;
  const int sub_shift = 23 - f.man_bits + (1 - t);
  const int shift = t >= 1 ? 23 - f.man_bits : (sub_shift < 30 ? sub_shift : 30);
  const uint32_t base = t >= 1 ? uint32_t(t - 1) << f.man_bits : 0u;
  return {sig, base, shift, t >= 1 ? 23 - f.man_bits : sub_shift};
}

// Round sig / 2^shift to nearest, ties to even; sig < 2^24, 0 <= shift <= 30. Branch-free so the
// array loops vectorise. Truth table on the discarded bits r (half = 2^(shift-1)), q = sig >> shift:
//   r < half -> q      r == half -> q + (q & 1)      r > half -> q + 1
// computed as (s2 + half2 - 1 + (q & 1)) >> (shift + 1) on s2 = 2 sig (half2 = 2^shift >= 1, so
// shift = 0, fp32, needs no special case: s2 is even and the added bit never carries).
FA4_HD uint32_t round_rne_shift(uint32_t sig, int shift) {
  const uint32_t s2 = sig << 1;
  const uint32_t half2 = 1u << shift;
  return (s2 + (half2 - 1u) + ((sig >> shift) & 1u)) >> (shift + 1);
}

// E8M0 (Note [E8M0 encode]): the magnitude path of encode() with man_bits = 0 is ml_dtypes'
// rounding for normal inputs (the implicit bit is the kept bit, so ties round up); float32
// subnormals compare with 1.5 * 2^-127; zeros and negatives, which E8M0 cannot hold, go where
// -inf goes.
FA4_HD uint32_t encode_unsigned(const Format& f, float x, Overflow ov) {
  const uint32_t u = f32_bits(x);
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return f.nan_code;
  if ((u >> 31) != 0 || a == 0) return overflow_code(f, 1u, ov);
  if (a == 0x7F800000u) return overflow_code(f, 0u, ov);
  if (a < 0x00800000u) return a >= 0x00600000u ? 1u : 0u;  // float32 subnormal: 1.5 * 2^-127
  const EncodeSplit sp = encode_split(f, a);
  const uint32_t code = sp.base + round_rne_shift(sp.sig, sp.shift);
  return code > f.max_code ? overflow_code(f, 0u, ov) : code;
}

// Branch-free (selects only) so that loops over it vectorise; see the contract block above.
// (The has_sign test folds away where the format is a compile-time constant.)
FA4_HD uint32_t encode(const Format& f, float x, Overflow ov) {
  if (!f.has_sign) return encode_unsigned(f, x, ov);
  const uint32_t u = f32_bits(x);
  const uint32_t sign = u >> 31;
  const uint32_t a = u & 0x7FFFFFFFu;
  const EncodeSplit sp = encode_split(f, a);
  const uint32_t code = sp.base + round_rne_shift(sp.sig, sp.shift);
  const uint32_t ovf = overflow_code(f, sign, ov);
  const uint32_t finite = code > f.max_code ? ovf : ((sign << (f.total_bits - 1)) | code);
  // a == 0x7F800000: +-inf behaves as an overflow; above: NaN.
  return a < 0x7F800000u ? finite : (a == 0x7F800000u ? ovf : f.nan_code);
}

// Stochastic rounding; `random_bits` uniform on [0, 2^32). The discarded part r of sig (shift
// bits) is compared with a uniform threshold: round up iff r * 2^(32-shift) + rand >= 2^32, i.e.
// with probability r / 2^shift (resolved to 2^-32; for shift > 32 the low bits of r beyond 32
// are truncated first, a bias below 2^-32 ulp).
// E8M0: round to nearest (encode_unsigned); the shells refuse stochastic rounding for it.
FA4_HD uint32_t encode_sr(const Format& f, float x, Overflow ov, uint32_t random_bits) {
  if (!f.has_sign) return encode_unsigned(f, x, ov);
  const uint32_t u = f32_bits(x);
  const uint32_t sign = u >> 31;
  const uint32_t a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return a == 0x7F800000u ? overflow_code(f, sign, ov) : f.nan_code;
  const EncodeSplit sp = encode_split(f, a);
  uint32_t q = sp.sig;
  if (sp.shift_exact > 0) {
    uint64_t sig = sp.sig;
    int shift = sp.shift_exact;
    if (shift > 32) {  // keep the top 32 discarded bits (sig < 2^24: beyond 56, nothing is left)
      sig = shift - 32 < 64 ? sig >> (shift - 32) : 0u;
      shift = 32;
    }
    const uint64_t r = sig & ((uint64_t(1) << shift) - 1u);
    const uint64_t up = ((r << (32 - shift)) + random_bits) >> 32;  // 0 or 1
    q = uint32_t((sig >> shift) + up);
  }
  const uint32_t code = sp.base + q;
  if (code > f.max_code) return overflow_code(f, sign, ov);
  return (sign << (f.total_bits - 1)) | code;
}

// Counter-based random bits for stochastic rounding: element `index` of the stream `seed`
// (splitmix64 finaliser of seed and index), so results do not depend on how work is split.
FA4_HD uint32_t sr_random_bits(uint64_t seed, uint64_t index) {
  return uint32_t(splitmix64_mix(seed * kSplitmixGamma + index + 0x632BE59BD9B4E019ull) >> 32);
}

// A double rounded ONCE to f. Same scheme as encode() on the 53-bit significand.
FA4_HD uint32_t encode_f64(const Format& f, double x, Overflow ov) {
  uint64_t u;
  std::memcpy(&u, &x, sizeof u);
  const uint32_t sign = uint32_t(u >> 63);
  const uint64_t a = u & 0x7FFFFFFFFFFFFFFFull;
  if (a >= 0x7FF0000000000000ull)
    return a == 0x7FF0000000000000ull ? overflow_code(f, sign, ov) : f.nan_code;
  if (!f.has_sign) {  // E8M0, Note [E8M0 encode] on the exact double
    if (sign || a == 0) return overflow_code(f, 1u, ov);
    const double xe = x;
    if (xe < formats_detail::pow2(f.emin + 1))
      return xe >= 1.5 * formats_detail::pow2(f.emin) ? 1u : 0u;
    const int de = int(a >> 52) - 1023;                               // x = 1.m 2^de, normal
    const bool up = (a & 0xFFFFFFFFFFFFFull) >= (uint64_t(1) << 51);  // 1.m >= 1.5
    const int64_t code = int64_t(de) + f.bias + (up ? 1 : 0);
    return code > int64_t(f.max_code) ? overflow_code(f, 0u, ov) : uint32_t(code);
  }
  const int e = int(a >> 52);
  const uint64_t sig = (a & 0xFFFFFFFFFFFFFull) | (e != 0 ? (uint64_t(1) << 52) : 0u);
  const int t = (e != 0 ? e : 1) - 1023 + f.bias;
  uint64_t base;
  int shift;
  if (t >= 1) {
    if (t > int(f.max_code >> f.man_bits) + 1) return overflow_code(f, sign, ov);
    base = uint64_t(t - 1) << f.man_bits;
    shift = 52 - f.man_bits;
  } else {
    base = 0;
    shift = 52 - f.man_bits + (1 - t);
  }
  uint64_t q;
  if (shift >= 55) {
    q = 0;  // below half the min subnormal
  } else {
    const uint64_t half = uint64_t(1) << (shift - 1);
    q = (sig + (half - 1u) + ((sig >> shift) & 1u)) >> shift;
  }
  const uint64_t code = base + q;
  if (code > f.max_code) return overflow_code(f, sign, ov);
  return (sign << (f.total_bits - 1)) | uint32_t(code);
}

// ---- decoding

FA4_HD bool is_nan_code(const Format& f, uint32_t bits) {
  if (f.nan_encoding == NanEncoding::none) return false;
  if (!f.has_sign) return (bits & ((1u << f.total_bits) - 1u)) == f.nan_code;
  const uint32_t mag = bits & ((1u << (f.total_bits - 1)) - 1u);
  if (f.nan_encoding == NanEncoding::all_ones) return mag == f.nan_code;
  return (mag >> f.man_bits) == ((1u << f.exp_bits) - 1u) && (mag & ((1u << f.man_bits) - 1u));
}

FA4_HD float decode(const Format& f, uint32_t bits) {
  if (f.total_bits == 32) return f32_from_bits(bits);  // fp32: identity
  bits &= (1u << f.total_bits) - 1u;
  if (!f.has_sign) {  // E8M0: 2^(bits - bias); code 0 = 2^-127 is float32's subnormal 0x00400000
    if (bits == f.nan_code) return f32_from_bits(0x7FC00000u);
    const int e = int(bits) - f.bias + 127;  // float32 exponent field
    return f32_from_bits(e >= 1 ? uint32_t(e) << 23 : 0x00400000u >> (-e));
  }
  const uint32_t sign = (bits >> (f.total_bits - 1)) << 31;
  const uint32_t mag = bits & ((1u << (f.total_bits - 1)) - 1u);
  const uint32_t e = mag >> f.man_bits;
  const uint32_t m = mag & ((1u << f.man_bits) - 1u);
  if (is_nan_code(f, bits)) return f32_from_bits(sign | 0x7FC00000u | (m << (23 - f.man_bits)));
  if (f.has_inf && mag == f.inf_code) return f32_from_bits(sign | 0x7F800000u);
  if (e != 0) {
    // Normal: float32 exponent field e - bias + 127 (in 1..254 for every format here).
    return f32_from_bits(sign | ((e - uint32_t(f.bias) + 127u) << 23) | (m << (23 - f.man_bits)));
  }
  // Subnormal (or zero): m * 2^(emin - man_bits), an exact float32 (normal or subnormal).
  const int k = f.emin - f.man_bits;  // -9 e4m3, -16 e5m2, -24 fp16, -133 bf16
  const float scale =
      k >= -126 ? f32_from_bits(uint32_t(k + 127) << 23) : f32_from_bits(1u << (k + 149));
  const float v = float(m) * scale;  // exact: the product is representable
  return f32_from_bits(sign | f32_bits(v));
}

FA4_HD float quantize(const Format& f, float x, Overflow ov) { return decode(f, encode(f, x, ov)); }

// Does x round (to nearest even) beyond f's max finite? +-inf: true; NaN: false. The sign is
// ignored (E8M0's zeros and negatives are out of range below, not beyond max).
FA4_HD bool rounds_beyond_max(const Format& f, float x) {
  const uint32_t a = f32_bits(x) & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return a == 0x7F800000u;
  const EncodeSplit sp = encode_split(f, a);
  return sp.base + round_rne_shift(sp.sig, sp.shift) > f.max_code;
}

}  // namespace fa4sim

// ---- Non-core shell (src/core/formats.cpp): name lookup, validation, array versions. Host only;
// these allocate or throw fa4sim::Error.
#include <span>
#include <string>
#include <vector>

namespace fa4sim {

// The named formats, in table order: fp32, bf16, fp16, e4m3, e5m2, then the OCP MX element and
// scale formats e2m1, e2m3, e3m2, e8m0. (Commands whose role is a per-tensor dtype of attention or
// rescaling keep their own lists; the MX formats are not among them.)
const std::vector<const Format*>& all_formats();
std::vector<std::string> format_names();
// "satfinite" / "ieee" and back (unknown names: fa4sim::Error with a suggestion).
const char* overflow_name(Overflow ov);
Overflow overflow_by_name(const std::string& name);

// "e4m3" -> kE4M3. Also accepts the ml_dtypes / numpy spellings (float8_e4m3fn, e4m3fn,
// float8_e5m2, bfloat16, float16, half, float32). Unknown names throw fa4sim::Error listing the
// valid names and suggesting the nearest.
const Format& format_by_name(const std::string& name);

// ---- roles: the dtype list of each part a format plays in FA4, derived from the table
// (all_formats()) in formats.cpp, where each role says which formats it admits. A format added to
// the table plays no role until a role admits it: these lists never grow by themselves.
enum class FormatRole : uint8_t {
  attention_input,  // Q, K, V of FA4's forward, and P's cast before P @ V: bf16, fp16, e4m3, e5m2
  p_cast,           // P's conversion in `fa4sim rescale`: the attention inputs, then fp32 (no cast)
};
// The formats of `role`: attention_input in table order, p_cast the same followed by fp32.
const std::vector<const Format*>& formats_of(FormatRole role);
bool plays(const Format& f, FormatRole role);
// Their names ({"bf16", "fp16", "e4m3", "e5m2"} for attention_input), for option choices.
std::vector<std::string> format_names(FormatRole role);
std::vector<std::string> format_names(const std::vector<const Format*>& formats);
// fa4sim::Error when `ov` is not an overflow rule of f: Overflow::ieee for a format without inf
// and NaN (E2M1, E2M3, E3M2), which could only saturate, what the user asked not to do.
void require_overflow_mode(const Format& f, Overflow ov);
// fa4sim::Error for stochastic rounding to an MX format (E2M1, E2M3, E3M2, E8M0): not modelled.
void require_stochastic_rounding(const Format& f);

// Checks that a (hand-made) Format is one these functions handle: widths, bias range, total
// bits <= 32, a subset of float32's range (every value decodes exactly), derived fields
// consistent with make_format(). Returns the problems found (empty = valid).
std::vector<std::string> validate(const Format& f);

// Array versions. `out` must have in.size() elements (fa4sim::Error otherwise); the narrow
// outputs must be wide enough for the format (uint8_t for FP8, uint16_t for 16-bit formats).
// Bit-identical to the scalar functions, element by element; named formats take a fast path
// where the format is a compile-time constant.
void encode_array(const Format& f, std::span<const float> in, std::span<uint32_t> out, Overflow ov);
void encode_array(const Format& f, std::span<const float> in, std::span<uint16_t> out, Overflow ov);
void encode_array(const Format& f, std::span<const float> in, std::span<uint8_t> out, Overflow ov);
// Codes of any width (bits above f.total_bits are ignored, as in decode()).
void decode_array(const Format& f, std::span<const uint32_t> bits, std::span<float> out);
void decode_array(const Format& f, std::span<const uint16_t> bits, std::span<float> out);
void decode_array(const Format& f, std::span<const uint8_t> bits, std::span<float> out);
// decode(encode(x)) per element; `out` may alias `in`.
void quantize_array(const Format& f, std::span<const float> in, std::span<float> out, Overflow ov);
// Stochastic rounding: element i uses sr_random_bits(seed, first_index + i), so a long stream
// can be converted in pieces (or threads) with the same result as in one call.
void encode_sr_array(const Format& f, std::span<const float> in, std::span<uint32_t> out,
                     Overflow ov, uint64_t seed, uint64_t first_index = 0);
void quantize_sr_array(const Format& f, std::span<const float> in, std::span<float> out,
                       Overflow ov, uint64_t seed, uint64_t first_index = 0);

}  // namespace fa4sim
