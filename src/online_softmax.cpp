// online_softmax.cpp: the row-block simulator around the core steps of online_softmax.h.
#include "fa4sim/online_softmax.h"

#include <algorithm>
#include <cmath>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "fa4sim/exp2_schedule.h"


namespace fa4sim {

const char* block_order_name(BlockOrder o) { return o == BlockOrder::reverse ? "reverse" : "forward"; }

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
}

namespace {

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

// O[r][0..d) = fma(Pc[r][k], V[k][j], O[r][j]) for k = 0..n-1 in key order, every row r of the
// tile: one rounding per product-add. Columns are taken in chunks of 32 so that the V chunk
// (n x 32 floats, 16 KiB for n = 128) stays in L1 while pairs of rows sweep it. The AVX2 path
// computes exactly the same values lane by lane (vfmadd is fma); the order per element is the same.
void accumulate_pv(float* O, size_t ldo, const float* Pc, size_t ldp, int rows, const float* V,
                   size_t ldv, int n, int d) {
  int j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; j + 32 <= d; j += 32) {
    int r = 0;
    for (; r + 2 <= rows; r += 2) {
      float* o0 = O + size_t(r) * ldo + j;
      float* o1 = o0 + ldo;
      const float* p0 = Pc + size_t(r) * ldp;
      const float* p1 = p0 + ldp;
      __m256 a0 = _mm256_loadu_ps(o0), a1 = _mm256_loadu_ps(o0 + 8), a2 = _mm256_loadu_ps(o0 + 16),
             a3 = _mm256_loadu_ps(o0 + 24), b0 = _mm256_loadu_ps(o1), b1 = _mm256_loadu_ps(o1 + 8),
             b2 = _mm256_loadu_ps(o1 + 16), b3 = _mm256_loadu_ps(o1 + 24);
      for (int k = 0; k < n; ++k) {
        const float* v = V + size_t(k) * ldv + j;
        const __m256 v0 = _mm256_loadu_ps(v), v1 = _mm256_loadu_ps(v + 8),
                     v2 = _mm256_loadu_ps(v + 16), v3 = _mm256_loadu_ps(v + 24);
        const __m256 x = _mm256_set1_ps(p0[k]), y = _mm256_set1_ps(p1[k]);
        a0 = _mm256_fmadd_ps(x, v0, a0);
        a1 = _mm256_fmadd_ps(x, v1, a1);
        a2 = _mm256_fmadd_ps(x, v2, a2);
        a3 = _mm256_fmadd_ps(x, v3, a3);
        b0 = _mm256_fmadd_ps(y, v0, b0);
        b1 = _mm256_fmadd_ps(y, v1, b1);
        b2 = _mm256_fmadd_ps(y, v2, b2);
        b3 = _mm256_fmadd_ps(y, v3, b3);
      }
      _mm256_storeu_ps(o0, a0), _mm256_storeu_ps(o0 + 8, a1), _mm256_storeu_ps(o0 + 16, a2),
          _mm256_storeu_ps(o0 + 24, a3);
      _mm256_storeu_ps(o1, b0), _mm256_storeu_ps(o1 + 8, b1), _mm256_storeu_ps(o1 + 16, b2),
          _mm256_storeu_ps(o1 + 24, b3);
    }
    for (; r < rows; ++r) {
      float* o = O + size_t(r) * ldo + j;
      const float* p = Pc + size_t(r) * ldp;
      __m256 a0 = _mm256_loadu_ps(o), a1 = _mm256_loadu_ps(o + 8), a2 = _mm256_loadu_ps(o + 16),
             a3 = _mm256_loadu_ps(o + 24);
      for (int k = 0; k < n; ++k) {  // four independent chains hide the fma latency
        const float* v = V + size_t(k) * ldv + j;
        const __m256 x = _mm256_set1_ps(p[k]);
        a0 = _mm256_fmadd_ps(x, _mm256_loadu_ps(v), a0);
        a1 = _mm256_fmadd_ps(x, _mm256_loadu_ps(v + 8), a1);
        a2 = _mm256_fmadd_ps(x, _mm256_loadu_ps(v + 16), a2);
        a3 = _mm256_fmadd_ps(x, _mm256_loadu_ps(v + 24), a3);
      }
      _mm256_storeu_ps(o, a0), _mm256_storeu_ps(o + 8, a1), _mm256_storeu_ps(o + 16, a2),
          _mm256_storeu_ps(o + 24, a3);
    }
  }
#endif
  for (; j < d; ++j)
    for (int r = 0; r < rows; ++r) {
      const float* p = Pc + size_t(r) * ldp;
      float a = O[size_t(r) * ldo + size_t(j)];
      for (int k = 0; k < n; ++k) a = std::fma(p[k], V[size_t(k) * ldv + size_t(j)], a);
      O[size_t(r) * ldo + size_t(j)] = a;
    }
}

}  // namespace

void RowBlockSim::process_tile(const float* S, size_t lds, const float* V, size_t ldv, int n) {
  if (n < 1) return;
  const bool exact = p_.exp2.mode == Exp2Mode::exact;
  // ---- update_row_max, one row at a time; the warp votes on acc_scale < 1
  std::vector<char> rescale(size_t(rows_), 0);
  for (int r = 0; r < rows_; ++r) {
    const float* s = S + size_t(r) * lds;
    float bm = neg_inf_f32();
    for (int k = 0; k < n; ++k) bm = s[k] > bm ? s[k] : bm;
    const RowUpdate u =
        update_row_max(row_max_[size_t(r)], bm, p_.scale_log2, p_.rescale_threshold, first_, exact);
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
  first_ = false;

  // ---- P, row_sum, P_cast @ V
  std::vector<char> emu_col(size_t(n), 0);
  if (p_.exp2.mode == Exp2Mode::schedule)
    for (int k = 0; k < n; ++k)
      emu_col[size_t(k)] = emulated(k, n, p_.exp2.freq, p_.exp2.res, p_.exp2.start_frg);
  if (counts_only_) {
    // Only saturations are counted: P can reach the threshold only where its argument is at least
    // log2(threshold) - 1 (every exp2 mode here is within a factor 2 of 2^x for x <= 127), so P is
    // computed for those candidates alone.
    const float arg_min = std::log2(sat_threshold_) - 1.0f;
    for (int r = 0; r < rows_; ++r) {
      const float* s = S + size_t(r) * lds;
      const float rm = row_max_[size_t(r)];
      const float bias = p_bias(rm, p_.scale_log2, p_.max_offset);
      uint64_t sat = 0;
      for (int k = 0; k < n; ++k)
        if (p_argument(s[k], p_.scale_log2, bias) >= arg_min)
          sat += p_exp2(s[k], rm, p_, emu_col[size_t(k)] != 0) >= sat_threshold_ ? 1 : 0;
      counts_.saturated += sat;
      counts_.p_count += uint64_t(n);
    }
    return;
  }
  P_.resize(size_t(n));
  Pc_.resize(size_t(rows_) * size_t(n));
  for (int r = 0; r < rows_; ++r) {
    const float* s = S + size_t(r) * lds;
    const float rm = row_max_[size_t(r)];
    float* pc = Pc_.data() + size_t(r) * size_t(n);
    uint64_t sat = 0;
    for (int k = 0; k < n; ++k) {
      const float pk = p_exp2(s[k], rm, p_, emu_col[size_t(k)] != 0);
      P_[size_t(k)] = pk;
      sat += pk >= sat_threshold_ ? 1 : 0;
      pc[k] = quantize(p_.p_format, pk, p_.p_overflow);
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
  if (V != nullptr && d_ > 0)
    accumulate_pv(o_.data(), size_t(d_), Pc_.data(), size_t(n), rows_, V, ldv, n, d_);
}

void RowBlockSim::finalize(float* O, size_t ldo, float* lse) const {
  constexpr float kLn2 = 0.693147180559945309417f;
  for (int r = 0; r < rows_; ++r) {
    const float l = row_sum_[size_t(r)];
    const bool empty = !(l > 0.0f);
    if (O != nullptr) {
      const float inv = empty ? 0.0f : 1.0f / l;
      const float* o = o_.data() + size_t(r) * size_t(d_);
      for (int j = 0; j < d_; ++j) O[size_t(r) * ldo + size_t(j)] = o[j] * inv;
    }
    if (lse != nullptr) {
      if (empty) {
        lse[r] = neg_inf_f32();
      } else {
        const float lg = static_cast<float>(std::log2(static_cast<double>(l)));
        const float t = row_max_safe(row_max_[size_t(r)]) * p_.scale_log2;
        lse[r] = ((t + lg) - p_.max_offset) * kLn2;
      }
    }
  }
}

}  // namespace fa4sim
