// Tests for exp2_analysis.h: the streaming error analysis behind `fa4sim exp2`.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <span>

#include "fa4sim/util/error.h"
#include "fa4sim/analysis/exp2_analysis.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/ref/exp2_ref.h"
#include "fa4sim/core/formats.h"

namespace {

using namespace fa4sim;

Exp2Config quiet(Exp2Config c) {
  c.progress = false;
  return c;
}

void expect_same(const Exp2Result& a, const Exp2Result& b) {
  ASSERT_EQ(a.degrees.size(), b.degrees.size());
  EXPECT_EQ(a.n, b.n);
  EXPECT_EQ(a.ref_mp_fallbacks, b.ref_mp_fallbacks);
  for (size_t i = 0; i < a.degrees.size(); ++i) {
    for (bool w : {false, true}) {
      const Exp2Stats& x = w ? a.degrees[i].weighted : a.degrees[i].plain;
      const Exp2Stats& y = w ? b.degrees[i].weighted : b.degrees[i].plain;
      // Bit-identical, sums included: chunks are fixed and combined in order.
      EXPECT_EQ(x.n, y.n);
      EXPECT_EQ(x.max_rel, y.max_rel);
      EXPECT_EQ(x.max_rel_at, y.max_rel_at);
      EXPECT_EQ(x.mean_rel, y.mean_rel);
      EXPECT_EQ(x.max_ulp_f32, y.max_ulp_f32);
      EXPECT_EQ(x.identical, y.identical);
      EXPECT_EQ(x.within_1ulp, y.within_1ulp);
      EXPECT_EQ(x.max_ulp, y.max_ulp);
    }
  }
}

// The vectorised rounding index equals formats.h's encode_f64 (the formats module's contract)
// on values around every kind of boundary: ties, subnormals, the carry into the next binade,
// overflow to inf.
TEST(Exp2Analysis, RoundedIndexMatchesFormatsEncode) {
  std::mt19937_64 rng(7);
  for (const Format* f : {&kBF16, &kFP16, &kFP32}) {
    std::vector<double> vs = {0.0,
                              f->min_subnormal,
                              f->min_subnormal / 2,
                              f->min_subnormal * 1.5,
                              f->min_normal,
                              f->max_finite,
                              f->max_finite * (1 + f->epsilon / 2),
                              f->max_finite * 2,
                              1.0,
                              1.0 + f->epsilon / 2,
                              1.0 + 1.5 * f->epsilon};
    std::uniform_real_distribution<double> e(-160.0, 130.0);
    for (int i = 0; i < 200000; ++i) {
      const double v = std::exp2(e(rng));
      vs.push_back(v);
      // The exact midpoint above the rounded value (ties to even must be decided by the index).
      const float q = decode(*f, encode_f64(*f, v, Overflow::ieee));
      if (std::isfinite(q) && q > 0) {
        const double next = decode(
            *f, encode_f64(*f, static_cast<double>(q) * (1 + 2 * f->epsilon), Overflow::ieee));
        if (std::isfinite(next)) vs.push_back(0.5 * (static_cast<double>(q) + next));
      }
    }
    for (double v : vs)
      ASSERT_EQ(exp2_rounded_index(v, f->name),
                static_cast<double>(encode_f64(*f, v, Overflow::ieee)))
          << f->name << " v=" << v;
  }
}

TEST(Exp2Analysis, DeterministicForAnyThreadCount) {
  for (bool exhaustive : {false, true}) {
    Exp2Config c = quiet({});
    c.exhaustive = exhaustive;
    c.samples = 300000;
    if (exhaustive) c.lo = 1.0, c.hi = 1.25;  // 2^21 floats
    c.threads = 1;
    const Exp2Result one = run_exp2(c);
    c.threads = 2;
    const Exp2Result two = run_exp2(c);
    c.threads = 5;
    const Exp2Result five = run_exp2(c);
    expect_same(one, two);
    expect_same(one, five);
  }
}

// The fused loop (Note [Fused sampled pass]; default for uniform sampling with the built-in
// emulator) gives the same bits as the separate passes, sums included, for both out dtypes,
// every degree, ranges with zero/subnormal inputs, a sample count that leaves a partial block
// (which takes the separate passes), and ranges whose only float has a 2^x on an exact rounding
// tie (every sample is re-decided in multiprecision: 2^-25 is half fp16's smallest subnormal,
// 2^-134 half bf16's).
TEST(Exp2Analysis, FusedPassEqualsSeparatePasses) {
  struct Case {
    const char* out_dtype;
    double lo, hi;
    uint64_t samples;
    bool expect_fallbacks;
  };
  for (const Case& k :
       {Case{"bf16", -20, 8, 300000, false}, Case{"fp16", -20, 8, 300000, false},
        Case{"bf16", -1e-30, 1e-30, 70001, false}, Case{"fp16", -127, 128, 65536 * 2 + 37, false},
        Case{"bf16", -1022, -1000, 20000, false}, Case{"fp16", -25, -24.999999, 1000, true},
        Case{"bf16", -134, -133.99999, 1000, true}}) {
    Exp2Config c = quiet({});
    c.degrees = {0, 1, 2, 3, 4, 5};
    c.out_dtype = k.out_dtype;
    c.lo = k.lo;
    c.hi = k.hi;
    c.samples = k.samples;
    c.seed = 3;
    const Exp2Result fused = run_exp2(c);
    c.fused_sampling = false;
    const Exp2Result separate = run_exp2(c);
    SCOPED_TRACE(testing::Message() << k.out_dtype << " [" << k.lo << ", " << k.hi << ")");
    expect_same(fused, separate);
    if (k.expect_fallbacks) {
      EXPECT_EQ(fused.ref_mp_fallbacks, k.samples);  // every input once
    }
  }
}

// Exhaustive runs take ref = inv = 1 with no Horner and no rounding for groups of 16 inputs
// with |x| < 2^-56 (Note [Tiny x]), and count y = 1 there without comparing (Note [Tiny y]):
// the same bits as the plain passes. The ranges mix tiny
// groups, groups just above the bound and a group that straddles it, both signs and zero, the
// out dtypes and partial last blocks; one range has a single float, an integer.
TEST(Exp2Analysis, TinyInputPathEqualsPlainPasses) {
  struct Case {
    const char* out_dtype;
    double lo, hi;
  };
  for (const Case& k :
       {Case{"bf16", 0x1.8p-57, 0x1.8p-56}, Case{"fp16", -0x1.0008p-56, -0x1.fffp-57},
        Case{"bf16", 0x1.fffp-57, 0x1.0008p-56}, Case{"fp16", 5.0, 5.0000001},
        Case{"bf16", -1e-45, 1e-44}, Case{"fp16", 0x1.8p-60, 0x1.81p-60}}) {
    Exp2Config c = quiet({});
    c.degrees = {0, 3, 5};
    c.exhaustive = true;
    c.out_dtype = k.out_dtype;
    c.lo = k.lo;
    c.hi = k.hi;
    const Exp2Result fast = run_exp2(c);
    c.fused_sampling = false;
    const Exp2Result plain = run_exp2(c);
    SCOPED_TRACE(testing::Message() << k.out_dtype << " [" << k.lo << ", " << k.hi << ")");
    expect_same(fast, plain);
  }
}

// The sampled inputs are pinned: these values come from the scalar generator loop of
// fill_inputs as it was before the vectorised generator (fill_uniform_avx2) and the fused pass
// existed (fa4sim at git 596295b, `fa4sim exp2 --samples 4099 --seed 5 --degree 3,5 --json -`).
// A change of the generator or of the sampling arithmetic changes them (and docs/commands/exp2.md).
TEST(Exp2Analysis, SampledInputsArePinned) {
  Exp2Config c = quiet({});
  c.samples = 4099;  // 8 full blocks and a partial one (the scalar tail of the generator)
  c.seed = 5;
  c.degrees = {3, 5};
  const Exp2Result r = run_exp2(c);
  EXPECT_EQ(static_cast<double>(r.degrees[0].plain.max_rel_at), 0.1023484393954277);
  EXPECT_EQ(r.degrees[0].plain.max_rel, 8.76671097229584e-05);
  EXPECT_EQ(r.degrees[0].plain.mean_rel, 5.353958176945217e-05);
  EXPECT_EQ(static_cast<double>(r.degrees[1].plain.max_rel_at), -0.9461488723754883);
  EXPECT_EQ(r.degrees[1].plain.max_rel, 1.3807484123022692e-07);
  EXPECT_EQ(r.degrees[1].plain.mean_rel, 5.467931846051028e-08);
}

TEST(Exp2Analysis, SeedChangesSamplesButNotTheLaw) {
  Exp2Config a = quiet({}), b = quiet({});
  a.degrees = b.degrees = {3};
  a.samples = b.samples = 200000;
  b.seed = 99;
  const Exp2Result ra = run_exp2(a), rb = run_exp2(b);
  EXPECT_NE(ra.degrees[0].plain.mean_rel, rb.degrees[0].plain.mean_rel);
  EXPECT_NEAR(ra.degrees[0].plain.mean_rel, rb.degrees[0].plain.mean_rel, 1e-6);
}

// Exhaustive over a range: every float counted once, the weights tile [lo, hi) exactly.
TEST(Exp2Analysis, ExhaustiveCountsEveryFloatAndWeightsTileTheRange) {
  EXPECT_EQ(exp2_float_count(-127.0, 128.0), 2248015873u);  // the count (both zeros)
  EXPECT_EQ(exp2_float_count(1.0, 2.0), 1u << 23);
  EXPECT_EQ(exp2_float_count(1.0, std::nextafter(1.0f, 2.0f)), 1u);
  Exp2Config c = quiet({});
  c.exhaustive = true;
  c.lo = -1e-38;  // crosses zero: -0 and +0 both count, with half the zero interval each;
  c.hi = 2e-38;   // all 2 x 2^23 subnormals inside (~16M floats)
  c.degrees = {5};
  const Exp2Result r = run_exp2(c);
  EXPECT_EQ(r.n, exp2_float_count(c.lo, c.hi));
  EXPECT_EQ(r.degrees[0].plain.n, static_cast<double>(r.n));
  // The weights are exact differences of midpoints; their double sum over ~16M terms is exact
  // to a few ulps per chunk: 1e-13 relative is far below any statistic's resolution.
  EXPECT_NEAR(r.degrees[0].weighted.n, c.hi - c.lo, 1e-13 * (c.hi - c.lo));
  std::printf("total weight %.17g vs hi - lo %.17g\n", r.degrees[0].weighted.n, c.hi - c.lo);
}

// Uniform sampling converges to the value-weighted exhaustive figures (Note [Value weights]):
// the sampled bf16 identical fraction is within 4 standard errors of the exact one.
TEST(Exp2Analysis, SampledAgreesWithValueWeightedWithinNoise) {
  Exp2Config s = quiet({}), e = quiet({});
  s.degrees = e.degrees = {3};
  s.lo = e.lo = 2.0;
  s.hi = e.hi = 4.0;  // 2^24 floats
  s.samples = 2000000;
  e.exhaustive = true;
  const Exp2Stats ss = run_exp2(s).degrees[0].plain;
  const Exp2Stats ew = run_exp2(e).degrees[0].weighted;
  const double p = ew.identical / ew.n, ps = ss.identical / ss.n;
  const double se = std::sqrt(p * (1 - p) / ss.n);
  std::printf("bf16 identical over [2, 4): sampled %.5f%%, exact %.5f%% (s.e. %.5f%%)\n", 100 * ps,
              100 * p, 100 * se);
  EXPECT_LT(std::fabs(ps - p), 4 * se);
  EXPECT_NEAR(ss.mean_rel, ew.mean_rel, 0.02 * ew.mean_rel);
}

// --reference mp gives the same decisions as the double reference (which re-decides
// near-midpoint cases in multiprecision).
TEST(Exp2Analysis, MultiprecisionReferenceAgreesWithDouble) {
  for (const char* od : {"bf16", "fp16"}) {
    Exp2Config c = quiet({});
    c.samples = 20000;
    c.out_dtype = od;
    c.lo = -30;
    c.hi = 20;
    const Exp2Result f = run_exp2(c);
    c.reference = Exp2Reference::mp;
    const Exp2Result m = run_exp2(c);
    for (size_t i = 0; i < f.degrees.size(); ++i) {
      const Exp2Stats &a = f.degrees[i].plain, &b = m.degrees[i].plain;
      EXPECT_EQ(a.identical, b.identical) << od;
      EXPECT_EQ(a.within_1ulp, b.within_1ulp) << od;
      EXPECT_EQ(a.max_ulp, b.max_ulp) << od;
      EXPECT_EQ(a.max_ulp_f32, b.max_ulp_f32) << od;
      EXPECT_EQ(a.max_rel_at, b.max_rel_at) << od;
      EXPECT_NEAR(a.max_rel, b.max_rel, 1e-15 * 2) << od;
    }
  }
}

// The function under test is a parameter (a GPU backend will pass MUFU values): a function that
// returns the correctly rounded float32 2^x has 0 float32 ULPs of error and rel error <= 2^-24.
TEST(Exp2Analysis, FunctionUnderTestIsAParameter) {
  Exp2Config c = quiet({});
  c.samples = 20000;
  c.degrees = {3};
  const Exp2Function exact = [](int, std::span<const float> x, std::span<float> y) {
    for (size_t i = 0; i < x.size(); ++i)
      y[i] = static_cast<float>(exp2_mp_round_odd(x[i]));  // round-to-odd then RN: correct
  };
  const Exp2Stats s = run_exp2(c, exact).degrees[0].plain;
  EXPECT_EQ(s.max_ulp_f32, 0);
  EXPECT_LE(s.max_rel, 0x1p-24);
  EXPECT_LE(s.max_ulp, 1);  // double rounding fp32 -> bf16 can cost one bf16 ULP, never more
}

// Seed table shape (the seed article's figures are checked, with tolerances explained, in the
// CLI and report tests): FP32 max rel per degree, the mean rel to the published 3 digits, and
// 100 % within 1 ULP. The published means are themselves one sample (4M NumPy draws); degree 5's
// sits on a rounding boundary of its third digit (seeds 0-9 give 5.479e-8 .. 5.487e-8; the
// default seed 1 gives 5.4853e-8, printed 5.49e-8), so this test pins seed 0, whose sample rounds
// to every published digit.
TEST(Exp2Analysis, SeedZeroReproducesTheSeedTableShape) {
  Exp2Config c = quiet({});
  c.seed = 0;
  const Exp2Result r = run_exp2(c);
  ASSERT_EQ(r.degrees.size(), 3u);
  EXPECT_NEAR(r.degrees[0].plain.max_rel, 8.77e-5, 0.005e-5);
  EXPECT_NEAR(r.degrees[1].plain.max_rel, 3.05e-6, 0.005e-6);
  EXPECT_NEAR(r.degrees[0].plain.mean_rel, 5.43e-5, 0.005e-5);
  EXPECT_NEAR(r.degrees[1].plain.mean_rel, 1.84e-6, 0.005e-6);
  EXPECT_NEAR(r.degrees[2].plain.mean_rel, 5.48e-8, 0.005e-8);
  for (const auto& d : r.degrees) EXPECT_EQ(d.plain.within_1ulp, d.plain.n) << d.degree;
}

TEST(Exp2Analysis, ValidateRejectsBadConfigs) {
  auto bad = [](auto mutate) {
    Exp2Config c;
    mutate(c);
    EXPECT_THROW(validate(c), Error);
  };
  bad([](Exp2Config& c) { c.degrees = {6}; });
  bad([](Exp2Config& c) { c.degrees = {}; });
  bad([](Exp2Config& c) { c.lo = 8, c.hi = -20; });
  bad([](Exp2Config& c) { c.hi = 200; });
  bad([](Exp2Config& c) { c.lo = -2000; });
  bad([](Exp2Config& c) { c.samples = 0; });
  bad([](Exp2Config& c) { c.samples = kExp2MaxSamples + 1; });
  bad([](Exp2Config& c) { c.out_dtype = "e4m3"; });
  bad([](Exp2Config& c) { c.lo = 1.00000001, c.hi = 1.00000005; });  // no float inside
  Exp2Config ok;
  ok.exhaustive = true;
  ok.samples = 0;  // ignored with --exhaustive
  EXPECT_NO_THROW(validate(ok));
}

}  // namespace
