// exp2_analysis.cpp: streaming, deterministic, vectorised error analysis of an exp2 function.
// See include/fa4sim/analysis/exp2_analysis.h for what is measured and why.
#include "fa4sim/analysis/exp2_analysis.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "fa4sim/core/splitmix.h"
#include "fa4sim/util/error.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/ref/exp2_ref.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/util/parallel.h"
#include "fa4sim/util/parallel_merge.h"
#include "fa4sim/util/progress.h"

#include "../core/exp2_emu_avx2.h"
#include "../util/splitmix_avx2.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define FA4SIM_EXP2_AVX2 1
#endif

namespace fa4sim {

namespace {

#if FA4SIM_EXP2_AVX2
constexpr bool kFusedPassAvailable = true;
#else
constexpr bool kFusedPassAvailable = false;
#endif
// ---- Note [Exhaustive sweep roofline]
// `fa4sim exp2 --exhaustive --range -127,128 --degree 3` runs 2,248,015,873 inputs through five
// vector passes per block of 512 (AVX2, 4 double or 8 float lanes), counted from the code in
// vector instructions per input: inputs and value weights ~3.5; reference (14 fma Horner and
// the 2^n scaling) ~5.5; prepare (one division, the float32/out-dtype rounding indices and
// their near-midpoint tests) ~7.5; ex2_emu ~2.5; the comparison and its sums ~6; ~25 in all.
// 53 % of these floats have |x| < 2^-56, where the reference and prepare are constants
// (Note [Tiny x]): ~12. Mean ~18 per input. A Zen 4 / Zen 3 / Skylake core issues at most ~4
// vector instructions per clock (2 FMA/mul + 2 add pipes): ~4.5 clocks per input, 1.7 ns at
// 2.6 GHz, so 1.9 s on 2 cores is the bound (issue #28's goal: 3 s). Measured on the 2-core
// AMD EPYC VM (KVM, 2.6 GHz nominal), one thread, CPU time, under load 10: 2.7 ns per input
// (6.0 CPU-s; 3.6 ns and 8.0 CPU-s before the tiny path, the one-pass weights and the
// vectorised record search): about 65 % of the bound. The rest is the latency of the
// reductions and record search per block and the load/store traffic between the passes.
constexpr size_t kBlock = 512;  // inputs per inner block (a few KB per array: stays in L1/L2)
// A reference within this relative distance of a rounding midpoint is re-decided in
// multiprecision: twice exp2_ref's proven bound, so every decision is the exact 2^x's.
constexpr double kAmbiguousRel = 2 * kExp2RefMaxRelErr;

uint64_t d_bits(double d) {
  uint64_t u;
  std::memcpy(&u, &d, sizeof u);
  return u;
}
double d_from_bits(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

}  // namespace

// ---- float32 <-> ordered key (exp2_analysis.h)
int64_t key_of(float x) {
  const uint32_t u = f32_bits(x);
  return (u >> 31) ? -1 - static_cast<int64_t>(u & 0x7FFFFFFFu) : static_cast<int64_t>(u);
}
float float_of_key(int64_t k) {
  return k >= 0 ? f32_from_bits(static_cast<uint32_t>(k))
                : f32_from_bits(0x80000000u | static_cast<uint32_t>(-1 - k));
}

namespace {

struct KeyRange {
  int64_t first = 0, last = -1;  // inclusive
  uint64_t count() const { return last >= first ? static_cast<uint64_t>(last - first + 1) : 0; }
};

KeyRange key_range(double lo, double hi) {
  float a = static_cast<float>(lo);
  if (static_cast<double>(a) < lo) a = float_of_key(key_of(a) + 1);
  float b = static_cast<float>(hi);
  if (static_cast<double>(b) >= hi) b = float_of_key(key_of(b) - 1);
  return {key_of(a), key_of(b)};
}

// ---- counter-based random numbers (splitmix64's finaliser on a Weyl sequence keyed by seed)
uint64_t rng_u64(uint64_t seed, uint64_t index) {
  return splitmix64_mix(seed * kSplitmixSeedMul + (index + 1) * kSplitmixGamma);
}

// ---- rounding a double v >= 0 to a format, as an ordered index (= bit pattern of the result)
// k = RN(v / q) with the quantum q = 2^(max(e, emin) - m) (v / q is exact: a power-of-two
// scaling), index = (max(e, emin) - emin) * 2^m + k. This covers subnormals (e < emin: index = k),
// the carry into the next binade (k = 2^(m+1)), and overflow (index >= the inf pattern: clamped).
struct QFormat {
  double min_normal;  // 2^emin
  uint64_t qbase;     // bits of 2^(m - e) = qbase - (biased exponent bits of v)
  double ebias;       // 2^52 + 1023 + emin: turns the biased exponent into e - emin
  double two_m;       // 2^m
  double inf_index;   // the inf pattern
};

QFormat qformat(const Format& f) {
  QFormat q{};
  q.min_normal = std::ldexp(1.0, f.emin);
  q.qbase = static_cast<uint64_t>(2046 + f.man_bits) << 52;
  q.ebias = 0x1p52 + 1023.0 + f.emin;
  q.two_m = std::ldexp(1.0, f.man_bits);
  q.inf_index = static_cast<double>(f.inf_code);
  return q;
}

// Scalar form; `amb` (optional) is set when v is within kAmbiguousRel of a rounding midpoint.
double rounded_index(double v, const QFormat& q, bool* amb = nullptr) {
  const double vc = std::max(v, q.min_normal);
  const uint64_t eb = d_bits(vc) & 0x7FF0000000000000ull;
  const double kr = v * d_from_bits(q.qbase - eb);
  const double k = std::nearbyint(kr);  // default rounding mode (never changed): ties to even
  if (amb) *amb = std::fabs(kr - std::floor(kr) - 0.5) <= kAmbiguousRel * kr;
  const double e_rel = d_from_bits(d_bits(0x1p52) | (eb >> 52)) - q.ebias;
  return std::min(e_rel * q.two_m + k, q.inf_index);
}

const Format& out_format(const std::string& name) {
  if (name == "fp16") return kFP16;
  if (name == "fp32") return kFP32;
  return kBF16;
}

// ---- per-block data and accumulators
struct Block {
  size_t n = 0, n_pad = 0;  // valid inputs; padded to a multiple of 8 with benign inputs
  uint64_t first = 0;       // global index of x[0]
  alignas(32) float x[kBlock];
  alignas(32) float y[kBlock];
  alignas(32) float xs[kBlock + 2];  // exhaustive: x[-1 .. n] (neighbours for the weights)
  alignas(32) double ref[kBlock];
  alignas(32) double inv_ref[kBlock];
  alignas(32) int32_t ridx32[kBlock];    // index (= bits) of RN_fp32(2^x)
  alignas(32) int32_t ridx_out[kBlock];  // index (= bits) of RN_out(2^x)
  alignas(32) int32_t valid[kBlock];     // -1 (all ones) or 0 (padding)
  alignas(32) double w[kBlock];          // value weight (exhaustive) or 0
  alignas(32) int32_t xr[kBlock];        // fused pass: ex2_emu's input-only steps (Ex2Split8)
  alignas(32) float f[kBlock];
  double w_total = 0;        // sum of w (in a fixed order)
  uint32_t tiny_groups = 0;  // bit g: inputs 16 g .. 16 g + 15 took Note [Tiny x]'s path
};

struct Acc {
  double n = 0, sum_rel = 0, max_rel = -1.0, max_idx = 0, max_ulp32 = 0, identical = 0, within1 = 0,
         max_ulp = 0;
  float max_at = 0;
  double wn = 0, wsum_rel = 0, widentical = 0, wwithin1 = 0;
  // Combine with a later part (ties keep the earlier maximum).
  void merge(const Acc& o) {
    n += o.n;
    sum_rel += o.sum_rel;
    if (o.max_rel > max_rel) max_rel = o.max_rel, max_idx = o.max_idx, max_at = o.max_at;
    max_ulp32 = std::max(max_ulp32, o.max_ulp32);
    identical += o.identical;
    within1 += o.within1;
    max_ulp = std::max(max_ulp, o.max_ulp);
    wn += o.wn;
    wsum_rel += o.wsum_rel;
    widentical += o.widentical;
    wwithin1 += o.wwithin1;
  }
};

// ---- pass 1 (per input): reference, its inverse, the correctly rounded indices
void prepare_scalar(Block& b, const QFormat& q32, const QFormat& qo, size_t i,
                    std::vector<size_t>& ambiguous) {
  b.inv_ref[i] = 1.0 / b.ref[i];
  bool a32 = false, ao = false;
  b.ridx32[i] = static_cast<int32_t>(rounded_index(b.ref[i], q32, &a32));
  b.ridx_out[i] = static_cast<int32_t>(rounded_index(b.ref[i], qo, &ao));
  if (a32 || ao) ambiguous.push_back(i);
}

#if FA4SIM_EXP2_AVX2
struct QFormat4 {
  __m256d min_normal, ebias, two_m, inf_index;
  __m256i qbase;
  explicit QFormat4(const QFormat& q)
      : min_normal(_mm256_set1_pd(q.min_normal)),
        ebias(_mm256_set1_pd(q.ebias)),
        two_m(_mm256_set1_pd(q.two_m)),
        inf_index(_mm256_set1_pd(q.inf_index)),
        qbase(_mm256_set1_epi64x(static_cast<long long>(q.qbase))) {}
};

// rounded_index, 4 lanes, as int32 (indices are < 2^31). `kr_out`: v / quantum, for ambiguous4.
[[gnu::always_inline]] inline __m128i rounded_index4(__m256d v, const QFormat4& q,
                                                     __m256d* kr_out) {
  const __m256i exp_mask = _mm256_set1_epi64x(0x7FF0000000000000ll);
  const __m256i two52 = _mm256_set1_epi64x(static_cast<long long>(0x4330000000000000ull));
  const __m256d vc = _mm256_max_pd(v, q.min_normal);
  const __m256i eb = _mm256_and_si256(_mm256_castpd_si256(vc), exp_mask);
  const __m256d kr = _mm256_mul_pd(v, _mm256_castsi256_pd(_mm256_sub_epi64(q.qbase, eb)));
  const __m256d k = _mm256_round_pd(kr, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256d e_rel = _mm256_sub_pd(
      _mm256_castsi256_pd(_mm256_or_si256(two52, _mm256_srli_epi64(eb, 52))), q.ebias);
  if (kr_out) *kr_out = kr;
  return _mm256_cvttpd_epi32(_mm256_min_pd(_mm256_fmadd_pd(e_rel, q.two_m, k), q.inf_index));
}

inline __m256d ambiguous4(__m256d kr) {
  const __m256d half = _mm256_set1_pd(0.5), eps = _mm256_set1_pd(kAmbiguousRel);
  const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d fr = _mm256_sub_pd(_mm256_sub_pd(kr, _mm256_floor_pd(kr)), half);
  return _mm256_cmp_pd(_mm256_and_pd(fr, absmask), _mm256_mul_pd(eps, kr), _CMP_LE_OQ);
}

// exp2_ref on 4 vectors of 4 lanes: the same operations in the same order as the scalar exp2_ref
// (so the same bits). The 4 Horner chains are interleaved in the source: each chain is
// latency-bound, and GCC does not interleave them itself.
[[gnu::always_inline]] inline void exp2_ref4x4(const __m256d x[4], __m256d ref[4]) {
  const __m256d half = _mm256_set1_pd(0.5), magic = _mm256_set1_pd(0x1p52 + 1023.0);
  const __m256i two52 = _mm256_set1_epi64x(static_cast<long long>(0x4330000000000000ull));
  __m256d n[4], t[4], p[4];
  for (int j = 0; j < 4; ++j) {
    n[j] = _mm256_floor_pd(_mm256_add_pd(x[j], half));
    t[j] = _mm256_sub_pd(x[j], n[j]);
    p[j] = _mm256_set1_pd(kExp2RefTaylor[13]);
  }
#pragma GCC unroll 13
  for (int k = 12; k >= 0; --k) {
    const __m256d c = _mm256_set1_pd(kExp2RefTaylor[k]);
    for (int j = 0; j < 4; ++j) p[j] = _mm256_fmadd_pd(p[j], t[j], c);
  }
  // 2^n from its bits: n + 1023 sits in the low mantissa bits of n + (2^52 + 1023).
  for (int j = 0; j < 4; ++j) {
    const __m256i nb = _mm256_sub_epi64(_mm256_castpd_si256(_mm256_add_pd(n[j], magic)), two52);
    ref[j] = _mm256_mul_pd(p[j], _mm256_castsi256_pd(_mm256_slli_epi64(nb, 52)));
  }
}

// exp2_ref over a block.
inline void exp2_ref_block(const float* x, double* ref, size_t n) {  // n % 16 == 0
  for (size_t i = 0; i < n; i += 16) {
    __m256d xd[4], r[4];
    for (int j = 0; j < 4; ++j) xd[j] = _mm256_cvtps_pd(_mm_load_ps(x + i + 4 * j));
    exp2_ref4x4(xd, r);
    for (int j = 0; j < 4; ++j) _mm256_store_pd(ref + i + 4 * j, r[j]);
  }
}

// ---- Note [Tiny x]
// exp2_ref's Horner step k is p = fma(p, t, c_k). If p = c_{k+1} on entry and |c_{k+1} t| is
// below a quarter of the spacing of doubles just under c_k (the smaller of its two spacings),
// the exact c_k + c_{k+1} t rounds to c_k: the step leaves p = c_k. For |x| < kTinyX (2^-56,
// under the bound of 2^-55.47 that the steps need) n = floor(x + 0.5) = 0, t = x, and that holds for every step (13 down to 0): p = c_0
// = 1 and exp2_ref(x) = 1 exactly. Then the inverse is 1, the correctly rounded float32 and out
// dtype values are 1's (1 is in every format, far from a rounding midpoint: never ambiguous),
// with no Horner, no division and no rounding. (A bound on |t| alone would not do: only the
// all-or-nothing case pays, as all but the last few steps change p's low bits otherwise, and
// x = n != 0 would need 2^n.) The exhaustive sweep's inputs are mostly tiny: 95 % of the floats
// of [-127, 128) have |x| < 1 and 53 % have |x| < 2^-56. A group of 16 consecutive inputs takes
// this path when all of its |x| are below kTinyX.
double tiny_x_bound() {
  double bound = HUGE_VAL;
  for (int k = 12; k >= 0; --k) {  // step k: |c_{k+1} t| < (spacing under c_k) / 4
    const double c = kExp2RefTaylor[k];
    const double below = c - std::nextafter(c, 0.0);  // exact
    // 0.5x: covers the division's rounding (the bound only has to be safe, not sharp).
    bound = std::min(bound, 0.5 * (0.25 * below / kExp2RefTaylor[k + 1]));
  }
  return bound;
}
// The largest power of two not above the bound (2^-56): exact as a float, so |x| < kTinyX is
// decided on the float inputs.
const float kTinyX = static_cast<float>(std::ldexp(1.0, std::ilogb(tiny_x_bound())));

// exp2_ref over a block (n % 8 == 0; a group of 16 may run 8 entries past n, inside the
// arrays). Bit g of the result is set for a group g (inputs 16 g .. 16 g + 15) whose |x| are all
// below kTinyX (Note [Tiny x]): its references and inverses are 1. The other groups take
// exp2_ref4x4, the same bits as exp2_ref_block.
inline uint32_t exp2_ref_block_tiny(const float* x, double* ref, double* inv, size_t n) {
  const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7FFFFFFF));
  const __m256 tiny = _mm256_set1_ps(kTinyX);
  const __m256d one = _mm256_set1_pd(1.0);
  uint32_t tiny_groups = 0;
  for (size_t i = 0, g = 0; i < n; i += 16, ++g) {
    const __m256 a = _mm256_max_ps(_mm256_and_ps(_mm256_load_ps(x + i), absmask),
                                   _mm256_and_ps(_mm256_load_ps(x + i + 8), absmask));
    if (_mm256_movemask_ps(_mm256_cmp_ps(a, tiny, _CMP_LT_OQ)) == 0xFF) {
      tiny_groups |= 1u << g;
      for (int j = 0; j < 4; ++j) {
        _mm256_store_pd(ref + i + 4 * j, one);
        _mm256_store_pd(inv + i + 4 * j, one);
      }
    } else {
      __m256d xd[4], r[4];
      for (int j = 0; j < 4; ++j) xd[j] = _mm256_cvtps_pd(_mm_load_ps(x + i + 4 * j));
      exp2_ref4x4(xd, r);
      for (int j = 0; j < 4; ++j) _mm256_store_pd(ref + i + 4 * j, r[j]);
    }
  }
  return tiny_groups;
}

// RN_bf16 index of 8 floats y >= +0 (finite): round to nearest even on the bits, as
// formats.h's encode does; a carry into the exponent or to inf is the right index.
inline __m256i bf16_index8(__m256i yb) {
  const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(yb, 16), _mm256_set1_epi32(1));
  return _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(yb, _mm256_set1_epi32(0x7FFF)), lsb),
                           16);
}

// Pass 1 for 4 references: 1 / ref, the RN_fp32 and RN_out indices, and a 4-bit mask of the
// lanes whose rounding decision is within kAmbiguousRel of a midpoint (re-decided exactly).
struct Prep4 {
  __m256d inv;
  __m128i r32, ridx;
  int amb;
};
[[gnu::always_inline]] inline Prep4 prep4(__m256d ref, const QFormat4& vo) {
  const __m256d one_minus = _mm256_set1_pd(1.0 - kAmbiguousRel),
                one_plus = _mm256_set1_pd(1.0 + kAmbiguousRel);
  Prep4 r;
  r.inv = _mm256_div_pd(_mm256_set1_pd(1.0), ref);
  // RN_fp32 by the hardware conversion (MXCSR's default round-to-nearest-even, never changed;
  // subnormals kept): its bits are the index. Ambiguous when ref * (1 -+ eps) round apart.
  r.r32 = _mm_castps_si128(_mm256_cvtpd_ps(ref));
  const __m128i r32_lo = _mm_castps_si128(_mm256_cvtpd_ps(_mm256_mul_pd(ref, one_minus)));
  const __m128i r32_hi = _mm_castps_si128(_mm256_cvtpd_ps(_mm256_mul_pd(ref, one_plus)));
  __m256d kro;
  r.ridx = rounded_index4(ref, vo, &kro);
  r.amb = _mm256_movemask_pd(ambiguous4(kro)) |
          _mm_movemask_ps(
              _mm_castsi128_ps(_mm_xor_si128(_mm_cmpeq_epi32(r32_lo, r32_hi), _mm_set1_epi32(-1))));
  return r;
}
#endif

// `tiny_path`: the references (and, for tiny groups, everything) by exp2_ref_block_tiny
// (Note [Tiny x]).
void prepare(Block& b, const QFormat& q32, const QFormat& qo, bool ref_given, bool tiny_path,
             std::vector<size_t>& ambiguous) {
  ambiguous.clear();
  b.tiny_groups = 0;
  size_t i = 0;
#if FA4SIM_EXP2_AVX2
  static_assert(kBlock <= 16 * 32, "one bit per group of 16 in a uint32_t");
  const QFormat4 vo(qo);
  uint32_t tiny_groups = 0;
  if (!ref_given && tiny_path)
    b.tiny_groups = tiny_groups = exp2_ref_block_tiny(b.x, b.ref, b.inv_ref, b.n_pad);
  else if (!ref_given)
    exp2_ref_block(b.x, b.ref, b.n_pad);
  // 1's indices: float32 bits 0x3F800000; the out dtype's from rounded_index (exact).
  const __m128i one32 = _mm_set1_epi32(0x3F800000),
                one_out = _mm_set1_epi32(static_cast<int>(rounded_index(1.0, qo)));
  for (; i < b.n_pad; i += 4) {
    if (tiny_groups >> (i / 16) & 1) {  // ref = inv = 1, never ambiguous
      _mm_store_si128(reinterpret_cast<__m128i*>(b.ridx32 + i), one32);
      _mm_store_si128(reinterpret_cast<__m128i*>(b.ridx_out + i), one_out);
      continue;
    }
    const Prep4 r = prep4(_mm256_load_pd(b.ref + i), vo);
    _mm256_store_pd(b.inv_ref + i, r.inv);
    _mm_store_si128(reinterpret_cast<__m128i*>(b.ridx32 + i), r.r32);
    _mm_store_si128(reinterpret_cast<__m128i*>(b.ridx_out + i), r.ridx);
    if (r.amb)
      for (int l = 0; l < 4; ++l)
        if (r.amb & (1 << l)) ambiguous.push_back(i + static_cast<size_t>(l));
  }
#endif
  for (; i < b.n_pad; ++i) {
    if (!ref_given) b.ref[i] = exp2_ref(static_cast<double>(b.x[i]));
    prepare_scalar(b, q32, qo, i, ambiguous);
  }
}

// ---- pass 2 (per degree): compare y with the reference

// The statistics of one block and one degree after its inputs went through `part`: sets where
// the maximum is, the block's counts, and merges into `acc`.
void close_block(const Block& b, Acc& part, Acc& acc) {
  const size_t at = static_cast<size_t>(part.max_idx);
  part.max_at = b.x[at];
  part.max_idx += static_cast<double>(b.first);
  part.n = static_cast<double>(b.n);
  part.wn = b.w_total;
  acc.merge(part);
}

#if FA4SIM_EXP2_AVX2
// Vector accumulators of one block and one degree (lanes are reduced in a fixed order).
struct AccVec {
  __m256d vmax = _mm256_set1_pd(-1.0), vsum = _mm256_setzero_pd(), vwsum = _mm256_setzero_pd(),
          vwident = _mm256_setzero_pd(), vwwithin = _mm256_setzero_pd();
  __m256i vulp32 = _mm256_setzero_si256(), vulp = _mm256_setzero_si256(),
          vident = _mm256_setzero_si256(), vwithin = _mm256_setzero_si256();
};

// 8 inputs: yb = bits of y, yd = y as doubles (lanes 0-3, 4-7); r32, ridx: the reference's RN_fp32 and RN_out indices; ref, inv: the
// reference and its inverse (lanes 0-3, 4-7); valid: -1 or 0 (padding) per lane (kMasked only);
// w: the value weights (kWeighted only).
template <bool kWeighted, bool kMasked>
[[gnu::always_inline]] inline void acc_step8(AccVec& a, __m256i yb, const __m256d yd[2],
                                             __m256i r32, __m256i ridx, const __m256d ref[2],
                                             const __m256d inv[2], __m256i valid, const double* w,
                                             const QFormat4& vo, bool out_bf16) {
  const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
  const __m256d one = _mm256_set1_pd(1.0);
  const __m256i izero = _mm256_setzero_si256(), two = _mm256_set1_epi32(2);
  auto mask = [&](__m256i v) { return kMasked ? _mm256_and_si256(v, valid) : v; };
  // float32 ULPs: y >= +0, so its bit pattern is its ordered index.
  const __m256i d32 = _mm256_abs_epi32(_mm256_sub_epi32(yb, r32));
  a.vulp32 = _mm256_max_epu32(a.vulp32, mask(d32));
  const __m256i yi = out_bf16 ? bf16_index8(yb)
                              : _mm256_setr_m128i(rounded_index4(yd[0], vo, nullptr),
                                                  rounded_index4(yd[1], vo, nullptr));
  const __m256i d = _mm256_abs_epi32(_mm256_sub_epi32(yi, ridx));
  a.vulp = _mm256_max_epu32(a.vulp, mask(d));
  const __m256i same = mask(_mm256_cmpeq_epi32(d, izero));
  const __m256i near = mask(_mm256_cmpgt_epi32(two, d));
  a.vident = _mm256_sub_epi32(a.vident, same);  // masks are -1
  a.vwithin = _mm256_sub_epi32(a.vwithin, near);
  for (int h = 0; h < 2; ++h) {
    __m256d rel = _mm256_mul_pd(_mm256_and_pd(_mm256_sub_pd(yd[h], ref[h]), absmask), inv[h]);
    if constexpr (kMasked) {
      const __m128i valid4 = h ? _mm256_extracti128_si256(valid, 1) : _mm256_castsi256_si128(valid);
      rel = _mm256_and_pd(rel, _mm256_castsi256_pd(_mm256_cvtepi32_epi64(valid4)));
    }
    a.vmax = _mm256_max_pd(a.vmax, rel);  // where: found by acc_reduce, only for a record
    a.vsum = _mm256_add_pd(a.vsum, rel);
    if constexpr (kWeighted) {
      const __m256d wv = _mm256_load_pd(w + 4 * h);
      const __m128i s4 = h ? _mm256_extracti128_si256(same, 1) : _mm256_castsi256_si128(same);
      const __m128i n4 = h ? _mm256_extracti128_si256(near, 1) : _mm256_castsi256_si128(near);
      const __m256d sd = _mm256_and_pd(_mm256_castsi256_pd(_mm256_cvtepi32_epi64(s4)), one);
      const __m256d nd = _mm256_and_pd(_mm256_castsi256_pd(_mm256_cvtepi32_epi64(n4)), one);
      a.vwsum = _mm256_fmadd_pd(rel, wv, a.vwsum);
      a.vwident = _mm256_fmadd_pd(sd, wv, a.vwident);
      a.vwwithin = _mm256_fmadd_pd(nd, wv, a.vwwithin);
    }
  }
}

// ---- Note [Tiny y]
// In a tiny group (Note [Tiny x]) the reference is 1, its inverse 1 and its RN_fp32 and RN_out
// indices are 1's; where y is 1.0f too (ex2_emu's degrees 1-5 give it for 0 <= x < 2^-56, and
// for the zeros and subnormals, flushed to zero), acc_step8 computes rel = 0, ULP distances 0,
// same = near = all ones. Its updates are then: vmax = max(vmax, 0); vsum + 0 and
// fma(0, w, vwsum) leave the sums as they are (they are >= +0); vident and vwithin count one per
// lane; fma(1, w, s) is s + w. acc_one8 makes exactly these updates (the same bits) without the
// conversions and comparisons: half of the floats of [-127, 128) are in tiny groups.
inline bool all_one8(__m256i yb) {
  return _mm256_movemask_epi8(_mm256_cmpeq_epi32(yb, _mm256_set1_epi32(0x3F800000))) == -1;
}

template <bool kWeighted>
[[gnu::always_inline]] inline void acc_one8(AccVec& a, const double* w) {
  const __m256i one = _mm256_set1_epi32(1);
  a.vmax = _mm256_max_pd(a.vmax, _mm256_setzero_pd());
  a.vident = _mm256_add_epi32(a.vident, one);
  a.vwithin = _mm256_add_epi32(a.vwithin, one);
  if constexpr (kWeighted) {
    for (int h = 0; h < 2; ++h) {
      const __m256d wv = _mm256_load_pd(w + 4 * h);
      a.vwident = _mm256_add_pd(a.vwident, wv);
      a.vwwithin = _mm256_add_pd(a.vwwithin, wv);
    }
  }
}

// Reduces a block's vector accumulators into `part`. A block maximum above `acc`'s is a record:
// its first input is found with the same arithmetic; `y_of_block()` returns the block's y.
template <class YOfBlock>
void acc_reduce(const AccVec& a, const Block& b, const Acc& acc, Acc& part, YOfBlock&& y_of_block) {
  alignas(32) double m[4], s[4], ws[4], wid[4], wwi[4];
  alignas(32) uint32_t u32[8], id[8], wi[8], u[8];
  _mm256_store_pd(m, a.vmax);
  _mm256_store_pd(s, a.vsum);
  _mm256_store_pd(ws, a.vwsum);
  _mm256_store_pd(wid, a.vwident);
  _mm256_store_pd(wwi, a.vwwithin);
  _mm256_store_si256(reinterpret_cast<__m256i*>(u32), a.vulp32);
  _mm256_store_si256(reinterpret_cast<__m256i*>(id), a.vident);
  _mm256_store_si256(reinterpret_cast<__m256i*>(wi), a.vwithin);
  _mm256_store_si256(reinterpret_cast<__m256i*>(u), a.vulp);
  double block_max = -1.0;
  for (int l = 0; l < 4; ++l) {
    block_max = std::max(block_max, m[l]);
    part.sum_rel += s[l];
    part.wsum_rel += ws[l];
    part.widentical += wid[l];
    part.wwithin1 += wwi[l];
  }
  if (block_max > acc.max_rel) {  // a record: find its first input (same arithmetic as above)
    const float* y = y_of_block();
    const __m256d absmask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7FFFFFFFFFFFFFFFll));
    const __m256d bm = _mm256_set1_pd(block_max);
    for (size_t k = 0; k < b.n; k += 4) {  // y, ref, inv_ref hold n_pad >= k + 4 entries
      const __m256d rel = _mm256_mul_pd(
          _mm256_and_pd(
              _mm256_sub_pd(_mm256_cvtps_pd(_mm_loadu_ps(y + k)), _mm256_load_pd(b.ref + k)),
              absmask),
          _mm256_load_pd(b.inv_ref + k));
      int hit = _mm256_movemask_pd(_mm256_cmp_pd(rel, bm, _CMP_EQ_OQ));
      if (b.n - k < 4) hit &= (1 << (b.n - k)) - 1;  // padding lanes
      if (hit) {
        part.max_rel = block_max;
        part.max_idx =
            static_cast<double>(k + static_cast<size_t>(__builtin_ctz(static_cast<unsigned>(hit))));
        break;
      }
    }
  }
  for (int l = 0; l < 8; ++l) {
    part.max_ulp32 = std::max(part.max_ulp32, static_cast<double>(u32[l]));
    part.identical += id[l];
    part.within1 += wi[l];
    part.max_ulp = std::max(part.max_ulp, static_cast<double>(u[l]));
  }
}
#endif

template <bool kWeighted, bool kBf16>
void accumulate(const Block& b, const QFormat& qo, Acc& acc) {
  [[maybe_unused]] constexpr bool out_bf16 = kBf16;  // unused without the AVX2 path
  Acc part;
  size_t i = 0;
#if FA4SIM_EXP2_AVX2
  const QFormat4 vo(qo);
  AccVec av;
  auto pass = [&]<bool kMasked>() {
    for (; i < b.n_pad; i += 8) {
      const __m256i yb = _mm256_load_si256(reinterpret_cast<const __m256i*>(b.y + i));
      if (!kMasked && (b.tiny_groups >> (i / 16) & 1) && all_one8(yb)) {
        acc_one8<kWeighted>(av, b.w + i);  // Note [Tiny y]
        continue;
      }
      const __m256d ref[2] = {_mm256_load_pd(b.ref + i), _mm256_load_pd(b.ref + i + 4)};
      const __m256d inv[2] = {_mm256_load_pd(b.inv_ref + i), _mm256_load_pd(b.inv_ref + i + 4)};
      const __m256 y8 = _mm256_castsi256_ps(yb);
      const __m256d yd[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(y8)),
                             _mm256_cvtps_pd(_mm256_extractf128_ps(y8, 1))};
      acc_step8<kWeighted, kMasked>(
          av, yb, yd, _mm256_load_si256(reinterpret_cast<const __m256i*>(b.ridx32 + i)),
          _mm256_load_si256(reinterpret_cast<const __m256i*>(b.ridx_out + i)), ref, inv,
          _mm256_load_si256(reinterpret_cast<const __m256i*>(b.valid + i)), b.w + i, vo, out_bf16);
    }
  };
  // Only a block with padding lanes (a run's last) needs the valid mask.
  with_flag(b.n != b.n_pad,
            [&](auto masked) { pass.template operator()<decltype(masked)::value>(); });
  acc_reduce(av, b, acc, part, [&] { return b.y; });
#endif
  for (; i < b.n_pad; ++i) {  // non-AVX2 builds: the same arithmetic, one lane
    if (!b.valid[i]) continue;
    const double y = static_cast<double>(b.y[i]);
    const double rel = std::fabs(y - b.ref[i]) * b.inv_ref[i];
    if (rel > part.max_rel) part.max_rel = rel, part.max_idx = static_cast<double>(i);
    part.sum_rel += rel;
    const double d32 = std::fabs(static_cast<double>(f32_bits(b.y[i])) - b.ridx32[i]);
    part.max_ulp32 = std::max(part.max_ulp32, d32);
    const double d = std::fabs(rounded_index(y, qo) - b.ridx_out[i]);
    part.max_ulp = std::max(part.max_ulp, d);
    const double same = d == 0 ? 1.0 : 0.0, near = d <= 1 ? 1.0 : 0.0;
    part.identical += same;
    part.within1 += near;
    if constexpr (kWeighted) {
      part.wsum_rel += rel * b.w[i];
      part.widentical += same * b.w[i];
      part.wwithin1 += near * b.w[i];
    }
  }
  close_block(b, part, acc);
}

// Calls f(std::bool_constant<flag>): a run-time flag becomes a template argument.
template <class F>
void with_flag(bool flag, F&& f) {
  if (flag)
    f(std::true_type{});
  else
    f(std::false_type{});
}

template <bool kWeighted>
void accumulate(const Block& b, const QFormat& qo, bool out_bf16, Acc& acc) {
  with_flag(out_bf16, [&](auto bf16) { accumulate<kWeighted, decltype(bf16)::value>(b, qo, acc); });
}

// ---- input generation for one block
struct InputPlan {
  bool exhaustive = false;
  Exp2Sampling sampling = Exp2Sampling::uniform;
  uint64_t seed = 0;
  double lo = 0, hi = 0;
  KeyRange keys;
  float x_first = 0, x_last = 0;
};

// float_of_key without branches (vectorisable): k < 0 -> sign bit | (-1 - k) = sign | ~k.
inline uint32_t bits_of_key32(int32_t k) {
  const int32_t s = k >> 31;
  return static_cast<uint32_t>(k ^ s) | (static_cast<uint32_t>(s) & 0x80000000u);
}

#if FA4SIM_EXP2_AVX2
// rng_u64(seed, g .. g + 3), 4 lanes; `z` holds the Weyl terms seed * C1 + (g + 1) * C2.
inline __m256i rng_u64_4(__m256i z) { return simd::splitmix64_mix4(z); }

// The scalar loop's u01 = double(r >> 11) * 2^-53, exactly, in two parts built from bit
// patterns: hi = (r >> 32) * 2^-32 (the 32 bits or'ed into the mantissa of 2^20, minus 2^20) and
// lo = (bits 11..31 of r) * 2^-53 (the 21 bits or'ed into the mantissa of 2^-1, minus 2^-1). Both
// subtractions are exact, and so is hi + lo: it is (r >> 11) * 2^-53, which has at most 53
// significant bits.
inline __m256d u01_4(__m256i r) {
  const __m256d hi =
      _mm256_sub_pd(_mm256_castsi256_pd(_mm256_or_si256(_mm256_srli_epi64(r, 32),
                                                        _mm256_set1_epi64x(0x4130000000000000ll))),
                    _mm256_set1_pd(0x1p20));
  const __m256i lo_bits = _mm256_and_si256(_mm256_srli_epi64(r, 11), _mm256_set1_epi64x(0x1FFFFF));
  const __m256d lo = _mm256_sub_pd(
      _mm256_castsi256_pd(_mm256_or_si256(lo_bits, _mm256_set1_epi64x(0x3FE0000000000000ll))),
      _mm256_set1_pd(0.5));
  return _mm256_add_pd(hi, lo);
}

// Uniform sampling, 8 inputs per call, bit-identical to the scalar loop in fill_inputs (same
// generator, the same double operations in the same order, the same RN conversion to float and
// the same clamp: max(first, x) / min(last, x) pick x on ties, as std::max / std::min do).
class Uniform8 {
 public:
  Uniform8(const InputPlan& p, uint64_t g)  // the next call returns inputs g .. g + 7
      : lo_(_mm256_set1_pd(p.lo)),
        width_(_mm256_set1_pd(p.hi - p.lo)),
        first_(_mm256_set1_ps(p.x_first)),
        last_(_mm256_set1_ps(p.x_last)),
        step_(_mm256_set1_epi64x(static_cast<long long>(4 * kC2))) {
    const uint64_t base = p.seed * kSplitmixSeedMul + (g + 1) * kC2;  // wraps like rng_u64
    z_ = _mm256_setr_epi64x(static_cast<long long>(base), static_cast<long long>(base + kC2),
                            static_cast<long long>(base + 2 * kC2),
                            static_cast<long long>(base + 3 * kC2));
  }
  [[gnu::always_inline]] __m256 next() {
    const __m128 x0 =
        _mm256_cvtpd_ps(_mm256_add_pd(lo_, _mm256_mul_pd(width_, u01_4(rng_u64_4(z_)))));
    z_ = _mm256_add_epi64(z_, step_);
    const __m128 x1 =
        _mm256_cvtpd_ps(_mm256_add_pd(lo_, _mm256_mul_pd(width_, u01_4(rng_u64_4(z_)))));
    z_ = _mm256_add_epi64(z_, step_);
    return _mm256_min_ps(last_, _mm256_max_ps(first_, _mm256_set_m128(x1, x0)));
  }

 private:
  static constexpr uint64_t kC2 = kSplitmixGamma;  // rng_u64's Weyl increment
  __m256d lo_, width_;
  __m256 first_, last_;
  __m256i step_, z_;
};

// Returns the number of inputs written (a multiple of 8); the scalar loop does the rest.
size_t fill_uniform_avx2(const InputPlan& p, Block& b) {
  Uniform8 gen(p, b.first);
  size_t i = 0;
  for (; i + 8 <= b.n; i += 8) {
    _mm256_store_ps(b.x + i, gen.next());
    _mm256_store_si256(reinterpret_cast<__m256i*>(b.valid + i), _mm256_set1_epi32(-1));
    _mm256_store_pd(b.w + i, _mm256_setzero_pd());
    _mm256_store_pd(b.w + i + 4, _mm256_setzero_pd());
  }
  return i;
}
#endif

#if FA4SIM_EXP2_AVX2
// ---- Note [Fused sampled pass]
// The default job (uniform sampling, the built-in ex2_emu, the double reference) runs a fused
// form of fill_inputs + prepare + (per degree) ex2_emu + accumulate per block: ex2_emu's
// input-only steps (ex2_split8) run once for all degrees; each degree's y goes from ex2_finish8
// straight into the statistics, never to memory, and with no std::function call; the out dtype
// is a template argument (no branch, fewer live registers). The generator and the reference are
// separate loops: the reference's Horner chains are latency-bound, and the out-of-order core
// overlaps the short iterations of exp2_ref_block with each other (one loop doing both took
// 0.204 s against 0.189 s: `fa4sim exp2 --threads 1 --samples 33554432`, min of 9 runs of each
// build, the builds run one after the other, not alternated). The operations and their order
// are those of the separate passes, so the results are the same bits
// (tests/analysis/test_exp2_analysis.cpp, FusedPassEqualsSeparatePasses). The maximum's position is
// searched, as in accumulate, only for a block that sets a record: then ex2_emu recomputes that
// block's y.
// Needs b.n % 16 == 0 (every block except perhaps a run's last, which takes the separate passes).
template <int D, bool kBf16>
void fused_degree(const Block& b, const QFormat4& vo, AccVec& a) {
  for (size_t i = 0; i < b.n; i += 8) {
    const detail::Ex2Split8 split{_mm256_load_si256(reinterpret_cast<const __m256i*>(b.xr + i)),
                                  _mm256_load_ps(b.f + i)};
    const __m256d ref[2] = {_mm256_load_pd(b.ref + i), _mm256_load_pd(b.ref + i + 4)};
    const __m256d inv[2] = {_mm256_load_pd(b.inv_ref + i), _mm256_load_pd(b.inv_ref + i + 4)};
    // Sampled inputs are finite (clamped into the range): ex2_finish8's NaN step is skipped.
    const __m256i yb = detail::ex2_finish8<D, true>(split);
    const __m256 y8 = _mm256_castsi256_ps(yb);
    const __m256d yd[2] = {_mm256_cvtps_pd(_mm256_castps256_ps128(y8)),
                           _mm256_cvtps_pd(_mm256_extractf128_ps(y8, 1))};
    acc_step8<false, false>(a, yb, yd,
                            _mm256_load_si256(reinterpret_cast<const __m256i*>(b.ridx32 + i)),
                            _mm256_load_si256(reinterpret_cast<const __m256i*>(b.ridx_out + i)),
                            ref, inv, _mm256_setzero_si256(), nullptr, vo, kBf16);
  }
}

template <int D>
void fused_degree(const Block& b, const QFormat4& vo, bool out_bf16, AccVec& a) {
  with_flag(out_bf16, [&](auto bf16) { fused_degree<D, decltype(bf16)::value>(b, vo, a); });
}

void fused_uniform_block(const InputPlan& p, Block& b, const std::vector<int>& degrees,
                         const QFormat& q32, const QFormat& qo, bool out_bf16,
                         std::vector<Acc>& acc, uint64_t& fallbacks) {
  const QFormat4 vo(qo);
  // Inputs (as fill_uniform_avx2 makes them) and references.
  Uniform8 gen(p, b.first);
  for (size_t i = 0; i < b.n; i += 8) _mm256_store_ps(b.x + i, gen.next());
  exp2_ref_block(b.x, b.ref, b.n);
  // prepare (shared by all degrees).
  for (size_t i = 0; i < b.n; i += 4) {
    const Prep4 r = prep4(_mm256_load_pd(b.ref + i), vo);
    _mm256_store_pd(b.inv_ref + i, r.inv);
    _mm_store_si128(reinterpret_cast<__m128i*>(b.ridx32 + i), r.r32);
    _mm_store_si128(reinterpret_cast<__m128i*>(b.ridx_out + i), r.ridx);
    if (r.amb)  // re-decide near-midpoint cases exactly (as run_exp2 does after prepare)
      for (size_t l = 0; l < 4; ++l)
        if (r.amb & (1 << l)) {
          const double odd = exp2_mp_round_odd(b.x[i + l]);
          b.ridx32[i + l] = static_cast<int32_t>(rounded_index(odd, q32));
          b.ridx_out[i + l] = static_cast<int32_t>(rounded_index(odd, qo));
          ++fallbacks;
        }
  }
  for (size_t i = 0; i < b.n; i += 8) {
    const detail::Ex2Split8 split =
        detail::ex2_split8(_mm256_load_si256(reinterpret_cast<const __m256i*>(b.x + i)));
    _mm256_store_si256(reinterpret_cast<__m256i*>(b.xr + i), split.xr);
    _mm256_store_ps(b.f + i, split.f);
  }
  // Per degree: the polynomial and the splice, compared at once (y never goes to memory).
  for (size_t d = 0; d < degrees.size(); ++d) {
    AccVec a;
    switch (degrees[d]) {  // validate() allows 0..5
      case 0: fused_degree<0>(b, vo, out_bf16, a); break;
      case 1: fused_degree<1>(b, vo, out_bf16, a); break;
      case 2: fused_degree<2>(b, vo, out_bf16, a); break;
      case 3: fused_degree<3>(b, vo, out_bf16, a); break;
      case 4: fused_degree<4>(b, vo, out_bf16, a); break;
      default: fused_degree<5>(b, vo, out_bf16, a); break;
    }
    Acc part;
    acc_reduce(a, b, acc[d], part, [&] {
      ex2_emu(std::span<const float>(b.x, b.n), std::span<float>(b.y, b.n), degrees[d]);
      return b.y;
    });
    close_block(b, part, acc[d]);
  }
}
#endif

void fill_inputs(const InputPlan& p, Block& b) {
  const uint64_t count = p.keys.count();
  if (p.exhaustive) {
    // Keys are consecutive: x[i] has key first + i. xs holds x[-1 .. n] for the weights; the
    // keys stay inside int32 (the range is finite).
    const auto k0 = static_cast<int32_t>(p.keys.first + static_cast<int64_t>(b.first)) - 1;
    size_t i = 0;
#if FA4SIM_EXP2_AVX2
    {
      const __m256i step = _mm256_set1_epi32(8),
                    sign = _mm256_set1_epi32(static_cast<int>(0x80000000u));
      __m256i k =
          _mm256_add_epi32(_mm256_set1_epi32(k0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      for (; i + 8 <= b.n + 2; i += 8, k = _mm256_add_epi32(k, step)) {
        const __m256i sg = _mm256_srai_epi32(k, 31);
        const __m256i bits = _mm256_or_si256(_mm256_xor_si256(k, sg), _mm256_and_si256(sg, sign));
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(b.xs + i), bits);
      }
    }
#endif
    for (; i < b.n + 2; ++i) b.xs[i] = f32_from_bits(bits_of_key32(k0 + static_cast<int32_t>(i)));
    i = 0;
#if FA4SIM_EXP2_AVX2
    // The first float of the range also takes [lo, its lower midpoint) and the last one [its upper
    // midpoint, hi): sampling clamps those slivers onto them (Note [Value weights]).
    // Away from the range's ends, w = (x0 + x+)/2 - (x- + x0)/2 = (x+ - x-)/2: neighbouring
    // floats, so each sum and difference is exact in double and both forms give the same bits.
    // The lanes equal (as floats: -0 == +0) to the first or the last float take the scalar form.
    const __m256d half = _mm256_set1_pd(0.5);
    const __m256 ends = _mm256_set_m128(_mm_set1_ps(p.x_last), _mm_set1_ps(p.x_first));
    int at_end = 0;
    for (; i + 4 <= b.n; i += 4) {
      const __m128 x0 = _mm_loadu_ps(b.xs + i + 1);
      at_end |= _mm256_movemask_ps(_mm256_cmp_ps(_mm256_set_m128(x0, x0), ends, _CMP_EQ_OQ));
      const __m256d xm = _mm256_cvtps_pd(_mm_loadu_ps(b.xs + i));
      const __m256d xp = _mm256_cvtps_pd(_mm_loadu_ps(b.xs + i + 2));
      _mm256_store_pd(b.w + i, _mm256_mul_pd(half, _mm256_sub_pd(xp, xm)));
    }
    if (at_end) i = 0;  // rare (a block at an end of the range): redo it with the scalar form
#endif
    for (; i < b.n; ++i) {
      const float x = b.xs[i + 1];
      const double xd = x;
      const double below = x == p.x_first ? p.lo : 0.5 * (static_cast<double>(b.xs[i]) + xd);
      const double above = x == p.x_last ? p.hi : 0.5 * (xd + static_cast<double>(b.xs[i + 2]));
      b.w[i] = above - below;
    }
    for (i = 0; i < b.n; ++i) b.x[i] = b.xs[i + 1], b.valid[i] = -1;
    double wsum[4] = {0, 0, 0, 0};  // 4 interleaved partial sums (vectorisable, fixed order)
    for (i = 0; i + 4 <= b.n; i += 4)
      for (int l = 0; l < 4; ++l) wsum[l] += b.w[i + static_cast<size_t>(l)];
    for (; i < b.n; ++i) wsum[0] += b.w[i];
    b.w_total = (wsum[0] + wsum[1]) + (wsum[2] + wsum[3]);
  } else {
    size_t i = 0;
#if FA4SIM_EXP2_AVX2
    if (p.sampling == Exp2Sampling::uniform) i = fill_uniform_avx2(p, b);
#endif
    for (; i < b.n; ++i) {
      const uint64_t g = b.first + i;
      float x;
      if (p.sampling == Exp2Sampling::bits) {
        const uint64_t r = rng_u64(p.seed, g);
        const auto off = static_cast<uint64_t>((static_cast<unsigned __int128>(r) * count) >> 64);
        x = float_of_key(p.keys.first + static_cast<int64_t>(off));
      } else {
        const double u01 = static_cast<double>(rng_u64(p.seed, g) >> 11) * 0x1p-53;
        x = static_cast<float>(p.lo + (p.hi - p.lo) * u01);  // round to nearest float32
        x = std::min(std::max(x, p.x_first), p.x_last);      // clamp into [lo, hi)
      }
      b.x[i] = x;
      b.w[i] = 0.0;
      b.valid[i] = -1;
    }
  }
  for (size_t i = b.n; i < b.n_pad; ++i) b.x[i] = 0.0f, b.valid[i] = 0, b.w[i] = 0.0;
}

std::string sampling_name(const Exp2Config& c) {
  if (c.exhaustive) return "exhaustive";
  return c.sampling == Exp2Sampling::bits ? "bits" : "uniform";
}

std::string exp2_fmt_g(double v) { return fmt::format("{:.3g}", v); }

}  // namespace

// ---- public API

uint64_t exp2_float_count(double lo, double hi) { return key_range(lo, hi).count(); }

double exp2_rounded_index(double v, const std::string& fmt) {
  return rounded_index(v, qformat(out_format(fmt)));
}

Exp2Function exp2_emu_function() {
  return [](int degree, std::span<const float> x, std::span<float> y) { ex2_emu(x, y, degree); };
}

void validate(const Exp2Config& c) {
  if (c.degrees.empty()) throw Error("--degree needs at least one degree", "e.g. --degree 3,4,5");
  for (int d : c.degrees)
    if (d < 0 || d > kExp2MaxDegree)
      throw Error(fmt::format("--degree {} is not a polynomial degree of ex2_emulation", d),
                  "valid: 0..5 (upstream POLY_EX2)");
  if (!std::isfinite(c.lo) || !std::isfinite(c.hi) || !(c.lo < c.hi))
    throw Error(fmt::format("--range {},{} is empty or not finite", c.lo, c.hi),
                "give LO,HI with LO < HI, e.g. --range -20,8");
  if (c.lo < kExp2RangeMin || c.hi > kExp2RangeMax)
    throw Error(
        fmt::format("--range {},{} leaves [{}, {}]", c.lo, c.hi, kExp2RangeMin, kExp2RangeMax),
        "ex2_emulation is garbage by design for x >= 128 and the reference needs x >= -1022");
  if (exp2_float_count(c.lo, c.hi) == 0)
    throw Error(fmt::format("--range {},{} contains no float32 value", c.lo, c.hi), "widen it");
  if (!c.exhaustive) {
    if (c.samples == 0)
      throw Error("--samples must be at least 1", "e.g. --samples 4194304 (the default)");
    if (c.samples > kExp2MaxSamples)
      throw Error(fmt::format("--samples {} is above the limit of {:.0e}", c.samples,
                              static_cast<double>(kExp2MaxSamples)),
                  "more samples only shrink sampling noise: --exhaustive evaluates every float "
                  "in the range once and gives the exact value-weighted limit");
  }
  if (c.out_dtype != "bf16" && c.out_dtype != "fp16")
    throw Error(fmt::format("unknown --out-dtype '{}'", c.out_dtype), "valid: bf16, fp16");
  if (c.threads < 0) throw Error("--threads must be >= 0", "0 = all cores");
  if (!c.coeffs.empty()) {
    if (c.coeffs.size() > kExp2MaxDegree + 1)
      throw Error(fmt::format("{} coefficients given", c.coeffs.size()),
                  "give 1 to 6 (degrees 0 to 5)");
    for (float v : c.coeffs)
      if (!std::isfinite(v))
        throw Error("a coefficient is not finite", "every coefficient must be finite");
    if (c.degrees.size() != 1 || c.degrees[0] != static_cast<int>(c.coeffs.size()) - 1)
      throw Error("--coeffs sets the degree (the number of coefficients - 1)",
                  "leave --degree out");
  }
}

Exp2Result run_exp2(const Exp2Config& cfg, const Exp2Function& fn_in) {
  validate(cfg);
  const std::vector<float> coeffs = cfg.coeffs;
  const Exp2Function fn =
      fn_in            ? fn_in
      : coeffs.empty() ? exp2_emu_function()
                       : Exp2Function([coeffs](int, std::span<const float> x, std::span<float> y) {
                           ex2_emu_poly(x, y, coeffs);
                         });
  InputPlan plan;
  plan.exhaustive = cfg.exhaustive;
  plan.sampling = cfg.sampling;
  plan.seed = cfg.seed;
  plan.lo = cfg.lo;
  plan.hi = cfg.hi;
  plan.keys = key_range(cfg.lo, cfg.hi);
  plan.x_first = float_of_key(plan.keys.first);
  plan.x_last = float_of_key(plan.keys.last);

  Exp2Result res;
  res.float_count = plan.keys.count();
  res.n = cfg.exhaustive ? res.float_count : cfg.samples;
  res.weighted = cfg.exhaustive;
  const size_t nd = cfg.degrees.size();
  const QFormat q32 = qformat(kFP32), qo = qformat(out_format(cfg.out_dtype));
  const bool mp = cfg.reference == Exp2Reference::mp;
  const bool out_bf16 = cfg.out_dtype == "bf16";
  // Note [Fused sampled pass]; `fused_sampling = false` (tests) forces the separate passes.
  [[maybe_unused]] const bool fused = kFusedPassAvailable && cfg.fused_sampling && !fn_in &&
                                      cfg.coeffs.empty() && !plan.exhaustive &&
                                      plan.sampling == Exp2Sampling::uniform && !mp;

  // Chunk results combined in chunk order (util/parallel_merge.h): the same sums for every
  // thread count.
  std::vector<Acc> total(nd);
  uint64_t fallbacks = 0;
  OrderedMerge<std::pair<std::vector<Acc>, uint64_t>> merged([&](auto& chunk_result) {
    for (size_t d = 0; d < nd; ++d) total[d].merge(chunk_result.first[d]);
    fallbacks += chunk_result.second;
  });

  std::optional<Progress> progress;
  if (cfg.progress) progress.emplace(fmt::format("exp2 {}", sampling_name(cfg)), res.n);

  parallel_chunks(
      res.n, kExp2Chunk, cfg.threads,
      [&](uint64_t chunk, uint64_t begin, uint64_t end) {
        thread_local std::unique_ptr<Block> tl_block;
        if (!tl_block) tl_block = std::make_unique<Block>();
        Block& b = *tl_block;
        std::vector<Acc> acc(nd);
        std::vector<size_t> ambiguous;
        uint64_t chunk_fallbacks = 0;
        for (uint64_t s = begin; s < end; s += kBlock) {
          b.first = s;
          b.n = static_cast<size_t>(std::min<uint64_t>(kBlock, end - s));
          b.n_pad = (b.n + 7) & ~size_t{7};
#if FA4SIM_EXP2_AVX2
          if (fused && b.n % 16 == 0) {  // Note [Fused sampled pass]
            fused_uniform_block(plan, b, cfg.degrees, q32, qo, out_bf16, acc, chunk_fallbacks);
            continue;
          }
#endif
          fill_inputs(plan, b);
          if (mp)
            for (size_t i = 0; i < b.n_pad; ++i) b.ref[i] = exp2_mp_round_odd(b.x[i]);
          prepare(b, q32, qo, mp, plan.exhaustive && cfg.fused_sampling,
                  ambiguous);              // Note [Tiny x]
          for (size_t i : ambiguous) {     // re-decide near-midpoint cases exactly
            if (i >= b.n || mp) continue;  // (mp: the reference is already exact)
            const double odd = exp2_mp_round_odd(b.x[i]);
            b.ridx32[i] = static_cast<int32_t>(rounded_index(odd, q32));
            b.ridx_out[i] = static_cast<int32_t>(rounded_index(odd, qo));
            ++chunk_fallbacks;
          }
          for (size_t d = 0; d < nd; ++d) {
            fn(cfg.degrees[d], std::span<const float>(b.x, b.n_pad),
               std::span<float>(b.y, b.n_pad));
            if (plan.exhaustive)
              accumulate<true>(b, qo, out_bf16, acc[d]);
            else
              accumulate<false>(b, qo, out_bf16, acc[d]);
          }
        }
        merged.add(chunk, std::make_pair(std::move(acc), chunk_fallbacks));
      },
      [&](uint64_t done) {
        if (progress) progress->update(done);
      });
  progress.reset();

  res.ref_mp_fallbacks = fallbacks;
  for (size_t d = 0; d < nd; ++d) {
    const Acc& a = total[d];
    Exp2DegreeResult r;
    r.degree = cfg.degrees[d];
    r.plain.n = a.n;
    r.plain.max_rel = a.max_rel;
    r.plain.max_rel_at = a.max_at;
    r.plain.mean_rel = a.sum_rel / a.n;
    r.plain.max_ulp_f32 = a.max_ulp32;
    r.plain.identical = a.identical;
    r.plain.within_1ulp = a.within1;
    r.plain.max_ulp = a.max_ulp;
    if (res.weighted) {
      // Every float of the range has a positive weight, so the maxima are the plain ones.
      r.weighted = r.plain;
      r.weighted.n = a.wn;
      r.weighted.mean_rel = a.wsum_rel / a.wn;
      r.weighted.identical = a.widentical;
      r.weighted.within_1ulp = a.wwithin1;
    }
    res.degrees.push_back(r);
  }
  return res;
}

Report exp2_report(const Exp2Config& cfg, const Exp2Result& r) {
  Report rep;
  rep.command = "exp2";
  rep.threads = cfg.threads > 0 ? cfg.threads : default_threads();
  json degs = json::array();
  for (int d : cfg.degrees) degs.push_back(d);
  rep.params = {{"degree", degs},
                {"range", {cfg.lo, cfg.hi}},
                {"samples", cfg.samples},
                {"sampling", cfg.sampling == Exp2Sampling::bits ? "bits" : "uniform"},
                {"exhaustive", cfg.exhaustive},
                {"out_dtype", cfg.out_dtype},
                {"seed", cfg.seed},
                {"threads", cfg.threads},
                {"reference", cfg.reference == Exp2Reference::mp ? "mp" : "f64"}};
  if (!cfg.coeffs.empty()) {
    json cs = json::array();
    for (float v : cfg.coeffs) cs.push_back(fmt::format("{:a}", v));
    rep.params["coeffs"] = cs;
  }

  auto stats_json = [&](const Exp2Stats& s, bool plain) {
    json j = json::object();
    if (plain)
      j["n"] = static_cast<uint64_t>(s.n);
    else
      j["total_weight"] = s.n;
    j["fp32_max_rel"] = s.max_rel;
    j["fp32_max_rel_at"] = s.max_rel_at;
    j["fp32_mean_rel"] = s.mean_rel;
    j["fp32_max_ulp"] = static_cast<int64_t>(s.max_ulp_f32);
    j["out_dtype"] = cfg.out_dtype;
    const double p_id = s.identical / s.n, p_w1 = s.within_1ulp / s.n;
    j["identical_pct"] = 100.0 * p_id;
    j["within_1ulp_pct"] = 100.0 * p_w1;
    j["max_ulp"] = static_cast<int64_t>(s.max_ulp);
    if (plain && !cfg.exhaustive)  // binomial standard error of the sampled percentages
      j["identical_pct_stderr"] = 100.0 * std::sqrt(p_id * (1 - p_id) / s.n);
    return j;
  };
  json degrees = json::array();
  for (const auto& d : r.degrees) {
    json j = {{"degree", d.degree}};
    j.update(stats_json(d.plain, true));
    if (r.weighted) j["weighted"] = stats_json(d.weighted, false);
    degrees.push_back(j);
  }
  rep.results = {{"function", cfg.coeffs.empty() ? "ex2_emu" : "ex2_emu_poly"},
                 {"reference", cfg.reference == Exp2Reference::mp ? "mp" : "f64"},
                 {"n", r.n},
                 {"float_count", r.float_count},
                 {"ref_mp_fallbacks", r.ref_mp_fallbacks},
                 {"degrees", degrees}};

  const std::string od = cfg.out_dtype;
  auto table = [&](bool weighted) {
    Table t;
    t.title = weighted ? fmt::format(
                             "exp2 value-weighted over [{}, {}) (exact limit of uniform sampling)",
                             cfg.lo, cfg.hi)
                       : fmt::format("exp2 emulation vs 2^x over [{}, {}): {} {} inputs{}", cfg.lo,
                                     cfg.hi, r.n, sampling_name(cfg),
                                     cfg.exhaustive ? "" : fmt::format(", seed {}", cfg.seed));
    t.columns = {"degree",       "FP32 max rel",    "at x",          "FP32 mean rel",
                 "FP32 max ULP", od + " identical", od + " <=1 ULP", od + " max ULP"};
    for (const auto& d : r.degrees) {
      const Exp2Stats& s = weighted ? d.weighted : d.plain;
      t.rows.push_back(
          {std::to_string(d.degree), exp2_fmt_g(s.max_rel), fmt::format("{:.9g}", s.max_rel_at),
           exp2_fmt_g(s.mean_rel), fmt::format("{}", static_cast<int64_t>(s.max_ulp_f32)),
           fmt_percent(100.0 * s.identical / s.n, 3), fmt_percent(100.0 * s.within_1ulp / s.n, 3),
           fmt::format("{}", static_cast<int64_t>(s.max_ulp))});
    }
    return t;
  };
  Table plain = table(false);
  plain.notes.push_back(fmt::format(
      "reference: {} 2^x; {} near-midpoint rounding decisions re-decided in multiprecision",
      cfg.reference == Exp2Reference::mp ? "multiprecision (Boost cpp_bin_float_50)"
                                         : "double (rel. error < 1e-15)",
      r.ref_mp_fallbacks));
  rep.tables.push_back(plain);
  if (r.weighted) rep.tables.push_back(table(true));
  return rep;
}

}  // namespace fa4sim
