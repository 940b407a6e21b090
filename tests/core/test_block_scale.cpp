// test_block_scale.cpp: the block quantisers of include/fa4sim/core/block_scale.h.
//
// Fast: each scale rule on hand-worked blocks (the arithmetic in the comments), the special
// blocks (all zero, NaN, inf, subnormal-only), decode(encode) on random blocks within the
// element format's error bound, the shell's validation (each bad block format names its option).
// The bit-exact comparison with torchao's reference code is scripts/check/check_block_scale.py.
#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "fa4sim/core/block_scale.h"
#include "fa4sim/util/error.h"

namespace fa4sim {
namespace {

BlockFormat mx(const Format& elem, ScaleRule rule) { return {&elem, &kE8M0, 32, rule, 1.0f}; }

std::vector<float> block_with_amax(float amax, int n = 32) {
  std::vector<float> x(size_t(n), amax * 0.25f);
  x[3] = -amax;
  return x;
}

uint32_t scale_of(const BlockFormat& f, const std::vector<float>& x) {
  std::vector<uint32_t> c(x.size());
  return block_encode(f, x.data(), c.data());
}

TEST(BlockScale, MxRulesOnHandValues) {
  // amax = 3.0 = 1.5 * 2^1; E4M3's largest power of two is 2^8, max 448.
  const auto x = block_with_amax(3.0f);
  EXPECT_EQ(scale_of(mx(kE4M3, ScaleRule::floor), x), uint32_t(127 + 1 - 8));  // 2^(1-8)
  EXPECT_EQ(scale_of(mx(kE4M3, ScaleRule::ceil), x), uint32_t(127 + 2 - 8));   // mantissa != 0
  // even: 1.5 rounded to E4M3's 3 mantissa bits stays 1.5 -> floor 2^1.
  EXPECT_EQ(scale_of(mx(kE4M3, ScaleRule::even), x), uint32_t(127 + 1 - 8));
  // rceil: 3 / 448 = 0.0066964... = 1.714 * 2^-8 -> up to 2^-7.
  EXPECT_EQ(scale_of(mx(kE4M3, ScaleRule::rceil), x), uint32_t(127 - 7));
  // E2M1 (max 6 = 1.5 * 2^2): amax 3.875 = 1.9375 * 2^1: even rounds 1.9375 to 1 mantissa bit
  // -> 2.0 -> 2^2, floor 2^1; scale 2^(2-2) and 2^(1-2).
  const auto y = block_with_amax(3.875f);
  EXPECT_EQ(scale_of(mx(kE2M1, ScaleRule::even), y), 127u);
  EXPECT_EQ(scale_of(mx(kE2M1, ScaleRule::floor), y), 126u);
  // rceil: 3.875 / 6 = 0.6458 -> 2^0 = code 127; ceil: 2^2 / 2^2 -> 127.
  EXPECT_EQ(scale_of(mx(kE2M1, ScaleRule::rceil), y), 127u);
  EXPECT_EQ(scale_of(mx(kE2M1, ScaleRule::ceil), y), 127u);
}

TEST(BlockScale, EvenAmaxRoundingUpTo2Pow128HasAFiniteScale) {
  // amax = FLT_MAX = (2 - 2^-23) 2^127 rounds to E4M3's 3 mantissa bits as 2^128: floor log2 128,
  // scale 2^(128 - 8) (the exact rule; torchao 0.18.0 gives 0xF7 too), not the NaN scale; the
  // block's largest element is FLT_MAX * 2^-120 = 256 - 2^-16, which rounds to 256.
  auto x = block_with_amax(std::numeric_limits<float>::max());
  std::vector<uint32_t> c(32);
  EXPECT_EQ(block_encode(mx(kE4M3, ScaleRule::even), x.data(), c.data()), uint32_t(127 + 128 - 8));
  for (uint32_t v : c) EXPECT_NE(v & 0x7Fu, 0x7Fu);  // no NaN code
  EXPECT_EQ(c[3] & 0x7Fu, encode(kE4M3, 256.0f, Overflow::satfinite));
  // E2M1 (1 mantissa bit, emax 2): the same amax gives 2^126.
  EXPECT_EQ(block_encode(mx(kE2M1, ScaleRule::even), x.data(), c.data()), uint32_t(127 + 126));
}

TEST(BlockScale, FloorSaturatesAndRceilDoesNot) {
  // amax = 7.5 = 1.875 * 2^2 in E2M1 blocks: floor's scale 2^(2-2) leaves 7.5, which saturates
  // to 6; rceil's 7.5 / 6 = 1.25 -> 2^1 gives 3.75, nearer E2M1's 4 than its 3.
  auto x = block_with_amax(7.5f);
  std::vector<uint32_t> c(32);
  EXPECT_EQ(block_encode(mx(kE2M1, ScaleRule::floor), x.data(), c.data()), 127u);
  EXPECT_EQ(c[3], 0xFu);  // -6
  EXPECT_EQ(block_encode(mx(kE2M1, ScaleRule::rceil), x.data(), c.data()), 128u);
  EXPECT_EQ(c[3], 0xEu);  // -4: decoded -8
}

TEST(BlockScale, SpecialBlocks) {
  std::vector<uint32_t> c(32);
  std::vector<float> out(32);
  std::vector<float> zero(32, 0.0f);
  for (ScaleRule r : {ScaleRule::floor, ScaleRule::ceil, ScaleRule::even, ScaleRule::rceil}) {
    const BlockFormat f = mx(kE2M1, r);
    EXPECT_EQ(block_encode(f, zero.data(), c.data()), 0u);  // 2^-127, every code 0
    for (uint32_t v : c) EXPECT_EQ(v, 0u);
    auto x = block_with_amax(1.0f);
    x[7] = NAN;
    const uint32_t s = block_encode(f, x.data(), c.data());
    EXPECT_EQ(s, 0xFFu);
    block_decode(f, s, c.data(), out.data());
    for (float v : out) EXPECT_TRUE(std::isnan(v));
    x[7] = -INFINITY;
    EXPECT_EQ(block_encode(f, x.data(), c.data()), 0xFFu);
  }
  // Subnormal-only: amax = 2^-140 has exponent field 0 -> floor counts it as 2^-127.
  std::vector<float> sub(32, 0x1p-140f);
  EXPECT_EQ(block_encode(mx(kE4M3, ScaleRule::floor), sub.data(), c.data()), 0u);
  // NVFP4: inf -> scale 448 (0x7E), the inf element -> +-6; NaN -> scale NaN (0x7F).
  BlockFormat nv = block_format_by_name("nvfp4");
  std::vector<float> y(16, 1.0f);
  y[2] = INFINITY;
  EXPECT_EQ(block_encode(nv, y.data(), c.data()), 0x7Eu);
  EXPECT_EQ(c[2], 0x7u);
  y[2] = NAN;
  EXPECT_EQ(block_encode(nv, y.data(), c.data()), 0x7Fu);
}

TEST(BlockScale, Nvfp4OnHandValues) {
  // amax 6 -> 6 / 6 = 1 -> E4M3 1.0 (0x38); elements x / 1.
  BlockFormat nv = block_format_by_name("nvfp4");
  std::vector<float> x(16, 0.5f);
  x[0] = 6.0f;
  std::vector<uint32_t> c(16);
  EXPECT_EQ(block_encode(nv, x.data(), c.data()), 0x38u);
  EXPECT_EQ(c[0], 0x7u);
  EXPECT_EQ(c[1], 0x1u);
  // amax 1e-6: 1e-6 / 6 is below 2^-6 -> clamped to 2^-6 (0x08); everything flushes to 0.
  std::fill(x.begin(), x.end(), 1e-6f);
  EXPECT_EQ(block_encode(nv, x.data(), c.data()), 0x08u);
  EXPECT_EQ(c[0], 0u);
  // Two-level: tensor scale 1/64: bs = 6/6 = 1, 1 / (1/64) = 64 = 2^6 -> E4M3 0x68.
  nv.tensor_scale = 1.0f / 64;
  x[0] = 6.0f;
  EXPECT_EQ(block_encode(nv, x.data(), c.data()), 0x68u);
  EXPECT_EQ(c[0], 0x7u);
  std::vector<float> out(16);
  block_decode(nv, 0x68u, c.data(), out.data());
  EXPECT_EQ(out[0], 6.0f);
}

// decode(encode(x)) within the element's relative error on random blocks without saturation
// (rceil: no element exceeds max_elem): |err| <= half an element ulp at the block's scale.
TEST(BlockScale, RoundTripErrorBound) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  for (const Format* e : {&kE4M3, &kE5M2, &kE2M3, &kE3M2, &kE2M1}) {
    const BlockFormat f = mx(*e, ScaleRule::rceil);
    std::vector<float> x(32), out(32);
    std::vector<uint32_t> c(32);
    for (int t = 0; t < 2000; ++t) {
      for (float& v : x) v = nd(rng);
      const uint32_t s = block_encode(f, x.data(), c.data());
      block_decode(f, s, c.data(), out.data());
      const double scale = decode(kE8M0, s);
      for (int i = 0; i < 32; ++i) {
        const double a = std::fabs(x[size_t(i)]) / scale;
        const double ulp = std::ldexp(
            1.0, std::max(int(std::floor(std::log2(std::max(a, 1e-300)))), e->emin) - e->man_bits);
        ASSERT_LE(std::fabs(out[size_t(i)] - x[size_t(i)]), 0.5 * ulp * scale * (1 + 1e-12) + 1e-30)
            << e->name << " " << x[size_t(i)];
      }
    }
  }
}

TEST(BlockScale, ValidationNamesTheOption) {
  auto expect_error = [](BlockFormat f, const std::string& needle) {
    try {
      validate_block_format(f);
      FAIL() << "no error for " << needle;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error({&kBF16, &kE8M0, 32, ScaleRule::floor, 1.0f}, "--elem bf16");
  expect_error({&kE2M1, &kE4M3, 32, ScaleRule::floor, 1.0f}, "--scale-format e4m3 cannot hold");
  expect_error({&kE2M1, &kE8M0, 16, ScaleRule::nearest, 1.0f}, "--scale-format e8m0 cannot hold");
  expect_error({&kE2M1, &kBF16, 16, ScaleRule::nearest, 1.0f}, "--scale-format bf16");
  expect_error({&kE2M1, &kE8M0, 0, ScaleRule::floor, 1.0f}, "--block 0");
  expect_error({&kE2M1, &kE8M0, 32, ScaleRule::floor, 0.5f}, "--tensor-scale");
  expect_error({&kE2M1, &kE4M3, 16, ScaleRule::nearest, -1.0f}, "--tensor-scale");
  EXPECT_THROW(scale_rule_by_name("flor"), Error);
  EXPECT_THROW(block_format_by_name("mxfp5"), Error);
  std::vector<float> in(48, 1.0f);
  std::vector<uint8_t> codes(48), scales(1);
  try {
    block_encode_array(mx(kE2M1, ScaleRule::floor), in, 48, codes, scales);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--block 32 does not divide the row length 48"),
              std::string::npos);
  }
}

}  // namespace
}  // namespace fa4sim

namespace fa4sim {
namespace {

// The array loop (compile-time element formats) equals block_encode block for block, on
// random bit patterns (NaN and inf included) and on normal values, for every element x rule.
TEST(BlockScale, ArraysEqualTheCore) {
  std::mt19937 rng(9);
  std::normal_distribution<float> nd;
  std::vector<float> in(64 * 32);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = i < in.size() / 2 ? f32_from_bits(rng()) : nd(rng) * 1e3f;
  for (const Format* e : {&kE4M3, &kE5M2, &kE2M3, &kE3M2, &kE2M1}) {
    for (ScaleRule r : {ScaleRule::floor, ScaleRule::ceil, ScaleRule::even, ScaleRule::rceil,
                        ScaleRule::nearest}) {
      BlockFormat f{e, r == ScaleRule::nearest ? &kE4M3 : &kE8M0, r == ScaleRule::nearest ? 16 : 32,
                    r, 1.0f};
      if (r == ScaleRule::nearest && e == &kE2M3) f.tensor_scale = 0x1p-10f;
      std::vector<uint8_t> codes(in.size()), scales(in.size() / size_t(f.block_size));
      block_encode_array(f, in, 256, codes, scales);
      std::vector<uint32_t> c(size_t(f.block_size));
      for (size_t b = 0; b < scales.size(); ++b) {
        ASSERT_EQ(scales[b], block_encode(f, in.data() + b * size_t(f.block_size), c.data()))
            << e->name << b;
        for (size_t i = 0; i < c.size(); ++i)
          ASSERT_EQ(codes[b * c.size() + i], c[i]) << e->name << b;
      }
    }
  }
}

// block_round is block_encode then block_decode per block, a partial last block padded with
// zeros; its saturation count is the floor rule's clipped block maxima.
TEST(BlockScale, BlockRoundIsEncodeThenDecode) {
  std::mt19937 rng(5);
  std::normal_distribution<float> nd;
  std::vector<float> x(100);
  for (float& v : x) v = nd(rng);
  for (const BlockFormat& f : {mx(kE2M1, ScaleRule::floor), mx(kE4M3, ScaleRule::rceil),
                               BlockFormat{&kE2M1, &kE4M3, 16, ScaleRule::nearest, 1.0f}}) {
    std::vector<float> out(x.size());
    block_round(f, x.data(), x.size(), out.data());
    const size_t bs = size_t(f.block_size);
    for (size_t b = 0; b < x.size(); b += bs) {
      std::vector<float> blk(bs, 0.0f), dec(bs);
      std::vector<uint32_t> c(bs);
      for (size_t i = 0; i < bs && b + i < x.size(); ++i) blk[i] = x[b + i];
      block_decode(f, block_encode(f, blk.data(), c.data()), c.data(), dec.data());
      for (size_t i = 0; i < bs && b + i < x.size(); ++i)
        ASSERT_EQ(f32_bits(out[b + i]), f32_bits(dec[i])) << b + i;
    }
  }
  // amax 7.5 = 1.875 x 4: floor's scale 1 leaves 7.5 beyond E2M1's 6 (clipped, counted); rceil's
  // scale 2 holds it (7.5 / 2 = 3.75 rounds to 4: no clip).
  std::vector<float> y = block_with_amax(7.5f), o(y.size());
  EXPECT_EQ(block_round(mx(kE2M1, ScaleRule::floor), y.data(), y.size(), o.data()), 1u);
  EXPECT_EQ(o[3], -6.0f);
  EXPECT_EQ(block_round(mx(kE2M1, ScaleRule::rceil), y.data(), y.size(), o.data()), 0u);
  EXPECT_EQ(o[3], -8.0f);
}

}  // namespace
}  // namespace fa4sim
