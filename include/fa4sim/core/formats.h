// formats.h: bit-exact float32 -> {fp32, bf16, fp16, E4M3FN, E5M2} conversions and back.
//
// Models: the GPU's conversion instructions as measured on an H200 over all 2^32 float32 inputs
// (docs/facts.md §3): `cvt.rn.satfinite.e4m3x2.f32`, `cvt.rn.satfinite.e5m2x2.f32`,
// `cvt.rn.bf16.f32` (and its `.satfinite` form), `cvt.rn.f16.f32`; and the OCP OFP8 v1.0
// non-saturating mode / IEEE 754 overflow for `Overflow::ieee`. FlashAttention-4 converts P to
// the MMA input type with these instructions before P @ V (flash_attn/cute/softmax.py @0251105a).
// Does not model: other rounding directions (toward zero etc.: see rounding.h when it exists),
// MX block scales, or conversions between two narrow formats.
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
// Every pattern of f decodes exactly (all five formats are subsets of float32). NaN codes
// decode to a quiet float32 NaN with the code's sign and payload (bf16: bits << 16 with the
// quiet bit set). Bits above f.total_bits are ignored.
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
  all_ones,  // only exponent and mantissa all ones (E4M3FN: 0x7F, 0xFF); no inf
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
  int total_bits;         // 1 + exp_bits + man_bits
  uint32_t max_code;      // bits of +max finite
  uint32_t inf_code;      // bits of +inf (0 when !has_inf)
  uint32_t nan_code;      // canonical NaN the encoder produces
  int emax;               // unbiased exponent of max finite
  int emin;               // unbiased exponent of min normal (1 - bias)
  double max_finite;
  double min_normal;
  double min_subnormal;
  double epsilon;         // 2^-man_bits: distance from 1 to the next value
  double log2_max;        // log2(max_finite): the kernel's `max_offset + tau < log2(dtype_max)`
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
  while (x >= 2.0) { x *= 0.5; ++k; }
  while (x < 1.0) { x *= 2.0; --k; }
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
                             NanEncoding nan) {
  Format f{name, exp_bits, man_bits, bias, has_inf, nan, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  f.total_bits = 1 + exp_bits + man_bits;
  const uint32_t exp_all = (1u << exp_bits) - 1u;
  const uint32_t man_all = (1u << man_bits) - 1u;
  if (nan == NanEncoding::ieee) {
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
  f.emin = 1 - bias;
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

// Spot checks of the derivation against docs/facts.md §3 (the tests check every value and limit).
static_assert(kE4M3.max_code == 0x7E && kE4M3.nan_code == 0x7F && kE4M3.max_finite == 448.0);
static_assert(kE5M2.max_code == 0x7B && kE5M2.inf_code == 0x7C && kE5M2.max_finite == 57344.0);
static_assert(kFP16.max_code == 0x7BFF && kFP16.max_finite == 65504.0);
static_assert(kBF16.max_code == 0x7F7F && kBF16.nan_code == 0x7FFF);
static_assert(kFP32.max_code == 0x7F7FFFFF && kFP32.nan_code == 0x7FFFFFFF);
static_assert(kE4M3.min_subnormal == 0x1p-9 && kBF16.min_subnormal == 0x1p-133);

// ---- encoding

// The code for an out-of-range value of sign `sign` (0 or 1): see the contract block.
FA4_HD uint32_t overflow_code(const Format& f, uint32_t sign, Overflow ov) {
  const uint32_t s = sign << (f.total_bits - 1);
  if (ov == Overflow::satfinite) return s | f.max_code;
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

// Branch-free (selects only) so that loops over it vectorise; see the contract block above.
FA4_HD uint32_t encode(const Format& f, float x, Overflow ov) {
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
FA4_HD uint32_t encode_sr(const Format& f, float x, Overflow ov, uint32_t random_bits) {
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
  const uint32_t mag = bits & ((1u << (f.total_bits - 1)) - 1u);
  if (f.nan_encoding == NanEncoding::all_ones) return mag == f.nan_code;
  return (mag >> f.man_bits) == ((1u << f.exp_bits) - 1u) && (mag & ((1u << f.man_bits) - 1u));
}

FA4_HD float decode(const Format& f, uint32_t bits) {
  if (f.total_bits == 32) return f32_from_bits(bits);  // fp32: identity
  bits &= (1u << f.total_bits) - 1u;
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
  const float scale = k >= -126 ? f32_from_bits(uint32_t(k + 127) << 23)
                                : f32_from_bits(1u << (k + 149));
  const float v = float(m) * scale;  // exact: the product is representable
  return f32_from_bits(sign | f32_bits(v));
}

FA4_HD float quantize(const Format& f, float x, Overflow ov) { return decode(f, encode(f, x, ov)); }

}  // namespace fa4sim

// ---- Non-core shell (src/core/formats.cpp): name lookup, validation, array versions. Host only;
// these allocate or throw fa4sim::Error.
#include <span>
#include <string>
#include <vector>

namespace fa4sim {

// The named formats, in table order: fp32, bf16, fp16, e4m3, e5m2.
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
