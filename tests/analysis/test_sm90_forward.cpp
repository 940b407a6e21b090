// Upstream's sm90 forward softmax, step by step (include/fa4sim/analysis/sm90_forward.h): the
// quad's row-sum order, the finalize formula, the MUFU models in place of the correctly rounded
// functions, the tricks variant's stale max and emulated tiles, the contraction switches, and the
// GEMM seam.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "fa4sim/analysis/sm90_forward.h"
#include "fa4sim/core/constants.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/mufu.h"
#include "fa4sim/core/online_softmax.h"

namespace fa4sim {
namespace {

constexpr float kLn2f = static_cast<float>(kLn2);

// One row of 8 scores (one n8 tile: thread q holds columns 2q, 2q + 1), d = 1, V = 1 at column 0.
struct OneRow {
  std::vector<float> S = std::vector<float>(8), V = std::vector<float>(8, 0.0f);
  OneRow() { V[0] = 1.0f; }
};

// The row sum is the quad's: each thread adds its two columns, then (t0 + t1) + (t2 + t3). With
// P = 1 at column 0 and 2^-24 elsewhere, key order would round every 2^-24 away (sum 1); the quad
// gives t0 = 1, t1 = t2 = t3 = 2^-23 and 1 + 2^-23 + 2^-22 = 1 + 3 2^-23 exactly.
TEST(Sm90Forward, RowSumIsThePerThreadSumThenTheQuadButterfly) {
  OneRow x;
  x.S[0] = 0.0f;
  for (int c = 1; c < 8; ++c) x.S[size_t(c)] = -24.0f;
  Sm90Softmax sm;  // scale_log2 1, correctly rounded MUFU functions
  Sm90Gemm g;
  Sm90RowBlock blk(sm, 1, 1, g);
  blk.process_block(x.S.data(), 8, x.V.data(), 1, 8);
  float o = 0, lse = 0;
  blk.finalize(&o, 1, &lse);
  const double sum = 1.0 + 3.0 * std::ldexp(1.0, -23);
  EXPECT_EQ(lse, std::fma(0.0f, 1.0f, float(std::log2(sum))) * kLn2f);
  EXPECT_NE(lse, 0.0f);  // what the key-order sum (exactly 1) would give
  EXPECT_EQ(o, 1.0f / float(sum));
}

// A second block rescales each thread's partial sum by row_scale, fused with its first add:
// fma(row_sum, row_scale, P_first), then P_second.
TEST(Sm90Forward, SecondBlockScalesEachThreadsSumWithOneFma) {
  OneRow a, b;
  for (int c = 0; c < 8; ++c) a.S[size_t(c)] = -1.0f - 0.125f * float(c);
  for (int c = 0; c < 8; ++c) b.S[size_t(c)] = 0.3f - 0.0625f * float(c);
  for (const bool fused : {true, false}) {
    Sm90Softmax sm;
    sm.fma.row_sum_init = fused;
    Sm90Gemm g;
    Sm90RowBlock blk(sm, 1, 1, g);
    blk.process_block(a.S.data(), 8, a.V.data(), 1, 8);
    blk.process_block(b.S.data(), 8, b.V.data(), 1, 8);
    float lse = 0;
    blk.finalize(nullptr, 1, &lse);
    // by hand: block 1 against max -1, block 2 against 0.3
    const float m1 = -1.0f, m2 = 0.3f, scale = exp2_mufu_like((m1 - m2) * 1.0f);
    float t[4];
    for (int q = 0; q < 4; ++q) {
      float s = 0.0f + exp2_mufu_like(std::fma(a.S[size_t(2 * q)], 1.0f, -m1));
      s += exp2_mufu_like(std::fma(a.S[size_t(2 * q + 1)], 1.0f, -m1));
      const float p0 = exp2_mufu_like(std::fma(b.S[size_t(2 * q)], 1.0f, -m2));
      s = fused ? std::fma(s, scale, p0) : s * scale + p0;
      t[q] = s + exp2_mufu_like(std::fma(b.S[size_t(2 * q + 1)], 1.0f, -m2));
    }
    const float sum = (t[0] + t[1]) + (t[2] + t[3]);
    EXPECT_EQ(lse, std::fma(m2, 1.0f, float(std::log2(double(sum)))) * kLn2f) << fused;
  }
}

// With the tables loaded, every MUFU step is the hardware's: P through ex2_approx_ftz, the
// normalisation through rcp_approx_ftz and the LSE through lg2_approx_ftz.
TEST(Sm90Forward, HardwareModelsReplaceTheCorrectlyRoundedFunctions) {
  const MufuHardware hw = mufu_hardware();
  ASSERT_TRUE(hw.loaded());
  // a score whose P differs between the hardware and the correctly rounded exp2
  float x = -0.5f;
  while (ex2_approx_ftz(x, hw.ex2) == exp2_mufu_like(x)) x = std::nextafter(x, -1.0f);
  OneRow r;
  r.S.assign(8, -std::numeric_limits<float>::infinity());
  r.S[0] = 0.0f;
  r.S[1] = x;  // thread 0: 1 + P(x)
  Sm90Softmax sm;
  sm.mufu = hw;
  Sm90Gemm g;
  Sm90RowBlock blk(sm, 1, 1, g);
  blk.process_block(r.S.data(), 8, r.V.data(), 1, 8);
  float o = 0, lse = 0;
  blk.finalize(&o, 1, &lse);
  const float sum = ((1.0f + ex2_approx_ftz(x, hw.ex2)) + 0.0f) + (0.0f + 0.0f);
  EXPECT_EQ(o, 1.0f * rcp_approx_ftz(sum, hw.rcp));
  EXPECT_EQ(lse, std::fma(0.0f, 1.0f, lg2_approx_ftz(sum, hw.lg2)) * kLn2f);
  Sm90Softmax cr;
  Sm90RowBlock blk_cr(cr, 1, 1, g);
  blk_cr.process_block(r.S.data(), 8, r.V.data(), 1, 8);
  float o_cr = 0;
  blk_cr.finalize(&o_cr, 1, nullptr);
  EXPECT_EQ(o_cr, 1.0f / (1.0f + exp2_mufu_like(x)));
}

// The tricks variant: a max that rises by less than tau is kept (row_scale 1, no rescale vote);
// emulated tiles go through ex2_emu; the LSE loses max_offset * ln 2.
TEST(Sm90Forward, VariantKeepsTheStaleMaxAndEmulatesItsTiles) {
  OneRow a, b;
  for (int c = 0; c < 8; ++c) a.S[size_t(c)] = -0.25f * float(c);
  for (int c = 0; c < 8; ++c) b.S[size_t(c)] = 2.0f - 0.25f * float(c);  // max rises by 2
  Sm90Softmax sm;
  sm.tau = 4;
  Sm90Gemm g;
  Sm90RowBlock stale(sm, 1, 1, g);
  stale.process_block(a.S.data(), 8, a.V.data(), 1, 8);
  stale.process_block(b.S.data(), 8, b.V.data(), 1, 8);
  EXPECT_EQ(stale.counts().row_decisions, 1u);
  EXPECT_EQ(stale.counts().row_rescales, 0u);
  sm.tau = 1;  // 2 > tau: rescales
  Sm90RowBlock fresh(sm, 1, 1, g);
  fresh.process_block(a.S.data(), 8, a.V.data(), 1, 8);
  fresh.process_block(b.S.data(), 8, b.V.data(), 1, 8);
  EXPECT_EQ(fresh.counts().row_rescales, 1u);
  EXPECT_EQ(fresh.counts().warp_rescales, 1u);
  // every tile emulated (k = 8), max_offset 1: P = ex2_emu(S - max + 1)
  Sm90Softmax emu;
  emu.emu_eighths = 8;
  emu.max_offset = 1;
  Sm90RowBlock e(emu, 1, 1, g);
  e.process_block(a.S.data(), 8, a.V.data(), 1, 8);
  float lse = 0;
  e.finalize(nullptr, 1, &lse);
  float t[4];
  for (int q = 0; q < 4; ++q)
    t[q] = (0.0f + ex2_emu(std::fma(a.S[size_t(2 * q)], 1.0f, 1.0f), 3)) +
           ex2_emu(std::fma(a.S[size_t(2 * q + 1)], 1.0f, 1.0f), 3);
  const float sum = (t[0] + t[1]) + (t[2] + t[3]);
  EXPECT_EQ(lse, std::fma(0.0f, 1.0f, float(std::log2(double(sum)))) * kLn2f - float(kLn2));
}

// The contraction switches change bits on random rows (so a GPU run can tell them apart).
TEST(Sm90Forward, ContractionSwitchesChangeSomeBits) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 3.0f);
  const int rows = 256, n = 128, d = 4;
  std::vector<float> S1(size_t(rows) * n), S2(size_t(rows) * n), V(size_t(n) * d);
  for (float& s : S1) s = nd(rng);
  for (float& s : S2) s = nd(rng);
  for (float& v : V) v = nd(rng);
  auto run = [&](Sm90Contraction f) {
    Sm90Softmax sm;
    sm.scale_log2 = 0.1275f;
    sm.fma = f;
    Sm90Gemm g;
    Sm90RowBlock blk(sm, rows, d, g);
    blk.process_block(S1.data(), n, V.data(), d, n);
    blk.process_block(S2.data(), n, V.data(), d, n);
    std::vector<float> out(size_t(rows) * (d + 1));  // O (rows x d), then the LSE
    blk.finalize(out.data(), d, out.data() + size_t(rows) * d);
    return out;
  };
  const auto base = run({});
  for (int k = 0; k < 3; ++k) {
    Sm90Contraction f;
    (k == 0 ? f.exp_argument : k == 1 ? f.row_sum_init : f.lse) = false;
    const auto other = run(f);
    int differ = 0;
    // the exp2 argument and the row sum show in O (the LSE hardly moves with a 1-ulp sum), the
    // LSE switch in the LSE
    const size_t from = k == 2 ? size_t(rows) * d : 0, to = k == 2 ? base.size() : size_t(rows) * d;
    for (size_t i = from; i < to; ++i) differ += base[i] != other[i];
    EXPECT_GT(differ, 0) << "switch " << k;
  }
}

// The GEMM seam: a tensor-core model plugs in by overriding qk / pv; here one that accumulates
// nothing (S = 0, O untouched) makes every P 1 and O 0.
struct ZeroGemm : Sm90Gemm {
  float qk(const float*, const float*, int) const override { return 0.0f; }
  void pv(float*, const float*, const float*, size_t, int, int) const override {}
};

TEST(Sm90Forward, TheGemmSeamIsUsed) {
  const ZeroGemm z;
  const float q[2] = {1, 2}, k[2] = {3, 4};
  EXPECT_EQ(z.qk(q, k, 2), 0.0f);
  EXPECT_EQ(Sm90Gemm{}.qk(q, k, 2), 11.0f);
  OneRow r;
  r.S.assign(8, 0.0f);
  Sm90Softmax sm;
  Sm90RowBlock blk(sm, 1, 1, z);
  blk.process_block(r.S.data(), 8, r.V.data(), 1, 8);
  float o = -1, lse = 0;
  blk.finalize(&o, 1, &lse);
  EXPECT_EQ(o, 0.0f);
  EXPECT_EQ(lse, float(3.0f) * kLn2f);  // log2(8) = 3
}

// The wgmma model through the seam: terms aligned to the largest exponent keep 25 fraction bits
// and the sum is truncated to float32, so 1 + 2^-24 + 2^-26 gives 1 (2^-26 is cut, the rest
// rounds toward zero) where the exact dot product rounded once gives 1 + 2^-23; P V chains its
// 16-key steps from C = O.
TEST(Sm90Forward, WgmmaGemmTruncatesWhereTheExactDotRounds) {
  const Sm90WgmmaGemm w(kBF16);
  std::vector<float> q(16, 0.0f), k(16, 0.0f);
  q[0] = q[1] = q[2] = 1.0f;
  k[0] = 1.0f, k[1] = std::ldexp(1.0f, -24), k[2] = std::ldexp(1.0f, -26);
  EXPECT_EQ(w.qk(q.data(), k.data(), 16), 1.0f);
  EXPECT_EQ(Sm90Gemm{}.qk(q.data(), k.data(), 16), 1.0f + std::ldexp(1.0f, -23));
  // d = 24: a second step takes the first one's result as C
  std::vector<float> q2(24, 0.0f), k2(24, 0.0f);
  q2[0] = 3.0f, k2[0] = 0.5f, q2[20] = -1.0f, k2[20] = 1.0f;
  EXPECT_EQ(w.qk(q2.data(), k2.data(), 24), 0.5f);
  // P V from C = o = 1: P = 3 2^-24 on V = 1 gives 1 + 2^-23 (truncated) where one fma rounds
  // 1 + 1.5 ulp to 1 + 2^-22; a second step (key 17) adds 0.5 exactly
  std::vector<float> p(32, 0.0f), v(32, 0.0f);
  p[0] = 3.0f * std::ldexp(1.0f, -24), p[17] = 0.5f;
  v[0] = v[17] = 1.0f;
  float o = 1.0f, o_fma = 1.0f;
  w.pv(&o, p.data(), v.data(), 1, 32, 1);
  Sm90Gemm{}.pv(&o_fma, p.data(), v.data(), 1, 32, 1);
  EXPECT_EQ(o, 1.5f + std::ldexp(1.0f, -23));
  EXPECT_EQ(o_fma, 1.5f + std::ldexp(1.0f, -22));
}

// The wgmma model's block forms (each operand decoded once, finite steps in vectorised loops)
// give the bits of the per-pair qk and per-row pv, which step through the bit patterns: random
// codes of every magnitude (subnormals, +-0, the largest finite, whose products overflow the
// float32 accumulator to inf, after which the general step takes over), d and n not multiples of
// 16, O starting at random values (-0, inf), and blocks holding inf or NaN (the general path).
TEST(Sm90Forward, WgmmaGemmTilesGiveThePerPairBits) {
  std::mt19937 rng(20261204);
  for (const Format* f : {&kBF16, &kFP16}) {
    const Sm90WgmmaGemm w(*f);
    // A value of the format from a random code; `finite` redraws inf and NaN codes.
    auto value = [&](bool finite) {
      for (;;) {
        const uint32_t code = rng() & 0xFFFFu;
        const float x = f == &kBF16 ? f32_from_bits(code << 16) : decode(*f, code);
        if (!finite || std::isfinite(x)) return x;
      }
    };
    // Codes drawn from a narrow exponent band half the time: sums where alignment matters.
    auto draw = [&](std::vector<float>& x, bool finite, int zeros_pct) {
      for (float& v : x) {
        v = value(finite);
        if (int(rng() % 100) < zeros_pct) v = (rng() & 1) ? 0.0f : -0.0f;
        if ((rng() & 1) && std::isfinite(v) && v != 0.0f)
          v = quantize(*f, std::ldexp(std::ldexp(v, -std::ilogb(v)), int(rng() % 9) - 4),
                       Overflow::ieee);
      }
    };
    for (int trial = 0; trial < 24; ++trial) {
      const bool finite = trial % 6 != 5;  // every sixth trial: inf and NaN in the operands
      const int rows = 1 + int(rng() % 9), n = 1 + int(rng() % 40), d = 8 * (1 + int(rng() % 6));
      const int zeros = int(rng() % 60);
      std::vector<float> Q(size_t(rows) * size_t(d)), K(size_t(n) * size_t(d));
      std::vector<float> P(size_t(rows) * size_t(n)), V(size_t(n) * size_t(d));
      std::vector<float> O(size_t(rows) * size_t(d));
      draw(Q, finite, zeros), draw(K, finite, zeros), draw(P, finite, zeros),
          draw(V, finite, zeros);
      for (float& o : O) o = trial % 4 == 3 ? value(false) : value(true) * 0.5f;
      std::vector<float> S(size_t(rows) * size_t(n));
      w.qk_tile(S.data(), size_t(n), Q.data(), size_t(d), rows, K.data(), size_t(d), n, d);
      std::vector<float> O_rows = O;
      w.pv_rows(O_rows.data(), size_t(d), P.data(), size_t(n), rows, V.data(), size_t(d), n, d);
      for (int r = 0; r < rows; ++r) {
        for (int c = 0; c < n; ++c)
          ASSERT_EQ(f32_bits(S[size_t(r) * size_t(n) + size_t(c)]),
                    f32_bits(w.qk(&Q[size_t(r) * size_t(d)], &K[size_t(c) * size_t(d)], d)))
              << f->name << " trial " << trial << " S[" << r << "][" << c << "]";
        w.pv(&O[size_t(r) * size_t(d)], &P[size_t(r) * size_t(n)], V.data(), size_t(d), n, d);
        for (int j = 0; j < d; ++j)
          ASSERT_EQ(f32_bits(O_rows[size_t(r) * size_t(d) + size_t(j)]),
                    f32_bits(O[size_t(r) * size_t(d) + size_t(j)]))
              << f->name << " trial " << trial << " O[" << r << "][" << j << "]";
      }
    }
  }
}

// A row without a visible key: O = 0, LSE -inf (finalize's zero_or_nan branch).
TEST(Sm90Forward, EmptyRowGivesZeroAndMinusInfinity) {
  OneRow r;
  r.S.assign(8, -std::numeric_limits<float>::infinity());
  Sm90Softmax sm;
  Sm90Gemm g;
  Sm90RowBlock blk(sm, 1, 1, g);
  blk.process_block(r.S.data(), 8, r.V.data(), 1, 8);
  blk.process_block(r.S.data(), 8, r.V.data(), 1, 8);
  float o = -1, lse = 0;
  blk.finalize(&o, 1, &lse);
  EXPECT_EQ(o, 0.0f);
  EXPECT_EQ(lse, -std::numeric_limits<float>::infinity());
}

}  // namespace
}  // namespace fa4sim
