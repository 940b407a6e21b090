// Property tests of the online-softmax simulator (include/fa4sim/analysis/row_block_sim.h, over
// the per-row steps of include/fa4sim/core/online_softmax.h), most of them over whole score
// matrices through simulate_rows (include/fa4sim/analysis/row_sim.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "fa4sim/util/error.h"
#include "fa4sim/core/exp2_schedule.h"
#include "fa4sim/util/numpy_rng.h"
#include "fa4sim/analysis/row_block_sim.h"
#include "fa4sim/analysis/row_sim.h"
#include "normal_matrix.h"

namespace fa4sim {
namespace {

using test::normal_matrix;

// Two-pass softmax in the simulator's precision: global max, P = exp2 like the kernel's mufu path,
// the same cast, row_sum from float32 P with the same 8-lane order, P_cast @ V with fma in key
// order. Used for the tau = 0 property.
void two_pass(const SoftmaxParams& p, const float* S, int rows, int keys, const float* V, int d,
              std::vector<float>& O) {
  O.assign(size_t(rows) * size_t(d), 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* s = S + size_t(r) * size_t(keys);
    float m = neg_inf_f32();
    for (int k = 0; k < keys; ++k) m = std::max(m, s[k]);
    double l = 0;
    std::vector<double> o(size_t(d), 0.0);
    for (int k = 0; k < keys; ++k) {
      const float pk = p_exp2(s[k], m, p, false);
      l += pk;
      const float pc = quantize(p.p_format, pk, Overflow::satfinite);
      for (int j = 0; j < d; ++j) o[size_t(j)] += double(pc) * V[size_t(k) * size_t(d) + size_t(j)];
    }
    for (int j = 0; j < d; ++j) O[size_t(r) * size_t(d) + size_t(j)] = float(o[size_t(j)] / l);
  }
}

// tau = 0 equals a two-pass softmax in the same precision, up to stated rounding.
// Bound: fp32 P (no cast): every rescale multiplies O and row_sum by a correctly rounded
// 2^(m_old - m_new) (0.5 ulp) and the P of the online pass are 2^(s - m_i) instead of 2^(s - m):
// the exact ratio is a power of two only for integer max steps, so each key differs by <= 1 ulp
// relative. With B = 64 blocks of float32 sums the relative deviation per output element, scaled
// by sum_k P_k |V_k| / row_sum (the condition of the weighted sum), stays below (B + 8) * 2^-23.
// bf16 P: both P_cast are roundings of the same value up to the float32 terms above, each within
// 2^-9 relative (half a bf16 ulp), so they differ by at most 2^-8 relative: bound 2^-8 + (B+8)2^-23.
TEST(OnlineSoftmax, TauZeroEqualsTwoPassUpToRounding) {
  const int rows = 32, keys = 8192, d = 16, block = 128;
  const auto S = normal_matrix(rows, keys, 3.0, 11, 24.0);  // rising: many rescales
  const auto V = normal_matrix(keys, d, 1.0, 12);
  for (const Format* f : {&kFP32, &kBF16}) {
    SoftmaxParams p;
    p.p_format = *f;
    p.rescale_threshold = 0.0f;
    const RowBlockRunResult on =
        simulate_rows(p, S.data(), rows, keys, block, BlockOrder::forward, V.data(), d, 2);
    EXPECT_GT(on.counts.row_rescales, 0u);
    std::vector<float> O2;
    two_pass(p, S.data(), rows, keys, V.data(), d, O2);
    const double rel_bound = (f == &kFP32 ? 0.0 : 0x1p-8) + (64 + 8) * 0x1p-23;
    double worst = 0;
    for (int r = 0; r < rows; ++r) {
      const float* s = S.data() + size_t(r) * size_t(keys);
      const float m = *std::max_element(s, s + keys);
      double l = 0;
      std::vector<double> cond(size_t(d), 0.0);
      for (int k = 0; k < keys; ++k) {
        const double pk = std::exp2(double(s[k]) - m);
        l += pk;
        for (int j = 0; j < d; ++j)
          cond[size_t(j)] += pk * std::fabs(V[size_t(k) * size_t(d) + size_t(j)]);
      }
      for (int j = 0; j < d; ++j) {
        const size_t i = size_t(r) * size_t(d) + size_t(j);
        const double scale = cond[size_t(j)] / l;
        const double err = std::fabs(double(on.O[i]) - O2[i]) / scale;
        worst = std::max(worst, err);
        ASSERT_LE(err, rel_bound) << f->name << " row " << r << " col " << j;
      }
    }
    std::printf("  %s: max |online - two-pass| / (sum P|V| / l) = %.3g (bound %.3g)\n", f->name,
                worst, rel_bound);
  }
}

// The running max never lags the true running max by more than tau (log2 units), at every step.
TEST(OnlineSoftmax, RunningMaxLagsByAtMostTau) {
  const int rows = 64, keys = 4096, block = 128;
  for (double rise : {0.0, 24.0, 96.0}) {
    const auto S = normal_matrix(rows, keys, 6.0, 21, rise);
    for (float tau : {0.0f, 0.75f, 4.0f, 8.0f}) {
      for (float scale_log2 : {1.0f, 0.1275174f}) {
        SoftmaxParams p;
        p.rescale_threshold = tau;
        p.scale_log2 = scale_log2;
        RowBlockSim sim(p, rows, 0);
        std::vector<float> true_max(size_t(rows), neg_inf_f32());
        float worst = 0;
        for (int b = 0; b < keys / block; ++b) {
          sim.process_tile(S.data() + size_t(b) * size_t(block), size_t(keys), nullptr, 0, block);
          for (int r = 0; r < rows; ++r) {
            const float* s = S.data() + size_t(r) * size_t(keys) + size_t(b) * size_t(block);
            for (int k = 0; k < block; ++k)
              true_max[size_t(r)] = std::max(true_max[size_t(r)], s[k]);
            const float lag = (true_max[size_t(r)] - sim.row_max()[size_t(r)]) * scale_log2;
            worst = std::max(worst, lag);
            ASSERT_LE(lag, tau) << "rise " << rise << " tau " << tau << " row " << r << " block "
                                << b;
            ASSERT_LE(sim.row_max()[size_t(r)], true_max[size_t(r)]);
          }
        }
        if (tau == 0.0f) {
          EXPECT_EQ(worst, 0.0f);
        }
        if (tau > 0.0f && rise == 96.0) {
          EXPECT_GT(worst, 0.0f);  // the lag is real
        }
      }
    }
  }
}

// Shifting every score by a constant leaves O unchanged. With scores on a 2^-12 grid and an
// integer shift every float32 step (s + c, the max, s - row_max, the exp2 argument) is exact, so
// O, row_sum and the counts are bit-identical; LSE moves by exactly c * ln 2 (up to rounding).
TEST(OnlineSoftmax, ShiftInvariance) {
  const int rows = 64, keys = 2048, d = 32, block = 128;
  auto S = normal_matrix(rows, keys, 4.0, 31, 24.0);
  for (auto& x : S) x = std::round(x * 4096.0f) / 4096.0f;
  const auto V = normal_matrix(keys, d, 1.0, 32);
  for (float tau : {0.0f, 8.0f}) {
    for (Exp2Mode mode : {Exp2Mode::rounded_fp32, Exp2Mode::exact, Exp2Mode::emu}) {
      SoftmaxParams p;
      p.rescale_threshold = tau;
      p.exp2.mode = mode;
      const auto a =
          simulate_rows(p, S.data(), rows, keys, block, BlockOrder::forward, V.data(), d, 1);
      for (float c : {-37.0f, 5.0f, 100.0f}) {
        auto S2 = S;
        for (auto& x : S2) x += c;
        const auto b =
            simulate_rows(p, S2.data(), rows, keys, block, BlockOrder::forward, V.data(), d, 1);
        ASSERT_EQ(a.O, b.O) << "tau " << tau << " shift " << c;
        EXPECT_EQ(a.counts.row_rescales, b.counts.row_rescales);
        EXPECT_EQ(a.counts.warp_rescales, b.counts.warp_rescales);
        for (int r = 0; r < rows; ++r)
          EXPECT_NEAR(b.lse[size_t(r)] - a.lse[size_t(r)], c * 0.69314718f, 1e-4f);
      }
    }
  }
}

// Rows and warps counts against a brute-force count written from the definition (float64 maxima,
// stale-max rule), on small cases including a partial warp and a ragged last block.
TEST(OnlineSoftmax, CountsMatchBruteForce) {
  struct Case {
    int rows, keys, block, warp_rows;
    double sigma, rise;
    float tau;
    BlockOrder order;
  };
  const Case cases[] = {
      {8, 64, 8, 4, 1.5, 0, 0.0f, BlockOrder::forward},
      {8, 64, 8, 4, 6.0, 24, 2.0f, BlockOrder::forward},
      {13, 100, 16, 4, 3.0, 24, 0.0f, BlockOrder::forward},
      {13, 100, 16, 4, 3.0, 96, 8.0f, BlockOrder::reverse},
      {40, 512, 32, 32, 6.0, 96, 8.0f, BlockOrder::forward},
      {7, 50, 7, 3, 2.0, 10, 1.0f, BlockOrder::reverse},
  };
  int ci = 0;
  for (const Case& c : cases) {
    const auto S = normal_matrix(c.rows, c.keys, c.sigma, uint32_t(100 + ci++), c.rise);
    SoftmaxParams p;
    p.rescale_threshold = c.tau;
    p.warp_rows = c.warp_rows;
    const auto res = simulate_rows(p, S.data(), c.rows, c.keys, c.block, c.order, nullptr, 0, 2);
    const int nb = (c.keys + c.block - 1) / c.block;
    uint64_t row_resc = 0, warp_resc = 0;
    std::vector<std::vector<bool>> resc(size_t(c.rows), std::vector<bool>(size_t(nb), false));
    for (int r = 0; r < c.rows; ++r) {
      double m = -INFINITY;
      for (int i = 0; i < nb; ++i) {
        const int b = c.order == BlockOrder::forward ? i : nb - 1 - i;
        double bm = -INFINITY;
        for (int k = b * c.block; k < std::min(c.keys, (b + 1) * c.block); ++k)
          bm = std::max(bm, double(S[size_t(r) * size_t(c.keys) + size_t(k)]));
        if (i == 0) {
          m = bm;
          continue;
        }
        if (bm > m && (c.tau == 0 || bm - m > c.tau)) {
          resc[size_t(r)][size_t(i)] = true;
          ++row_resc;
          m = bm;
        }
      }
    }
    const int nw = (c.rows + c.warp_rows - 1) / c.warp_rows;
    for (int w = 0; w < nw; ++w)
      for (int i = 1; i < nb; ++i) {
        bool any = false;
        for (int r = w * c.warp_rows; r < std::min(c.rows, (w + 1) * c.warp_rows); ++r)
          any = any || resc[size_t(r)][size_t(i)];
        warp_resc += any;
      }
    EXPECT_EQ(res.counts.row_rescales, row_resc) << "case " << ci;
    EXPECT_EQ(res.counts.warp_rescales, warp_resc) << "case " << ci;
    EXPECT_EQ(res.counts.row_decisions, uint64_t(c.rows) * uint64_t(nb - 1));
    EXPECT_EQ(res.counts.warp_decisions, uint64_t(nw) * uint64_t(nb - 1));
  }
}

// update_row_max: the kernel's rule on hand-worked values.
TEST(OnlineSoftmax, UpdateRowMaxRule) {
  // First tile: take the block max, no rescale.
  RowUpdate u = update_row_max(neg_inf_f32(), 3.0f, 1.0f, 8.0f, true, false);
  EXPECT_EQ(u.row_max, 3.0f);
  EXPECT_EQ(u.acc_scale, 1.0f);
  // Growth 8 with tau 8: a = -8 >= -8 keeps the stale max.
  u = update_row_max(3.0f, 11.0f, 1.0f, 8.0f, false, false);
  EXPECT_EQ(u.row_max, 3.0f);
  EXPECT_FALSE(u.rescale);
  // Growth 8.5: rescale by 2^-8.5.
  u = update_row_max(3.0f, 11.5f, 1.0f, 8.0f, false, false);
  EXPECT_EQ(u.row_max, 11.5f);
  EXPECT_EQ(u.acc_scale, float(std::exp2(-8.5)));
  EXPECT_TRUE(u.rescale);
  // tau = 0: any growth rescales; no growth: acc_scale = exp2(0) = 1, no rescale.
  u = update_row_max(3.0f, 3.5f, 1.0f, 0.0f, false, false);
  EXPECT_EQ(u.acc_scale, float(std::exp2(-0.5)));
  u = update_row_max(3.0f, 2.0f, 1.0f, 0.0f, false, false);
  EXPECT_EQ(u.acc_scale, 1.0f);
  EXPECT_FALSE(u.rescale);
  // -inf rows (all masked so far): row_max_safe keeps P finite, acc_scale = 0 (O and l are 0).
  u = update_row_max(neg_inf_f32(), neg_inf_f32(), 1.0f, 0.0f, false, false);
  EXPECT_EQ(row_max_safe(u.row_max), 0.0f);
  SoftmaxParams p;
  EXPECT_EQ(p_exp2(neg_inf_f32(), neg_inf_f32(), p, false), 0.0f);
}

// A fully masked row finalises to O = 0 and LSE = -inf; masked keys contribute nothing.
TEST(OnlineSoftmax, MaskedRows) {
  const int keys = 256, d = 8;
  std::vector<float> S(2 * size_t(keys), neg_inf_f32());
  for (int k = 0; k < keys; k += 3) S[size_t(keys) + size_t(k)] = float(k % 7);
  const auto V = normal_matrix(keys, d, 1.0, 5);
  SoftmaxParams p;
  const auto res = simulate_rows(p, S.data(), 2, keys, 64, BlockOrder::reverse, V.data(), d, 1);
  for (int j = 0; j < d; ++j) EXPECT_EQ(res.O[size_t(j)], 0.0f);
  EXPECT_EQ(res.lse[0], neg_inf_f32());
  EXPECT_TRUE(std::isfinite(res.lse[1]));
}

// Saturation: E4M3 with max_offset 8 and tau 4 clips P (threshold 464), E5M2 does not; the
// thresholds are where round-to-nearest-even first exceeds max finite.
TEST(OnlineSoftmax, SaturationThresholdAndCount) {
  EXPECT_EQ(saturation_threshold(kE4M3), std::nextafter(464.0f, 1e9f));  // 464 ties to even 448
  EXPECT_EQ(saturation_threshold(kE5M2), 61440.0f);                      // tie goes up to 65536
  EXPECT_EQ(saturation_threshold(kBF16), 0x1.FFp127f);  // max 0x1.FEp127 is odd: tie goes up
  EXPECT_TRUE(std::isinf(saturation_threshold(kFP32)));
  const int rows = 32, keys = 4096;
  const auto S = normal_matrix(rows, keys, 6.0, 51);
  for (const Format* f : {&kE4M3, &kE5M2}) {
    SoftmaxParams p;
    p.p_format = *f;
    p.max_offset = 8.0f;
    p.rescale_threshold = 4.0f;
    const auto res =
        simulate_rows(p, S.data(), rows, keys, 128, BlockOrder::forward, nullptr, 0, 1);
    // The counts-only path (P only where it could saturate) counts exactly what the full path does.
    const std::vector<float> V1(size_t(keys), 1.0f);
    EXPECT_EQ(res.counts.saturated,
              simulate_rows(p, S.data(), rows, keys, 128, BlockOrder::forward, V1.data(), 1, 1)
                  .counts.saturated);
    if (f == &kE4M3)
      EXPECT_GT(res.counts.saturated, 0u);
    else
      EXPECT_EQ(res.counts.saturated, 0u);
    p.rescale_threshold = 0.0f;  // tau 0: P <= 2^8 = 256 < 448
    EXPECT_EQ(simulate_rows(p, S.data(), rows, keys, 128, BlockOrder::forward, nullptr, 0, 1)
                  .counts.saturated,
              0u);
  }
}

// Schedule mode: emulated columns use ex2_emu, the rest the MUFU-like exp2.
TEST(OnlineSoftmax, ScheduleUsesEmulationOnItsColumns) {
  const int keys = 128;
  auto S = normal_matrix(1, keys, 3.0, 61);
  SoftmaxParams mufu, sched;
  mufu.p_format = sched.p_format = kFP32;
  sched.exp2 = parse_exp2_choice("schedule:10,4,1");
  RowBlockSim a(mufu, 1, 0), b(sched, 1, 0);
  a.process_tile(S.data(), keys, nullptr, 0, keys);
  b.process_tile(S.data(), keys, nullptr, 0, keys);
  // row_sum differs only through the emulated columns; check per column via p_exp2 directly.
  const float m = *std::max_element(S.begin(), S.end());
  int emulated_cols = 0;
  for (int k = 0; k < keys; ++k) {
    const bool e = emulated(k, keys, 10, 4, 1);
    emulated_cols += e;
    const float pm = p_exp2(S[size_t(k)], m, mufu, false);
    const float pe = p_exp2(S[size_t(k)], m, sched, e);
    if (!e)
      EXPECT_EQ(pm, pe);
    else
      EXPECT_EQ(pe, ex2_emu(std::fma(S[size_t(k)], 1.0f, -m), 3));
  }
  EXPECT_EQ(emulated_cols, 24);  // 18.75 % of 128 (docs/facts.md §1)
  EXPECT_NE(a.row_sum()[0], b.row_sum()[0]);
}

// The tile schedule (tile_mask): with V = identity, O is P / row_sum, so every column's P can be
// read back; columns of masked 8-column tiles are ex2_emu's, the others the correctly rounded exp2.
TEST(OnlineSoftmax, TileMaskScheduleEmulatesWholeTiles) {
  const int keys = 128;
  auto S = normal_matrix(1, keys, 3.0, 62);
  std::vector<float> V(size_t(keys) * keys, 0.f);
  for (int k = 0; k < keys; ++k) V[size_t(k) * keys + size_t(k)] = 1.f;
  SoftmaxParams sched;
  sched.p_format = kFP32;
  sched.exp2.mode = Exp2Mode::schedule;
  sched.exp2.tile_mask = 0x5u | (0x5u << 8);  // tiles 0, 2, 8, 10
  RowBlockSim sim(sched, 1, keys);
  sim.process_tile(S.data(), keys, V.data(), keys, keys);
  std::vector<float> O(static_cast<size_t>(keys));
  sim.finalize(O.data(), keys, nullptr);
  const float m = *std::max_element(S.begin(), S.end());
  const float inv = 1.0f / sim.row_sum()[0];
  int emulated_cols = 0, differs_from_mufu = 0;
  for (int k = 0; k < keys; ++k) {
    const int t = k / 8;
    const bool e = t == 0 || t == 2 || t == 8 || t == 10;
    emulated_cols += e;
    const float want = p_exp2(S[size_t(k)], m, sched, e);
    EXPECT_EQ(O[size_t(k)], want * inv) << k;
    if (e) differs_from_mufu += want != exp2_mufu_like(std::fma(S[size_t(k)], 1.0f, -m));
  }
  EXPECT_EQ(emulated_cols, 32);
  EXPECT_GT(differs_from_mufu, 0);  // the emulated columns really took the other path
}

// ---- the vectorised paths against plain scalar models, bit for bit

uint32_t bits_of(float x) {
  uint32_t b;
  std::memcpy(&b, &x, 4);
  return b;
}

// quantize_p (AVX2 fast path for non-negative inputs) = quantize() per element: every 4099th float32
// bit pattern, plus every pattern within 2^12 of each format's boundaries.
TEST(OnlineSoftmax, QuantizePMatchesQuantize) {
  for (const Format* f : {&kBF16, &kFP16, &kE4M3, &kE5M2, &kFP32}) {
    std::vector<float> in;
    for (uint64_t b = 0; b < (uint64_t(1) << 32); b += 4099)
      in.push_back(f32_from_bits(uint32_t(b)));
    for (double edge : {f->min_subnormal, f->min_normal, f->max_finite,
                        double(saturation_threshold(*f)), 1.0, 0.0})
      for (int sgn : {0, 1})
        for (int64_t dlt = -4096; dlt <= 4096; ++dlt) {
          const int64_t b = int64_t(bits_of(float(std::min(edge, 3.0e38)))) + dlt;
          if (b >= 0 && b < 0x7F800000)
            in.push_back(f32_from_bits(uint32_t(b) | (uint32_t(sgn) << 31)));
        }
    in.push_back(std::numeric_limits<float>::infinity());
    in.push_back(std::numeric_limits<float>::quiet_NaN());
    in.push_back(-0.0f);
    for (Overflow ov : {Overflow::satfinite, Overflow::ieee}) {
      std::vector<float> out(in.size());
      quantize_p(*f, ov, in.data(), out.data(), int(in.size()));
      size_t bad = 0;
      for (size_t i = 0; i < in.size(); ++i)
        if (bits_of(out[i]) != bits_of(quantize(*f, in[i], ov)) && bad++ < 5)
          ADD_FAILURE() << f->name << " " << overflow_name(ov) << " x bits " << std::hex
                        << bits_of(in[i]);
      EXPECT_EQ(bad, 0u) << f->name;
    }
  }
}

// RowBlockSim (vectorised block max, exp2, cast and P_cast @ V) = a scalar model of the same
// steps (online_softmax.h), bit for bit: O, row_sum, LSE and counts, for wide scores (exp2
// arguments down to -300: subnormal and zero P, the scalar fallback), masked keys, a ragged
// tile, row counts that leave remainders, d with a scalar tail, and the per-row offsets.
TEST(OnlineSoftmax, VectorPathsMatchScalarModel) {
  const int rows = 13, keys = 700, d = 40, block = 128;
  auto S = normal_matrix(rows, keys, 40.0, 91, 60.0);
  for (int k = 0; k < keys; k += 37) S[size_t(k % rows) * size_t(keys) + size_t(k)] = neg_inf_f32();
  const auto V = normal_matrix(keys, d, 1.0, 92);
  std::vector<float> offs(static_cast<size_t>(rows));
  for (int r = 0; r < rows; ++r) offs[size_t(r)] = 0.37f * float(r);
  for (Exp2Mode mode : {Exp2Mode::rounded_fp32, Exp2Mode::exact, Exp2Mode::emu})
    for (const Format* f : {&kBF16, &kE4M3, &kFP16, &kFP32})
      for (float tau : {0.0f, 4.0f})
        for (bool per_row : {false, true}) {
          SoftmaxParams p;
          p.exp2.mode = mode;
          p.p_format = *f;
          p.rescale_threshold = tau;
          p.max_offset = f->total_bits == 8 ? 8.0f : 0.0f;
          p.warp_rows = 4;
          RowBlockSim sim(p, rows, d);
          if (per_row) sim.set_row_max_offsets(offs);
          for (int k0 = 0; k0 < keys; k0 += block)
            sim.process_tile(S.data() + k0, size_t(keys), V.data() + size_t(k0) * size_t(d),
                             size_t(d), std::min(block, keys - k0));
          std::vector<float> O(size_t(rows) * size_t(d)), lse(static_cast<size_t>(rows));
          sim.finalize(O.data(), size_t(d), lse.data());
          // the scalar model
          const float sat_thr = saturation_threshold(*f);
          uint64_t sat = 0, row_resc = 0;
          for (int r = 0; r < rows; ++r) {
            SoftmaxParams pr = p;
            if (per_row) pr.max_offset = offs[size_t(r)];
            const float* s = S.data() + size_t(r) * size_t(keys);
            float m = neg_inf_f32(), l = 0.0f;
            std::vector<float> o(size_t(d), 0.0f);
            for (int k0 = 0; k0 < keys; k0 += block) {
              const int n = std::min(block, keys - k0);
              float bm = neg_inf_f32();
              for (int k = 0; k < n; ++k) bm = s[k0 + k] > bm ? s[k0 + k] : bm;
              const RowUpdate u =
                  update_row_max(m, bm, p.scale_log2, tau, k0 == 0, mode == Exp2Mode::exact);
              m = u.row_max;
              row_resc += u.rescale;
              float acc8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
              std::vector<float> pc(static_cast<size_t>(n));
              for (int k = 0; k < n; ++k) {
                const float pk = p_exp2(s[k0 + k], m, pr, false);
                sat += pk >= sat_thr;
                acc8[k % 8] += pk;
                pc[size_t(k)] = quantize(*f, pk, Overflow::satfinite);
              }
              for (int i = 0; i < 4; ++i) acc8[i] += acc8[i + 4];
              acc8[0] += acc8[2];
              acc8[1] += acc8[3];
              l = l * u.acc_scale + (acc8[0] + acc8[1]);
              for (int j = 0; j < d; ++j) {
                float a = u.acc_scale != 1.0f ? o[size_t(j)] * u.acc_scale : o[size_t(j)];
                for (int k = 0; k < n; ++k)
                  a = std::fma(pc[size_t(k)], V[size_t(k0 + k) * size_t(d) + size_t(j)], a);
                o[size_t(j)] = a;
              }
            }
            ASSERT_EQ(bits_of(sim.row_sum()[size_t(r)]), bits_of(l)) << "row " << r;
            const float inv = 1.0f / l;
            for (int j = 0; j < d; ++j)
              ASSERT_EQ(bits_of(O[size_t(r) * size_t(d) + size_t(j)]), bits_of(o[size_t(j)] * inv))
                  << "row " << r << " col " << j << " mode " << int(mode) << " " << f->name;
            const float lg = static_cast<float>(std::log2(static_cast<double>(l)));
            ASSERT_EQ(bits_of(lse[size_t(r)]),
                      bits_of(((row_max_safe(m) * p.scale_log2 + lg) - pr.max_offset) *
                              0.693147180559945309417f));
          }
          EXPECT_EQ(sim.counts().saturated, sat);
          EXPECT_EQ(sim.counts().row_rescales, row_resc);
        }
}

}  // namespace
}  // namespace fa4sim
