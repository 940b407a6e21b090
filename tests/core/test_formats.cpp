// test_formats.cpp: the number formats of include/fa4sim/core/formats.h.
//
// Fast: derived limits against docs/facts.md §3, all 256 / 65,536 decode -> encode round trips,
// hand-picked hardware values, cpfloat-style triples (every value, every midpoint, the floats
// just above and below it) per format x sign x overflow mode, stochastic rounding, arrays,
// name lookup.
// Slow: all 2^32 float32 inputs per format x overflow mode against the independent table
// reference of formats_ref.h (0 mismatches allowed: the tolerance of an _emu is 0 bits).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "fa4sim/util/error.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/ref/formats_ref.h"

namespace fa4sim {
namespace {

const Format* const kNarrow[] = {&kBF16, &kFP16, &kE4M3, &kE5M2};

// ---- derived limits (docs/facts.md §3 table)
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
  EXPECT_NEAR(kE4M3.log2_max, 8.807354922057604, 1e-15);  // docs/facts.md §2: log2(448) = 8.807
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

// ---- hand-picked values (hardware semantics, docs/facts.md §3)
TEST(FormatsEncode, KnownValues) {
  const auto sat = Overflow::satfinite, ieee = Overflow::ieee;
  EXPECT_EQ(encode(kE4M3, 448.0f, sat), 0x7Eu);
  EXPECT_EQ(encode(kE4M3, 463.99f, sat), 0x7Eu);
  EXPECT_EQ(encode(kE4M3, 464.0f, ieee), 0x7Eu);   // tie 448 | 480 -> even 448
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

// ---- cpfloat-style triples. For every finite non-negative value v_i of the format (code i) and
// the next value up v_{i+1} (for the top one: the value an unbounded exponent would give,
// max + ulp), with m = (v_i + v_{i+1}) / 2 (a float32 for every format here):
//   v_i -> i;  nextbelow(m) -> i;  m -> the even one of i, i+1;  nextabove(m) -> i + 1;
// where i + 1 > max_code means overflow (satfinite: max; ieee: inf or, for E4M3FN, NaN), and
// negative inputs give the same codes with the sign bit.
TEST(FormatsEncode, CpfloatTriples) {
  for (const Format* f : kNarrow) {
    const uint32_t sign_bit = 1u << (f->total_bits - 1);
    uint64_t checks = 0;
    for (Overflow ov : {Overflow::satfinite, Overflow::ieee}) {
      for (bool neg : {false, true}) {
        auto expect_code = [&](uint32_t code) -> uint32_t {
          const uint32_t s = neg ? sign_bit : 0u;
          if (code <= f->max_code) return s | code;
          if (ov == Overflow::satfinite) return s | f->max_code;
          return f->has_inf ? (s | f->inf_code) : f->nan_code;
        };
        for (uint32_t i = 0; i <= f->max_code; ++i) {
          const double v = decode(*f, i);
          const double next =
              i < f->max_code ? double(decode(*f, i + 1)) : v + (v - double(decode(*f, i - 1)));
          const double mid_d = (v + next) / 2;
          const float mid = float(mid_d);
          ASSERT_EQ(double(mid), mid_d) << f->name << " midpoint not a float32 at code " << i;
          const float sg = neg ? -1.0f : 1.0f;
          const uint32_t even = (i & 1u) ? i + 1 : i;
          ASSERT_EQ(encode(*f, sg * float(v), ov), expect_code(i)) << f->name << " value " << v;
          ASSERT_EQ(encode(*f, sg * std::nextafter(mid, 0.0f), ov), expect_code(i))
              << f->name << " below mid " << mid_d;
          ASSERT_EQ(encode(*f, sg * mid, ov), expect_code(even)) << f->name << " mid " << mid_d;
          ASSERT_EQ(encode(*f, sg * std::nextafter(mid, INFINITY), ov), expect_code(i + 1))
              << f->name << " above mid " << mid_d;
          // The double path agrees on these exact values.
          ASSERT_EQ(encode_f64(*f, double(sg) * mid_d, ov), expect_code(even)) << f->name;
          checks += 5;
        }
      }
    }
    std::printf("%s: %llu triple checks\n", f->name, (unsigned long long)checks);
  }
}

// encode_f64 rounds once: a double just above a midpoint whose float32 rounding lands exactly
// on the midpoint must still round up (through float32 it would tie to even, down).
TEST(FormatsEncode, F64RoundsOnce) {
  const double mid = 1.0 + 0x1p-8;  // bf16 midpoint between 1 and 1 + 2^-7 (code 0x3F80, even)
  const double above = mid + 0x1p-40;
  EXPECT_EQ(float(above), float(mid));
  EXPECT_EQ(encode(kBF16, float(above), Overflow::satfinite), 0x3F80u);
  EXPECT_EQ(encode_f64(kBF16, above, Overflow::satfinite), 0x3F81u);
  EXPECT_EQ(encode_f64(kBF16, mid, Overflow::satfinite), 0x3F80u);
  EXPECT_EQ(encode_f64(kE4M3, 1e300, Overflow::satfinite), 0x7Eu);
  EXPECT_EQ(encode_f64(kE4M3, -1e300, Overflow::ieee), 0x7Fu);
  EXPECT_EQ(encode_f64(kFP16, 1e-300, Overflow::ieee), 0x0000u);
  EXPECT_EQ(encode_f64(kFP16, -1e-300, Overflow::ieee), 0x8000u);
  EXPECT_EQ(encode_f64(kBF16, std::nan(""), Overflow::ieee), 0x7FFFu);
  EXPECT_EQ(encode_f64(kFP32, 0x1.000001p0, Overflow::ieee), f32_bits(1.0f));  // below half ulp
  // Random doubles: the same as the table reference's nearest value in double arithmetic.
  std::mt19937_64 rng(7);
  for (const Format* f : kNarrow) {
    const FormatTableRef ref(*f);
    std::uniform_real_distribution<double> u(-1.2 * f->max_finite, 1.2 * f->max_finite);
    for (int k = 0; k < 20000; ++k) {
      const double x = k % 2 ? u(rng) : u(rng) * f->min_normal;  // big ones and tiny ones
      uint32_t hint = 0;
      const uint32_t code = ref.nearest_code(std::fabs(x), hint);
      ASSERT_EQ(encode_f64(*f, x, Overflow::ieee),
                ref.apply_sign_and_limits(code, x < 0, Overflow::ieee))
          << f->name << " x=" << x;
    }
  }
}

TEST(FormatsEncode, Fp32IsIdentityOnNumbers) {
  std::mt19937 rng(3);
  for (int k = 0; k < 1000000; ++k) {
    const uint32_t b = rng();
    const float x = f32_from_bits(b);
    const uint32_t sat = encode(kFP32, x, Overflow::satfinite),
                   ieee = encode(kFP32, x, Overflow::ieee);
    if (std::isnan(x)) {
      ASSERT_EQ(sat, 0x7FFFFFFFu);
      ASSERT_EQ(ieee, 0x7FFFFFFFu);
    } else if (std::isinf(x)) {
      ASSERT_EQ(sat, (b & 0x80000000u) | 0x7F7FFFFFu);
      ASSERT_EQ(ieee, b);
    } else {
      ASSERT_EQ(sat, b);
      ASSERT_EQ(ieee, b);
      ASSERT_EQ(f32_bits(decode(kFP32, b)), b);
    }
  }
}

// ---- stochastic rounding: exact values stay, the rest go to one of the two neighbours with
// probability proportional to closeness (checked on a few fractions), reproducible by seed.
TEST(FormatsEncode, StochasticRoundingNeighboursAndRates) {
  std::mt19937 rng(11);
  for (const Format* f : kNarrow) {
    for (int k = 0; k < 20000; ++k) {
      const float x = f32_from_bits(rng() & 0x7FFFFFFFu);
      if (!std::isfinite(x) || double(x) >= f->max_finite) continue;
      const uint32_t r = encode_sr(*f, x, Overflow::satfinite, rng());
      const double lo = decode(*f, r), v = x;
      // The result brackets x with its neighbour: decode(r) is the value below or above x.
      const uint32_t down = encode_f64(*f, v, Overflow::satfinite);
      const double dv = decode(*f, down);
      const uint32_t other = dv <= v ? down + 1 : down - 1;
      ASSERT_TRUE(r == down || r == other) << f->name << " x=" << x << " got " << lo;
      if (dv == v) {
        ASSERT_EQ(r, down) << "exact values never move";
      }
    }
  }
  // Rate at 3/8 of an fp16 ulp above 1 (ulp 2^-10).
  const float x = 1.0f + 3 * 0x1p-13f;
  int up = 0;
  const int n = 1 << 18;
  for (int i = 0; i < n; ++i)
    up += encode_sr(kFP16, x, Overflow::satfinite, sr_random_bits(99, uint64_t(i))) == 0x3C01u;
  // Binomial sd = sqrt(n p (1-p)) ~ 248; 6 sd = 0.0057 in rate.
  EXPECT_NEAR(double(up) / n, 0.375, 0.006);
  // Tiny values far below the min subnormal still round up sometimes, at the right rate:
  // e4m3 min subnormal 2^-9; x = 2^-9 / 64 rounds up with probability 1/64.
  up = 0;
  for (int i = 0; i < n; ++i)
    up += encode_sr(kE4M3, 0x1p-15f, Overflow::satfinite, sr_random_bits(5, uint64_t(i))) == 0x01u;
  EXPECT_NEAR(double(up) / n, 1.0 / 64, 0.0015);
}

// ---- arrays: element-wise equal to the scalar functions (fast paths and a runtime format).
TEST(FormatsArrays, MatchScalar) {
  std::mt19937 rng(5);
  std::vector<float> in(100000);
  for (auto& x : in) x = f32_from_bits(rng());
  const Format custom = make_format("e3m2", 3, 2, 3, true, NanEncoding::ieee);  // FP6-like
  EXPECT_TRUE(validate(custom).empty());
  for (const Format* f : {&kFP32, &kBF16, &kFP16, &kE4M3, &kE5M2, &custom}) {
    for (Overflow ov : {Overflow::satfinite, Overflow::ieee}) {
      std::vector<uint32_t> out(in.size());
      std::vector<float> q(in.size()), back(in.size());
      encode_array(*f, in, out, ov);
      quantize_array(*f, in, q, ov);
      decode_array(*f, out, back);
      for (size_t i = 0; i < in.size(); ++i) {
        ASSERT_EQ(out[i], encode(*f, in[i], ov)) << f->name << " " << i;
        ASSERT_EQ(f32_bits(q[i]), f32_bits(quantize(*f, in[i], ov))) << f->name;
        ASSERT_EQ(f32_bits(back[i]), f32_bits(q[i])) << f->name;
      }
      if (f->total_bits <= 16) {
        std::vector<uint16_t> o16(in.size());
        encode_array(*f, in, o16, ov);
        for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(o16[i], out[i]);
      }
      if (f->total_bits <= 8) {
        std::vector<uint8_t> o8(in.size());
        encode_array(*f, in, o8, ov);
        for (size_t i = 0; i < in.size(); ++i) ASSERT_EQ(o8[i], out[i]);
      }
    }
  }
  // Stochastic arrays: one call equals two calls split at any index.
  std::vector<uint32_t> whole(in.size()), split(in.size());
  encode_sr_array(kE4M3, in, whole, Overflow::satfinite, 1234);
  const size_t cut = 31337;
  encode_sr_array(kE4M3, std::span(in).first(cut), std::span(split).first(cut), Overflow::satfinite,
                  1234, 0);
  encode_sr_array(kE4M3, std::span(in).subspan(cut), std::span(split).subspan(cut),
                  Overflow::satfinite, 1234, cut);
  EXPECT_EQ(whole, split);
  std::vector<uint32_t> other(in.size());
  encode_sr_array(kE4M3, in, other, Overflow::satfinite, 1235);
  EXPECT_NE(whole, other) << "the seed changes the stream";
}

TEST(FormatsArrays, BadArguments) {
  std::vector<float> in(4, 1.0f);
  std::vector<uint32_t> out(3);
  EXPECT_THROW(encode_array(kE4M3, in, out, Overflow::satfinite), Error);
  std::vector<uint8_t> o8(4);
  EXPECT_THROW(encode_array(kBF16, in, o8, Overflow::satfinite), Error);
  Format broken = make_format("broken", 9, 23, 255, true, NanEncoding::ieee);  // wider than fp32
  EXPECT_FALSE(validate(broken).empty());
  std::vector<uint32_t> out4(4);
  EXPECT_THROW(encode_array(broken, in, out4, Overflow::satfinite), Error);
  Format tampered = kE4M3;
  tampered.max_code = 0x7F;
  EXPECT_FALSE(validate(tampered).empty());
}

TEST(FormatsNames, LookupAndSuggestions) {
  EXPECT_EQ(&format_by_name("e4m3"), &kE4M3);
  EXPECT_EQ(&format_by_name("float8_e4m3fn"), &kE4M3);
  EXPECT_EQ(&format_by_name("bfloat16"), &kBF16);
  EXPECT_EQ(&format_by_name("fp32"), &kFP32);
  try {
    format_by_name("e4m2");
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string w = e.what();
    EXPECT_NE(w.find("unknown dtype 'e4m2'"), std::string::npos) << w;
    EXPECT_NE(w.find("did you mean"), std::string::npos) << w;
    EXPECT_NE(w.find("fp32, bf16, fp16, e4m3, e5m2"), std::string::npos) << w;
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
  EXPECT_EQ(overflow_by_name("ieee"), Overflow::ieee);
  EXPECT_THROW(overflow_by_name("saturate"), Error);
  for (const Format* f : all_formats()) EXPECT_TRUE(validate(*f).empty()) << f->name;
}

// The dtype list of each role is derived from the table once; a format added to the table joins
// no role by itself (the options, the analyses and their error messages read these lists).
TEST(FormatsRoles, ListsAndOrder) {
  using V = std::vector<std::string>;
  EXPECT_EQ(format_names(FormatRole::attention_input), (V{"bf16", "fp16", "e4m3", "e5m2"}));
  EXPECT_EQ(format_names(FormatRole::p_cast), (V{"bf16", "fp16", "e4m3", "e5m2", "fp32"}));
  for (const Format* f : formats_of(FormatRole::p_cast))
    EXPECT_NE(std::find(all_formats().begin(), all_formats().end(), f), all_formats().end())
        << f->name;
  EXPECT_TRUE(plays(kE4M3, FormatRole::attention_input));
  EXPECT_FALSE(plays(kFP32, FormatRole::attention_input));
  EXPECT_TRUE(plays(kFP32, FormatRole::p_cast));
  // A hand-made format with a named format's parameters is not that format: roles go by identity.
  const Format copy = kE4M3;
  EXPECT_FALSE(plays(copy, FormatRole::attention_input));
}

// ---- the reference itself, on values whose answers are known by hand
TEST(FormatsRef, HandValues) {
  const FormatTableRef e4(kE4M3);
  EXPECT_EQ(e4.values().size(), 127u + 1u);  // 0x00..0x7E, then the phantom 480
  EXPECT_EQ(e4.values().back(), 480.0);
  EXPECT_EQ(e4.encode_ref(464.0f, Overflow::ieee), 0x7Eu);
  EXPECT_EQ(e4.encode_ref(465.0f, Overflow::ieee), 0x7Fu);
  EXPECT_EQ(e4.encode_ref(-465.0f, Overflow::satfinite), 0xFEu);
  EXPECT_EQ(e4.encode_ref(0x1p-10f, Overflow::ieee), 0x00u);
  const FormatTableRef h(kFP16);
  EXPECT_EQ(h.encode_ref(65520.0f, Overflow::ieee), 0x7C00u);
  EXPECT_EQ(h.encode_ref(-INFINITY, Overflow::ieee), 0xFC00u);
  EXPECT_EQ(h.encode_ref(NAN, Overflow::satfinite), 0x7FFFu);
}

// ---- Slow: every float32 input, per format and overflow mode, against the table reference.
class FormatsSlow : public ::testing::TestWithParam<std::tuple<const Format*, Overflow>> {};

TEST_P(FormatsSlow, AllFloat32MatchTableReference) {
  const auto [f, ov] = GetParam();
  const SweepResult r = sweep_all_float32(*f, ov, 0, true);
  std::printf("%s %s: %llu inputs, %llu mismatches, %.1f s on %d threads\n", r.format.c_str(),
              overflow_name(ov), (unsigned long long)r.inputs, (unsigned long long)r.mismatches,
              r.seconds, r.threads);
  for (const auto& m : r.first)
    std::printf("  input 0x%08X (%.9g): reference 0x%X, encode 0x%X\n", m.input_bits,
                double(f32_from_bits(m.input_bits)), m.expected, m.actual);
  EXPECT_EQ(r.inputs, uint64_t(1) << 32);
  EXPECT_EQ(r.mismatches, 0u);
}

INSTANTIATE_TEST_SUITE_P(AllFormats, FormatsSlow,
                         ::testing::Combine(::testing::Values(&kBF16, &kFP16, &kE4M3, &kE5M2),
                                            ::testing::Values(Overflow::satfinite, Overflow::ieee)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)->name) + "_" +
                                  overflow_name(std::get<1>(info.param));
                         });

}  // namespace
}  // namespace fa4sim

// ---- the OCP MX formats: E2M1, E2M3, E3M2 (no inf, no NaN) and E8M0 (the unsigned scale)
namespace fa4sim {
namespace mx {

const Format* const kMxElems[] = {&kE2M1, &kE2M3, &kE3M2};

TEST(FormatsMx, Limits) {
  // OCP MX v1.0 table 1: max normal 6, 7.5, 28; min subnormal 0.5, 0.125, 0.0625.
  EXPECT_EQ(kE2M1.max_finite, 6.0);
  EXPECT_EQ(kE2M3.max_finite, 7.5);
  EXPECT_EQ(kE3M2.max_finite, 28.0);
  EXPECT_EQ(kE2M1.min_normal, 1.0);
  EXPECT_EQ(kE3M2.min_normal, 0.25);
  for (const Format* f : kMxElems) {
    EXPECT_EQ(double(decode(*f, f->max_code)), f->max_finite) << f->name;
    EXPECT_EQ(double(decode(*f, 1)), f->min_subnormal) << f->name;
    EXPECT_FALSE(is_nan_code(*f, f->max_code)) << f->name;
    EXPECT_NEAR(f->log2_max, std::log2(f->max_finite), 4e-15) << f->name;
  }
  EXPECT_EQ(kE8M0.max_finite, std::ldexp(1.0, 127));
  EXPECT_EQ(kE8M0.min_normal, std::ldexp(1.0, -127));
  EXPECT_EQ(decode(kE8M0, 0x00), std::ldexp(1.0f, -127));  // the float32 subnormal 0x00400000
  EXPECT_EQ(decode(kE8M0, 0x7F), 1.0f);
  EXPECT_EQ(decode(kE8M0, 0xFE), std::ldexp(1.0f, 127));
  EXPECT_TRUE(std::isnan(decode(kE8M0, 0xFF)));
  for (const Format* f : {&kE2M1, &kE2M3, &kE3M2, &kE8M0})
    EXPECT_TRUE(validate(*f).empty()) << f->name;
}

// Every pattern decodes to a number that encodes back to the pattern (E8M0: 0xFF is NaN).
TEST(FormatsMx, AllPatternsRoundTrip) {
  for (const Format* f : {&kE2M1, &kE2M3, &kE3M2, &kE8M0}) {
    for (uint32_t b = 0; b < (1u << f->total_bits); ++b) {
      const float v = decode(*f, b);
      if (f == &kE8M0 && b == 0xFF) {
        ASSERT_TRUE(std::isnan(v));
        continue;
      }
      ASSERT_FALSE(std::isnan(v)) << f->name << " " << b;
      ASSERT_EQ(encode(*f, v, Overflow::satfinite), b) << f->name << " " << b;
      ASSERT_EQ(encode_f64(*f, double(v), Overflow::satfinite), b) << f->name << " " << b;
    }
  }
}

TEST(FormatsMx, KnownValues) {
  const auto sat = Overflow::satfinite, ieee = Overflow::ieee;
  EXPECT_EQ(encode(kE2M1, 0.25f, sat), 0x0u);  // tie 0 | 0.5 -> even 0
  EXPECT_EQ(encode(kE2M1, 0.75f, sat), 0x2u);  // tie 0.5 | 1 -> even 1.0
  EXPECT_EQ(encode(kE2M1, 5.0f, sat), 0x6u);   // tie 4 | 6 -> even 4
  EXPECT_EQ(encode(kE2M1, 6.9f, sat), 0x7u);   // 6
  EXPECT_EQ(encode(kE2M1, 7.0f, sat), 0x7u);   // tie 6 | 8 rounds to 8: saturates to 6
  EXPECT_EQ(encode(kE2M1, -1e30f, sat), 0xFu);
  EXPECT_EQ(encode(kE2M1, -INFINITY, sat), 0xFu);
  EXPECT_EQ(encode(kE2M1, NAN, sat), 0x7u);  // cvt.rn.satfinite: NaN -> +max
  EXPECT_EQ(encode(kE2M1, -NAN, sat), 0x7u);
  EXPECT_EQ(encode(kE2M1, -0.1f, sat), 0x8u);     // -0 keeps its sign
  EXPECT_EQ(encode(kE2M3, 7.75f, sat), 0x1Fu);    // beyond 7.5: saturates
  EXPECT_EQ(encode(kE3M2, 30.0f, sat), 0x1Fu);    // 28
  EXPECT_EQ(encode(kE3M2, 0.03125f, sat), 0x0u);  // half the min subnormal: tie -> 0
  // E8M0 (Note [E8M0 encode]): ties round up; zeros and negatives are NaN (ieee) or 2^-127.
  EXPECT_EQ(encode(kE8M0, 1.0f, ieee), 127u);
  EXPECT_EQ(encode(kE8M0, 1.5f, ieee), 128u);
  EXPECT_EQ(encode(kE8M0, 1.4999999f, ieee), 127u);
  EXPECT_EQ(encode(kE8M0, 3.0f, ieee), 129u);
  EXPECT_EQ(encode(kE8M0, 0x1p-127f, ieee), 0u);
  EXPECT_EQ(encode(kE8M0, 0x1.000004p-127f, ieee), 0u);  // 2^-127 + 2^-149: below 1.5 2^-127
  EXPECT_EQ(encode(kE8M0, 0x1.7ffff8p-127f, ieee), 0u);
  EXPECT_EQ(encode(kE8M0, 0x1.8p-127f, ieee), 1u);  // the tie rounds up
  EXPECT_EQ(encode_f64(kE8M0, 0x1.8p-127, ieee), 1u);
  EXPECT_EQ(encode_f64(kE8M0, 0x1.7fffffp-127, ieee), 0u);
  EXPECT_EQ(encode(kE8M0, 0x1p-149f, ieee), 0u);
  EXPECT_EQ(encode(kE8M0, 0x1.7ffffep127f, ieee), 0xFEu);
  EXPECT_EQ(encode(kE8M0, 0x1.8p127f, ieee), 0xFFu);
  EXPECT_EQ(encode(kE8M0, 0x1.8p127f, sat), 0xFEu);
  EXPECT_EQ(encode(kE8M0, INFINITY, ieee), 0xFFu);
  EXPECT_EQ(encode(kE8M0, INFINITY, sat), 0xFEu);
  EXPECT_EQ(encode(kE8M0, 0.0f, ieee), 0xFFu);
  EXPECT_EQ(encode(kE8M0, -0.0f, sat), 0x00u);
  EXPECT_EQ(encode(kE8M0, -2.0f, ieee), 0xFFu);
  EXPECT_EQ(encode(kE8M0, -2.0f, sat), 0x00u);
  EXPECT_EQ(encode(kE8M0, NAN, sat), 0xFFu);
  EXPECT_EQ(encode_f64(kE8M0, 3.0, ieee), 129u);
  EXPECT_EQ(encode_f64(kE8M0, 1e-300, sat), 0u);
  EXPECT_TRUE(rounds_beyond_max(kE2M1, 7.0f));
  EXPECT_FALSE(rounds_beyond_max(kE2M1, 6.9f));
  EXPECT_FALSE(rounds_beyond_max(kE2M1, NAN));
}

// encode_f64 of each float32 agrees with encode (the double path is the reference path).
TEST(FormatsMx, F64AgreesOnFloat32Sweep) {
  std::mt19937 rng(27);
  for (const Format* f : {&kE2M1, &kE2M3, &kE3M2, &kE8M0}) {
    for (int i = 0; i < 200000; ++i) {
      const float x = f32_from_bits(rng());
      if (std::isnan(x)) continue;
      ASSERT_EQ(encode_f64(*f, double(x), Overflow::satfinite), encode(*f, x, Overflow::satfinite))
          << f->name << " " << x;
    }
  }
}

TEST(FormatsMx, ArraysRefuseWhatTheFormatCannotDo) {
  std::vector<float> in = {1.0f, 7.0f, -NAN};
  std::vector<uint8_t> out(3);
  EXPECT_THROW(encode_array(kE2M1, in, out, Overflow::ieee), Error);  // no inf, no NaN
  std::vector<float> q(3);
  EXPECT_THROW(quantize_array(kE3M2, in, q, Overflow::ieee), Error);
  std::vector<uint32_t> o32(3);
  EXPECT_THROW(encode_sr_array(kE8M0, in, o32, Overflow::satfinite, 1), Error);
  EXPECT_THROW(encode_sr_array(kE2M1, in, o32, Overflow::satfinite, 1), Error);
  encode_array(kE2M1, in, out, Overflow::satfinite);
  EXPECT_EQ(out, (std::vector<uint8_t>{0x2, 0x7, 0x7}));
  encode_array(kE8M0, in, out, Overflow::ieee);  // E8M0 has both rules
  EXPECT_EQ(out, (std::vector<uint8_t>{127, 130, 0xFF}));
  EXPECT_EQ(&format_by_name("float4_e2m1fn"), &kE2M1);
  EXPECT_EQ(&format_by_name("float8_e8m0fnu"), &kE8M0);
}

}  // namespace mx
}  // namespace fa4sim
