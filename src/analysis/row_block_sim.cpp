// row_block_sim.cpp: the row-block simulator around the core steps of core/online_softmax.h
// (see row_block_sim.h).
#include "fa4sim/analysis/row_block_sim.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <span>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "../core/fma_panel.h"
#include "fa4sim/core/constants.h"
#include "fa4sim/core/exp2_schedule.h"
#include "fa4sim/ref/exp2_ref.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

float saturation_threshold(const Format& f) {
  // Smallest positive float32 whose IEEE-overflow encoding is not finite: binary search over the
  // positive float32 bit patterns (their order is the order of the values).
  auto clips = [&](uint32_t bits) {
    const float y = decode(f, encode(f, f32_from_bits(bits), Overflow::ieee));
    return !std::isfinite(y);
  };
  uint32_t lo = 0, hi = 0x7F800000u;  // clips(hi) (inf); !clips(lo) (0)
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    (clips(mid) ? hi : lo) = mid;
  }
  return f32_from_bits(hi);
}

void quantize_p(const Format& f, Overflow ov, const float* P, float* out, int n) {
  int k = 0;
#if defined(__AVX2__) && defined(__FMA__)
  const int sub_exp = f.emin - f.man_bits + 23;  // 2^sub_exp: the subnormal rounding constant
  if (ov == Overflow::satfinite && f.total_bits < 32 && f.man_bits >= 1 && f.man_bits <= 22 &&
      f.emin >= -126 && sub_exp >= -126 && sub_exp <= 127) {
    const int sh = 23 - f.man_bits;
    const __m256i half_m1 = _mm256_set1_epi32(int((1u << (sh - 1)) - 1u)),
                  one = _mm256_set1_epi32(1), keep = _mm256_set1_epi32(int(~((1u << sh) - 1u))),
                  inf_bits = _mm256_set1_epi32(0x7F800000);
    const __m256 c = _mm256_set1_ps(f32_from_bits(uint32_t(sub_exp + 127) << 23)),
                 min_normal = _mm256_set1_ps(float(f.min_normal)),
                 max_finite = _mm256_set1_ps(float(f.max_finite));
    for (; k + 8 <= n; k += 8) {
      const __m256 x = _mm256_loadu_ps(P + k);
      const __m256i b = _mm256_castps_si256(x);
      // fast lanes: sign clear and not NaN, i.e. bits (as signed) in [0, 0x7F800000]
      const int slow = _mm256_movemask_ps(_mm256_castsi256_ps(
          _mm256_or_si256(_mm256_cmpgt_epi32(b, inf_bits), b)));  // NaN, or the sign bit set
      const __m256i rn =
          _mm256_and_si256(_mm256_add_epi32(_mm256_add_epi32(b, half_m1),
                                            _mm256_and_si256(_mm256_srli_epi32(b, sh), one)),
                           keep);
      const __m256 sub = _mm256_sub_ps(_mm256_add_ps(x, c), c);
      __m256 y =
          _mm256_blendv_ps(_mm256_castsi256_ps(rn), sub, _mm256_cmp_ps(x, min_normal, _CMP_LT_OQ));
      y = _mm256_min_ps(y, max_finite);  // satfinite (y is never NaN here)
      _mm256_storeu_ps(out + k, y);
      if (slow)
        for (int l = 0; l < 8; ++l)
          if ((slow >> l) & 1) out[k + l] = quantize(f, P[k + l], ov);
    }
  }
#endif
  if (k < n)
    quantize_array(f, std::span<const float>(P + k, size_t(n - k)),
                   std::span<float>(out + k, size_t(n - k)), ov);
}

RescaleCounts& RescaleCounts::operator+=(const RescaleCounts& o) {
  tiles += o.tiles;
  row_decisions += o.row_decisions;
  row_rescales += o.row_rescales;
  warp_decisions += o.warp_decisions;
  warp_rescales += o.warp_rescales;
  p_count += o.p_count;
  saturated += o.saturated;
  return *this;
}

RowBlockSim::RowBlockSim(const SoftmaxParams& params, int rows, int d, bool counts_only)
    : p_(params),
      rows_(std::max(rows, 1)),
      d_(std::max(d, 0)),
      sat_threshold_(saturation_threshold(params.p_format)),
      row_max_(size_t(rows_), neg_inf_f32()),
      row_sum_(size_t(rows_), 0.0f),
      acc_scale_(size_t(rows_), 1.0f),
      o_(size_t(rows_) * size_t(d_), 0.0f) {
  counts_only_ = counts_only;
  if (p_.warp_rows < 1) p_.warp_rows = 1;
  // The MUFU's hardware models: loaded once per process, here and not by the fast modes.
  if ((p_.exp2.hardware || p_.exp2.mode == Exp2Mode::ex2_approx) && !p_.mufu.loaded())
    p_.mufu = mufu_hardware();
}

namespace {
// A tile the kernel processes with a mask function (Exp2Choice::masked_tiles_mufu): the row's
// first tile, or one that holds a masked (-inf) score in any of its rows.
bool masked_tile(const float* S, size_t lds, int rows, int n, bool first) {
  if (first) return true;
  for (int r = 0; r < rows; ++r)
    for (int k = 0; k < n; ++k)
      if (S[size_t(r) * lds + size_t(k)] == -std::numeric_limits<float>::infinity()) return true;
  return false;
}

// Sum of P over one tile: 8 interleaved float32 partial sums (lane k % 8), combined pairwise
// ((0+4)+(2+6)) + ((1+5)+(3+7)). A fixed order, independent of threads (simulator choice: the
// kernel's own reduction tree is not modelled).
float tile_sum(const float* p, int n) {
  float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  int k = 0;
  for (; k + 8 <= n; k += 8)
    for (int l = 0; l < 8; ++l) acc[l] += p[k + l];
  for (int l = 0; k < n; ++k, ++l) acc[l] += p[k];
  for (int l = 0; l < 4; ++l) acc[l] += acc[l + 4];
  acc[0] += acc[2];
  acc[1] += acc[3];
  return acc[0] + acc[1];
}

#if defined(__AVX2__) && defined(__FMA__)
void accumulate_pv_avx2(float* O, size_t ldo, const float* Pc, size_t ldp, int rows, const float* V,
                        size_t ldv, int n, int d);
#endif

// O[r][0..d) = fma(Pc[r][k], V[k][j], O[r][j]) for k = 0..n-1 in key order, every row r of the
// tile: one rounding per product-add. Columns are taken in chunks of 16 so that the V chunk
// (128 keys x 16 floats, 8 KiB) stays in L1 while groups of 6 rows sweep it. The AVX2 path
// computes exactly the same values lane by lane (vfmadd is fma); the order per element is the same.
void accumulate_pv(float* O, size_t ldo, const float* Pc, size_t ldp, int rows, const float* V,
                   size_t ldv, int n, int d) {
  int j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  // Keys in blocks of 128 (a tile of many keys, as in the one-shot experiment, would otherwise
  // stream all of V once per row pair); each element still takes its keys in order, and O is
  // float32 between blocks as within them, so the blocking changes no value.
  constexpr int kKeyBlock = 128;
  const int d16 = d - d % 16;
  for (int kb = 0; kb < n; kb += kKeyBlock) {
    const int kn = std::min(kKeyBlock, n - kb);
    accumulate_pv_avx2(O, ldo, Pc + kb, ldp, rows, V + size_t(kb) * ldv, ldv, kn, d16);
  }
  j = d16;
#endif
  for (; j < d; ++j)
    for (int r = 0; r < rows; ++r) {
      const float* p = Pc + size_t(r) * ldp;
      float a = O[size_t(r) * ldo + size_t(j)];
      for (int k = 0; k < n; ++k) a = std::fma(p[k], V[size_t(k) * ldv + size_t(j)], a);
      O[size_t(r) * ldo + size_t(j)] = a;
    }
}

#if defined(__AVX2__) && defined(__FMA__)
// The columns [0, d) (d a multiple of 16) for keys [0, n) of accumulate_pv: O[r][j] =
// fma(Pc[r][k], V[k][j], O[r][j]) for k = 0..n-1 in order, lane by lane as the scalar fma.
// Each 16-column chunk of the V block is first copied to a contiguous n x 16 panel: with V's row
// stride (512 B at d = 128) the chunk's 128 cache lines would fall into 8 of L1's 64 sets and evict
// each other while the row groups sweep them.
void accumulate_pv_avx2(float* O, size_t ldo, const float* Pc, size_t ldp, int rows, const float* V,
                        size_t ldv, int n, int d) {
  thread_local std::vector<float> panel;
  panel.resize(size_t(n) * 16);
  for (int j = 0; j + 16 <= d; j += 16) {
    for (int k = 0; k < n; ++k) {
      const float* v = V + size_t(k) * ldv + j;
      _mm256_storeu_ps(panel.data() + size_t(k) * 16, _mm256_loadu_ps(v));
      _mm256_storeu_ps(panel.data() + size_t(k) * 16 + 8, _mm256_loadu_ps(v + 8));
    }
    for (int r = 0; r < rows; r += 6)
      simd::fma_panel_rows(std::min(6, rows - r), O + size_t(r) * ldo + j, ldo,
                           Pc + size_t(r) * ldp, ldp, panel.data(), 16, n);
  }
}
#endif

// max over s[0..n) as the scalar `bm = s[k] > bm ? s[k] : bm` (scores are never NaN). Only the sign
// of a zero maximum may differ, and every later step treats -0 and +0 alike.
float block_max(const float* s, int n) {
  float bm = neg_inf_f32();
  int k = 0;
#if defined(__AVX2__) && defined(__FMA__)
  if (n >= 16) {
    __m256 a = _mm256_set1_ps(bm), b = a;
    for (; k + 16 <= n; k += 16) {
      a = _mm256_max_ps(_mm256_loadu_ps(s + k), a);
      b = _mm256_max_ps(_mm256_loadu_ps(s + k + 8), b);
    }
    alignas(32) float m[8];
    _mm256_store_ps(m, _mm256_max_ps(a, b));
    for (float x : m) bm = x > bm ? x : bm;
  }
#endif
  for (; k < n; ++k) bm = s[k] > bm ? s[k] : bm;
  return bm;
}

#if defined(__AVX2__) && defined(__FMA__)
// 2^x for 4 doubles by exp2_ref's algorithm (exp2_ref.h: n = floor(x + 0.5), degree-13 Taylor of
// 2^t at t = x - n with explicit FMAs, times 2^n): the same value as exp2_ref(x) lane by lane,
// relative error < kExp2RefMaxRelErr = 1e-15 (test_exp2_ref). Valid for x in [-1022, 1023].
inline __m256d exp2_ref_pd(__m256d x) {
  const __m256d n = _mm256_round_pd(_mm256_add_pd(x, _mm256_set1_pd(0.5)),
                                    _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
  const __m256d t = _mm256_sub_pd(x, n);
  __m256d p = _mm256_set1_pd(kExp2RefTaylor[13]);
  for (int k = 12; k >= 0; --k) p = _mm256_fmadd_pd(p, t, _mm256_set1_pd(kExp2RefTaylor[k]));
  const __m256i e = _mm256_slli_epi64(
      _mm256_add_epi64(_mm256_cvtepi32_epi64(_mm256_cvtpd_epi32(n)), _mm256_set1_epi64x(1023)), 52);
  return _mm256_mul_pd(p, _mm256_castsi256_pd(e));
}

// float(std::exp2(x)) for 4 doubles, bit for bit. Where 2^x is a normal float32 (x in
// (-125.5, 127.5)), exp2_ref_pd's value is within 1e-15 relative of 2^x and libm's exp2 within
// 1 ulp (2.2e-16), so the two lie within 12 double ulps of each other; unless exp2_ref_pd's value
// is within kNear ulps of a float32 rounding midpoint, both round to the same float32. The other
// lanes (out of range, -inf, near a midpoint: about 1 in 4 million) take the scalar libm path.
inline void exp2_to_f32x4(__m256d x, float* out) {
  constexpr int64_t kNear = 64, kMid = int64_t(1) << 28;
  const __m256d y = exp2_ref_pd(x);
  const __m256d in_range = _mm256_and_pd(_mm256_cmp_pd(x, _mm256_set1_pd(-125.5), _CMP_GT_OQ),
                                         _mm256_cmp_pd(x, _mm256_set1_pd(127.5), _CMP_LT_OQ));
  // low 29 bits (those float32 drops) minus (midpoint - kNear): near a midpoint iff in [0, 2 kNear)
  const __m256i t = _mm256_sub_epi64(
      _mm256_and_si256(_mm256_castpd_si256(y), _mm256_set1_epi64x((int64_t(1) << 29) - 1)),
      _mm256_set1_epi64x(kMid - kNear));
  const __m256i near = _mm256_and_si256(_mm256_cmpgt_epi64(t, _mm256_set1_epi64x(-1)),
                                        _mm256_cmpgt_epi64(_mm256_set1_epi64x(2 * kNear), t));
  const int ok = _mm256_movemask_pd(_mm256_andnot_pd(_mm256_castsi256_pd(near), in_range));
  _mm_storeu_ps(out, _mm256_cvtpd_ps(y));
  if (ok != 0xF) {
    alignas(32) double xs[4];
    _mm256_store_pd(xs, x);
    for (int l = 0; l < 4; ++l)
      if (!((ok >> l) & 1)) out[l] = static_cast<float>(std::exp2(xs[l]));
  }
}
#endif

// P[k] = p_exp2(s[k], row_max, p, emulated(k)) for k in [0, n): the same values, vectorised for
// the mufu and exact modes.
void p_row(const float* s, int n, float row_max, const SoftmaxParams& p, const char* emu_col,
           float* P) {
  int k = 0;
#if defined(__AVX2__) && defined(__FMA__)
  if (p.exp2.mode == Exp2Mode::rounded_fp32) {
    const __m256 sc = _mm256_set1_ps(p.scale_log2),
                 bias = _mm256_set1_ps(p_bias(row_max, p.scale_log2, p.max_offset));
    for (; k + 8 <= n; k += 8) {
      const __m256 x = _mm256_fmadd_ps(_mm256_loadu_ps(s + k), sc, bias);  // p_argument
      exp2_to_f32x4(_mm256_cvtps_pd(_mm256_castps256_ps128(x)), P + k);
      exp2_to_f32x4(_mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)), P + k + 4);
    }
  } else if (p.exp2.mode == Exp2Mode::exact) {
    const __m256d sc = _mm256_set1_pd(double(p.scale_log2)),
                  mo = _mm256_set1_pd(double(p.max_offset)),
                  c = _mm256_set1_pd(static_cast<double>(row_max_safe(row_max)) * p.scale_log2);
    for (; k + 4 <= n; k += 4) {
      const __m256d x = _mm256_sub_pd(
          _mm256_add_pd(_mm256_mul_pd(_mm256_cvtps_pd(_mm_loadu_ps(s + k)), sc), mo), c);
      exp2_to_f32x4(x, P + k);
    }
  }
#endif
  // Note [Table prefetch]: the MUFU ex2 model reads a 32 MiB table at a place set by the
  // argument's fraction bits, in effect at random: a cache (and TLB) miss per element, which took
  // three quarters of `fa4sim attention`'s time with the hardware tables. The entries this row will
  // read are asked for first, all at once, so the misses overlap instead of coming one after the
  // other. A prefetch changes no value: P is computed below exactly as without it.
  const bool table = (p.exp2.mode == Exp2Mode::ex2_approx ||
                      (p.exp2.mode == Exp2Mode::schedule && p.mufu.loaded())) &&
                     p.mufu.ex2.pos != nullptr && p.mufu.ex2.neg != nullptr;
  if (table && k < n) {
    const float bias = p_bias(row_max, p.scale_log2, p.max_offset);
    for (int q = k; q < n; ++q)
      if (p.exp2.mode != Exp2Mode::schedule || emu_col[q] == 0)
        prefetch_ex2_entry(p_argument(s[q], p.scale_log2, bias), p.mufu.ex2);
  }
  for (; k < n; ++k) P[k] = p_exp2(s[k], row_max, p, emu_col[k] != 0);
}
}  // namespace

void RowBlockSim::process_tile(const float* S, size_t lds, const float* V, size_t ldv, int n) {
  if (n < 1) return;
  const bool exact = p_.exp2.mode == Exp2Mode::exact;
  // ---- update_row_max, one row at a time; the warp votes on acc_scale < 1
  std::vector<char> rescale(size_t(rows_), 0);
  std::vector<float> tile_max(static_cast<size_t>(rows_));
  for (int r = 0; r < rows_; ++r) {
    const float bm = block_max(S + size_t(r) * lds, n);
    tile_max[size_t(r)] = bm;
    const RowUpdate u = update_row_max(row_max_[size_t(r)], bm, p_.scale_log2, p_.rescale_threshold,
                                       first_, exact, p_.mufu);
    row_max_[size_t(r)] = u.row_max;
    acc_scale_[size_t(r)] = u.acc_scale;
    rescale[size_t(r)] = u.rescale;
  }
  counts_.tiles += 1;
  if (!first_) {
    counts_.row_decisions += uint64_t(rows_);
    for (int w0 = 0; w0 < rows_; w0 += p_.warp_rows) {
      const int w1 = std::min(rows_, w0 + p_.warp_rows);
      bool any = false;
      for (int r = w0; r < w1; ++r) {
        counts_.row_rescales += uint64_t(rescale[size_t(r)]);
        any = any || rescale[size_t(r)];
      }
      counts_.warp_decisions += 1;
      counts_.warp_rescales += any ? 1 : 0;
    }
  }
  const bool first_tile = first_;
  first_ = false;

  // ---- P, row_sum, P_cast @ V
  std::vector<char> emu_col(size_t(n), 0);
  if (p_.exp2.mode == Exp2Mode::schedule &&
      !(p_.exp2.masked_tiles_mufu && masked_tile(S, lds, rows_, n, first_tile)))
    for (int k = 0; k < n; ++k)
      emu_col[size_t(k)] = p_.exp2.tile_mask != 0
                               ? char((p_.exp2.tile_mask >> ((k / 8) % 32)) & 1u)
                               : char(emulated(k, n, p_.exp2.freq, p_.exp2.res, p_.exp2.start_frg));
  SoftmaxParams pr = p_;  // this row's parameters (its own max_offset in the one-shot experiment)
  if (counts_only_) {
    // Only saturations are counted: P can reach the threshold only where its argument is at least
    // log2(threshold) - 1 (every exp2 mode here is within a factor 2 of 2^x for x <= 127), so P is
    // computed for those candidates alone. The argument fma(s, scale_log2, bias) is monotone in s
    // (scale_log2 > 0), so a row whose tile maximum is no candidate has none.
    const float arg_min = std::log2(sat_threshold_) - 1.0f;
    for (int r = 0; r < rows_; ++r) {
      const float* s = S + size_t(r) * lds;
      const float rm = row_max_[size_t(r)];
      if (!row_offset_.empty()) pr.max_offset = row_offset_[size_t(r)];
      const float bias = p_bias(rm, pr.scale_log2, pr.max_offset);
      counts_.p_count += uint64_t(n);
      if (!(p_argument(tile_max[size_t(r)], pr.scale_log2, bias) >= arg_min)) continue;
      uint64_t sat = 0;
      for (int k = 0; k < n; ++k)
        if (p_argument(s[k], pr.scale_log2, bias) >= arg_min)
          sat += p_exp2(s[k], rm, pr, emu_col[size_t(k)] != 0) >= sat_threshold_ ? 1 : 0;
      counts_.saturated += sat;
    }
    return;
  }
  P_.resize(size_t(n));
  Pc_.resize(size_t(rows_) * size_t(n));
  for (int r = 0; r < rows_; ++r) {
    const float* s = S + size_t(r) * lds;
    const float rm = row_max_[size_t(r)];
    float* pc = Pc_.data() + size_t(r) * size_t(n);
    if (!row_offset_.empty()) pr.max_offset = row_offset_[size_t(r)];
    p_row(s, n, rm, pr, emu_col.data(), P_.data());
    uint64_t sat = 0;
    if (has_p_block_) {
      sat = block_round(p_block_, P_.data(), size_t(n), pc);
    } else {
      for (int k = 0; k < n; ++k) sat += P_[size_t(k)] >= sat_threshold_ ? 1 : 0;
      // decode(encode(P)) element by element
      quantize_p(p_.p_format, p_.p_overflow, P_.data(), pc, n);
    }
    counts_.saturated += sat;
    counts_.p_count += uint64_t(n);
    const float acc = acc_scale_[size_t(r)];
    row_sum_[size_t(r)] = row_sum_[size_t(r)] * acc + tile_sum(P_.data(), n);
    // The correction warp multiplies every row of a voting warp by its scale; a row whose scale
    // is 1 is multiplied by 1 (exact), so only rows with acc_scale != 1 change.
    if (V != nullptr && d_ > 0 && acc != 1.0f) {
      float* o = o_.data() + size_t(r) * size_t(d_);
      for (int j = 0; j < d_; ++j) o[j] *= acc;
    }
  }
  if (V != nullptr && d_ > 0) {
    const double t0 = pv_timer_ != nullptr ? thread_cpu_seconds() : 0.0;
    accumulate_pv(o_.data(), size_t(d_), Pc_.data(), size_t(n), rows_, V, ldv, n, d_);
    if (pv_timer_ != nullptr) *pv_timer_ += thread_cpu_seconds() - t0;
  }
}

void RowBlockSim::finalize(float* O, size_t ldo, float* lse) const {
  constexpr float kLn2f = static_cast<float>(kLn2);
  static_assert(kLn2f == 0.693147180559945309417f, "ln 2 rounds once to float32");
  for (int r = 0; r < rows_; ++r) {
    const float l = row_sum_[size_t(r)];
    const bool empty = !(l > 0.0f);
    if (O != nullptr) {
      // upstream: O * rcp_approx(row_sum) (softmax.py Softmax.finalize); the fast modes 1.0f / l
      const float inv = empty ? 0.0f : mufu_rcp(l, p_.mufu);
      const float* o = o_.data() + size_t(r) * size_t(d_);
      for (int j = 0; j < d_; ++j) O[size_t(r) * ldo + size_t(j)] = o[j] * inv;
    }
    if (lse != nullptr) {
      if (empty) {
        lse[r] = neg_inf_f32();
      } else {
        const float lg = mufu_log2(l, p_.mufu);  // upstream: lg2.approx (log2 with fastmath)
        const float t = row_max_safe(row_max_[size_t(r)]) * p_.scale_log2;
        const float mo = row_offset_.empty() ? p_.max_offset : row_offset_[size_t(r)];
        lse[r] = ((t + lg) - mo) * kLn2f;
      }
    }
  }
}

}  // namespace fa4sim
