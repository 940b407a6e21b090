// test_formats.cpp: the number formats of include/fa4sim/formats.h.
//
// Fast: derived limits against FACTS §3, all 256 / 65,536 decode -> encode round trips,
// hand-picked hardware values.
#include <cmath>
#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "fa4sim/formats.h"

namespace fa4sim {
namespace {

const Format* const kNarrow[] = {&kBF16, &kFP16, &kE4M3, &kE5M2};

// ---- derived limits (FACTS §3 table)
TEST(FormatsLimits, MatchFacts) {
  EXPECT_EQ(kE4M3.max_finite, 448.0);
  EXPECT_EQ(kE4M3.min_normal, std::ldexp(1.0, -6));
  EXPECT_EQ(kE4M3.min_subnormal, std::ldexp(1.0, -9));
  EXPECT_FALSE(kE4M3.has_inf);
  EXPECT_EQ(kE5M2.max_finite, 57344.0);
  EXPECT_EQ(kE5M2.min_normal, std::ldexp(1.0, -14));
  EXPECT_EQ(kE5M2.min_subnormal, std::ldexp(1.0, -16));
  EXPECT_EQ(kFP16.max_finite, 65504.0);
  EXPECT_EQ(kFP16.min_subnormal, std::ldexp(1.0, -24));
  EXPECT_EQ(kBF16.max_finite, 3.3895313892515355e38);
  EXPECT_EQ(kBF16.min_normal, std::ldexp(1.0, -126));
  EXPECT_EQ(kBF16.min_subnormal, std::ldexp(1.0, -133));
  EXPECT_EQ(kFP32.max_finite, double(3.40282346638528859812e38f));
  EXPECT_EQ(kBF16.epsilon, std::ldexp(1.0, -7));
  for (const Format* f : {&kFP32, &kBF16, &kFP16, &kE4M3, &kE5M2}) {
    // The constexpr log2 agrees with libm to within an ulp or two.
    EXPECT_NEAR(f->log2_max, std::log2(f->max_finite), 4e-15) << f->name;
    EXPECT_EQ(double(decode(*f, f->max_code)), f->max_finite) << f->name;
    EXPECT_EQ(double(decode(*f, 1)), f->min_subnormal) << f->name;
    EXPECT_EQ(double(decode(*f, 1u << f->man_bits)), f->min_normal) << f->name;
  }
  EXPECT_NEAR(kE4M3.log2_max, 8.807354922057604, 1e-15);  // FACTS: log2(448) = 8.807
  EXPECT_NEAR(kE5M2.log2_max, 15.807354922057604, 1e-15);
}

// ---- every pattern: decode -> encode gives the pattern back (NaNs -> canonical NaN)
TEST(FormatsRoundTrip, AllPatterns) {
  for (const Format* f : kNarrow) {
    const uint32_t n = 1u << f->total_bits;
    uint64_t checked = 0, nans = 0;
    for (uint32_t b = 0; b < n; ++b) {
      const float v = decode(*f, b);
      for (Overflow ov : {Overflow::satfinite, Overflow::ieee}) {
        const uint32_t back = encode(*f, v, ov);
        if (is_nan_code(*f, b)) {
          ASSERT_TRUE(std::isnan(v)) << f->name << " " << b;
          ASSERT_EQ(back, f->nan_code) << f->name << " " << b;
          ++nans;
        } else if (f->has_inf && (b & ~(1u << (f->total_bits - 1))) == f->inf_code) {
          ASSERT_TRUE(std::isinf(v));
          const uint32_t sign = b & (1u << (f->total_bits - 1));
          ASSERT_EQ(back, ov == Overflow::ieee ? b : (sign | f->max_code));
        } else {
          ASSERT_EQ(back, b) << f->name << " pattern " << b << " value " << v;
          // encode_f64 of the exact value is the same pattern.
          ASSERT_EQ(encode_f64(*f, double(v), ov), b) << f->name << " " << b;
          ++checked;
        }
      }
    }
    std::printf("%s: %llu finite round trips, %llu NaN patterns\n", f->name,
                (unsigned long long)checked, (unsigned long long)nans);
  }
}

// ---- hand-picked values (hardware semantics, FACTS §3)
TEST(FormatsEncode, KnownValues) {
  const auto sat = Overflow::satfinite, ieee = Overflow::ieee;
  EXPECT_EQ(encode(kE4M3, 448.0f, sat), 0x7Eu);
  EXPECT_EQ(encode(kE4M3, 463.99f, sat), 0x7Eu);
  EXPECT_EQ(encode(kE4M3, 464.0f, ieee), 0x7Eu);  // tie 448 | 480 -> even 448
  EXPECT_EQ(encode(kE4M3, 464.01f, ieee), 0x7Fu);  // rounds to 480 -> overflow -> NaN
  EXPECT_EQ(encode(kE4M3, 4096.0f, sat), 0x7Eu);
  EXPECT_EQ(encode(kE4M3, -4096.0f, sat), 0xFEu);
  EXPECT_EQ(encode(kE4M3, INFINITY, sat), 0x7Eu);
  EXPECT_EQ(encode(kE4M3, -INFINITY, sat), 0xFEu);
  EXPECT_EQ(encode(kE4M3, NAN, sat), 0x7Fu);
  EXPECT_EQ(encode(kE4M3, -NAN, ieee), 0x7Fu);
  EXPECT_EQ(encode(kE5M2, 57344.0f, sat), 0x7Bu);
  EXPECT_EQ(encode(kE5M2, 1e6f, ieee), 0x7Cu);
  EXPECT_EQ(encode(kE5M2, -1e6f, ieee), 0xFCu);
  EXPECT_EQ(encode(kE5M2, NAN, sat), 0x7Fu);
  EXPECT_EQ(encode(kBF16, NAN, sat), 0x7FFFu);
  EXPECT_EQ(encode(kBF16, 1.0f, sat), 0x3F80u);
  EXPECT_EQ(encode(kBF16, INFINITY, ieee), 0x7F80u);
  EXPECT_EQ(encode(kBF16, INFINITY, sat), 0x7F7Fu);
  EXPECT_EQ(encode(kFP16, 65520.0f, ieee), 0x7C00u);  // tie 65504 | 65536 -> even -> inf
  EXPECT_EQ(encode(kFP16, 65519.99f, ieee), 0x7BFFu);
  EXPECT_EQ(encode(kFP16, 65520.0f, sat), 0x7BFFu);
  EXPECT_EQ(encode(kFP16, 0x1p-25f, sat), 0x0000u);  // half min subnormal: tie -> 0
  EXPECT_EQ(encode(kFP16, 0x1.0002p-25f, sat), 0x0001u);
  EXPECT_EQ(encode(kFP16, -0x1p-26f, sat), 0x8000u);  // keeps the sign
  EXPECT_EQ(encode(kE4M3, 0x1p-10f, sat), 0x00u);     // tie to even 0
  EXPECT_EQ(encode(kE4M3, 0x1.8p-9f, sat), 0x02u);    // 1.5 subnormal ulps: tie -> 2 (even)
  EXPECT_EQ(encode(kE4M3, 0x1.fp-7f, sat), 0x08u);    // rounds up into min normal
  EXPECT_EQ(encode(kBF16, 0x1p-149f, sat), 0x0000u);  // f32 subnormals are not flushed...
  EXPECT_EQ(encode(kBF16, 0x1p-133f, sat), 0x0001u);  // ...min bf16 subnormal
  EXPECT_EQ(encode(kFP32, -1.5f, sat), f32_bits(-1.5f));
  EXPECT_EQ(encode(kFP32, NAN, sat), 0x7FFFFFFFu);
}

TEST(FormatsEncode, StochasticRoundingIsUnbiased) {
  // 1 + 0.25 ulp of e4m3 (ulp at 1 is 2^-3): rounds up with probability 1/4.
  const float x = 1.0f + 0x1p-5f;
  int up = 0;
  const int n = 1 << 16;
  for (int i = 0; i < n; ++i) {
    const uint32_t b = encode_sr(kE4M3, x, Overflow::satfinite, sr_random_bits(42, uint64_t(i)));
    ASSERT_TRUE(b == 0x38u || b == 0x39u) << b;
    up += b == 0x39u;
  }
  EXPECT_NEAR(double(up) / n, 0.25, 0.01);
  // Exact values never move.
  for (int i = 0; i < 1000; ++i)
    ASSERT_EQ(encode_sr(kE4M3, 1.125f, Overflow::satfinite, sr_random_bits(1, uint64_t(i))), 0x39u);
}

}  // namespace
}  // namespace fa4sim
