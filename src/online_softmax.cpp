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

RowBlockSim::RowBlockSim(const SoftmaxParams& params, int rows, int d)
    : p_(params),
      rows_(std::max(rows, 1)),
      d_(std::max(d, 0)),
      sat_threshold_(saturation_threshold(params.p_format)),
      row_max_(size_t(rows_), neg_inf_f32()),
      row_sum_(size_t(rows_), 0.0f),
      acc_scale_(size_t(rows_), 1.0f),
      o_(size_t(rows_) * size_t(d_), 0.0f) {
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

// o[0..d) = fma(p[k], V[k][j], o[j]) for k = 0..n-1 in order: one rounding per product-add.
// The AVX2 path computes exactly the same values lane by lane (vfmadd is fma).
void accumulate_pv(float* o, const float* p, const float* V, size_t ldv, int n, int d) {
  int j = 0;
#if defined(__AVX2__) && defined(__FMA__)
  for (; j + 64 <= d; j += 64) {
    __m256 a[8];
    for (int t = 0; t < 8; ++t) a[t] = _mm256_loadu_ps(o + j + 8 * t);
    for (int k = 0; k < n; ++k) {
      const __m256 pk = _mm256_set1_ps(p[k]);
      const float* v = V + size_t(k) * ldv + j;
      for (int t = 0; t < 8; ++t) a[t] = _mm256_fmadd_ps(pk, _mm256_loadu_ps(v + 8 * t), a[t]);
    }
    for (int t = 0; t < 8; ++t) _mm256_storeu_ps(o + j + 8 * t, a[t]);
  }
  for (; j + 8 <= d; j += 8) {
    __m256 a = _mm256_loadu_ps(o + j);
    for (int k = 0; k < n; ++k)
      a = _mm256_fmadd_ps(_mm256_set1_ps(p[k]), _mm256_loadu_ps(V + size_t(k) * ldv + j), a);
    _mm256_storeu_ps(o + j, a);
  }
#endif
  for (; j < d; ++j) {
    float a = o[j];
    for (int k = 0; k < n; ++k) a = std::fma(p[k], V[size_t(k) * ldv + j], a);
    o[j] = a;
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
  std::vector<float> P(static_cast<size_t>(n)), Pc(static_cast<size_t>(n));
  for (int r = 0; r < rows_; ++r) {
    const float* s = S + size_t(r) * lds;
    const float rm = row_max_[size_t(r)];
    uint64_t sat = 0;
    for (int k = 0; k < n; ++k) {
      const float pk = p_exp2(s[k], rm, p_, emu_col[size_t(k)] != 0);
      P[size_t(k)] = pk;
      sat += pk >= sat_threshold_ ? 1 : 0;
      Pc[size_t(k)] = quantize(p_.p_format, pk, p_.p_overflow);
    }
    counts_.saturated += sat;
    counts_.p_count += uint64_t(n);
    const float acc = acc_scale_[size_t(r)];
    row_sum_[size_t(r)] = row_sum_[size_t(r)] * acc + tile_sum(P.data(), n);
    if (V != nullptr && d_ > 0) {
      float* o = o_.data() + size_t(r) * size_t(d_);
      // The correction warp multiplies every row of a voting warp by its scale; a row whose
      // scale is 1 is multiplied by 1 (exact), so only rows with acc_scale != 1 change.
      if (acc != 1.0f)
        for (int j = 0; j < d_; ++j) o[j] *= acc;
      accumulate_pv(o, Pc.data(), V, ldv, n, d_);
    }
  }
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
