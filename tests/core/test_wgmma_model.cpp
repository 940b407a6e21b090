// wgmma_dot (include/fa4sim/core/wgmma_model.h): hand-worked cases whose exact arithmetic is in
// the comments (exact sums, a product below the kept bits truncated, RZ vs RN, the zero exponent,
// renormalised products, floored alignment, two steps of 8, the FP8 E8M13 result, overflow,
// inf/NaN, signed zeros, subnormal results); every candidate set gives the exact sum where it is
// representable; and, run by name when FA4SIM_WGMMA_SAMPLE names a folder of samples
// (scripts/check/check_wgmma_mmasim.py --make, or a GPU sample from `fa4sim gpu verify --what
// wgmma --sample`), the model against every recorded D, bit for bit (tolerance 0 bits).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "fa4sim/core/formats.h"
#include "fa4sim/core/wgmma_model.h"
#include "fa4sim/util/npy.h"

using namespace fa4sim;

namespace {

constexpr WgmmaModel kBf16 = wgmma_model_hopper(WgmmaInput::bf16);
constexpr WgmmaModel kFp8 = wgmma_model_hopper(WgmmaInput::e4m3);

uint16_t bf(float x) { return uint16_t(encode(kBF16, x, Overflow::ieee)); }
uint16_t e4(float x) { return uint16_t(encode(kE4M3, x, Overflow::ieee)); }
uint32_t f(float x) { return f32_bits(x); }

// A bf16 dot product with the given nonzero (a, b) pairs at positions 0, 1, ...; the rest +0.
uint32_t dot16(const WgmmaModel& m, std::vector<std::pair<float, float>> ab, float c) {
  std::vector<uint16_t> a(16, 0), b(16, 0);
  for (size_t i = 0; i < ab.size(); ++i) {
    a[i] = bf(ab[i].first);
    b[i] = bf(ab[i].second);
  }
  return wgmma_dot(m, WgmmaInput::bf16, a.data(), b.data(), f32_bits(c));
}

WgmmaModel with_set(const char* name) {
  for (const auto& c : kWgmmaCandidates16)
    if (std::string(c.name) == name) return c.model;
  ADD_FAILURE() << name;
  return {};
}

}  // namespace

TEST(WgmmaModel, ShapesAndDefaults) {
  EXPECT_EQ(wgmma_k(WgmmaInput::bf16), 16);
  EXPECT_EQ(wgmma_k(WgmmaInput::fp16), 16);
  EXPECT_EQ(wgmma_k(WgmmaInput::e4m3), 32);
  EXPECT_EQ(wgmma_k(WgmmaInput::e5m2), 32);
  EXPECT_EQ(kBf16.frac_bits, 25);  // mmasim/nv_ptx/sim.py WGMMA: F = 25, L_max = 32 // 2
  EXPECT_EQ(kBf16.group, 16);
  EXPECT_EQ(kFp8.frac_bits, 13);  // F = 13, rho "RZ-E8M13", L_max = 32 // 1
  EXPECT_EQ(kFp8.out_frac_bits, 13);
  EXPECT_EQ(kFp8.group, 32);
  // Set 0 of each candidate list is the model.
  EXPECT_EQ(kWgmmaCandidates16[0].model.frac_bits, kBf16.frac_bits);
  EXPECT_EQ(kWgmmaCandidates8[0].model.out_frac_bits, kFp8.out_frac_bits);
}

TEST(WgmmaModel, ExactSums) {
  // 1*1 + 2*3 + (-4)*5 + 7 = -6, exactly representable: every rule gives it.
  EXPECT_EQ(dot16(kBf16, {{1, 1}, {2, 3}, {-4, 5}}, 7.0f), f(-6.0f));
  // Products that cancel exactly leave C, if C is within the kept bits: 2^10 - 2^10 + 0.75 is
  // 0.75; 2^100 - 2^100 + 0.75 is +0 (e_max = 100 keeps multiples of 2^75; the exact sum 0.75).
  EXPECT_EQ(dot16(kBf16, {{0x1p5f, 0x1p5f}, {-0x1p5f, 0x1p5f}}, 0.75f), f(0.75f));
  EXPECT_EQ(dot16(kBf16, {{0x1p50f, 0x1p50f}, {-0x1p50f, 0x1p50f}}, 0.75f), 0u);
}

TEST(WgmmaModel, ProductBelowKeptBitsIsTruncated) {
  // 2^14 - 2^14 + 2^-12: e_max = 14, F = 25 keeps down to 2^-11, so 2^-12 is lost: +0.
  const std::vector<std::pair<float, float>> ab = {
      {0x1p7f, 0x1p7f}, {-0x1p7f, 0x1p7f}, {0x1p-6f, 0x1p-6f}};
  EXPECT_EQ(dot16(kBf16, ab, 0.0f), 0u);
  // With 26 kept bits the quantum is 2^-12 and the product survives.
  EXPECT_EQ(dot16(with_set("frac-26"), ab, 0.0f), f(0x1p-12f));
}

TEST(WgmmaModel, RoundTowardZeroVsNearest) {
  // 1 + 3 * 2^-25 = 1 + 0.75 ulp(1): RZ gives 1, RNE 1 + 2^-23.
  EXPECT_EQ(dot16(kBf16, {{1, 1}}, 3 * 0x1p-25f), f(1.0f));
  EXPECT_EQ(dot16(with_set("out-rne"), {{1, 1}}, 3 * 0x1p-25f), f(1.0f) + 1);
  // Negative: -(1 + 0.75 ulp) -> -1 under RZ.
  EXPECT_EQ(dot16(kBf16, {{-1, 1}}, -3 * 0x1p-25f), f(-1.0f));
}

TEST(WgmmaModel, ZeroExponent) {
  // 2^-149 - 2^-155, 14 zero products and C = 0. A zero aligns at 2^-133, so the quantum is
  // 2^-158: -2^-155 is kept, the sum is below 2^-149 and RZ gives +0. With zeros at 2^-126 the
  // quantum is 2^-151, -2^-155 is lost and the result is 2^-149 (bits 0x00000001).
  const std::vector<std::pair<float, float>> ab = {{0x1p-23f, 0x1p-126f}, {-0x1p-29f, 0x1p-126f}};
  EXPECT_EQ(dot16(kBf16, ab, 0.0f), 0u);
  EXPECT_EQ(dot16(with_set("zero-exp-126"), ab, 0.0f), 1u);
}

TEST(WgmmaModel, ProductsAreNotRenormalised) {
  // 1.5*1.5 - 1.5*1.5 + 1.5 * 2^-25: the products have s = 2.25 at e = 0, so e_max = 0 and the
  // quantum is 2^-25: C truncates to 2^-25. Renormalised (s in [1, 2)), e_max = 1 and C is lost.
  const std::vector<std::pair<float, float>> ab = {{1.5f, 1.5f}, {-1.5f, 1.5f}};
  EXPECT_EQ(dot16(kBf16, ab, 1.5f * 0x1p-25f), f(0x1p-25f));
  EXPECT_EQ(dot16(with_set("renorm"), ab, 1.5f * 0x1p-25f), 0u);
}

TEST(WgmmaModel, AlignmentTowardZeroVsFloor) {
  // 1 - 2^-30: trunc drops -2^-30 (D = 1); floor makes it -2^-25, and 1 - 2^-25 truncates to the
  // float32 below 1, 0x3F7FFFFF.
  EXPECT_EQ(dot16(kBf16, {{1, 1}}, -0x1p-30f), f(1.0f));
  EXPECT_EQ(dot16(with_set("align-floor"), {{1, 1}}, -0x1p-30f), 0x3F7FFFFFu);
}

TEST(WgmmaModel, OneStepVsTwoStepsOfEight) {
  // Products 1 and 2^-24 in the first 8, 2^-24 in the second 8: one step sums 1 + 2^-23 exactly;
  // two steps round 1 + 2^-24 to 1 (RZ) in between and then again.
  std::vector<uint16_t> a(16, 0), b(16, 0);
  a[0] = bf(1), b[0] = bf(1), a[1] = bf(0x1p-12f), b[1] = bf(0x1p-12f);
  a[8] = bf(0x1p-12f), b[8] = bf(0x1p-12f);
  EXPECT_EQ(wgmma_dot(kBf16, WgmmaInput::bf16, a.data(), b.data(), 0), f(1.0f) + 1);
  EXPECT_EQ(wgmma_dot(with_set("group-8"), WgmmaInput::bf16, a.data(), b.data(), 0), f(1.0f));
}

TEST(WgmmaModel, Fp8KeepsThirteenBits) {
  // E4M3: 1*1 + C, C = 3 * 2^-14: F = 13 truncates C to 2^-13; the E8M13 result 1 + 2^-13 is
  // exact (bits 0x3F800400). C = 2^-14 alone is lost: D = 1.
  std::vector<uint16_t> a(32, 0), b(32, 0);
  a[0] = e4(1), b[0] = e4(1);
  EXPECT_EQ(wgmma_dot(kFp8, WgmmaInput::e4m3, a.data(), b.data(), f(3 * 0x1p-14f)), 0x3F800400u);
  EXPECT_EQ(wgmma_dot(kFp8, WgmmaInput::e4m3, a.data(), b.data(), f(0x1p-14f)), f(1.0f));
  // 448 * 448 + 1: the product is s = 1.75^2 = 3.0625 at e = 8 + 8 = 16 (not renormalised), so
  // F = 13 keeps multiples of 2^(16 - 13) = 8 and C = 1 is lost: D = 200704 = 3.0625 * 2^16.
  a[0] = e4(448), b[0] = e4(448);
  EXPECT_EQ(wgmma_dot(kFp8, WgmmaInput::e4m3, a.data(), b.data(), f(1.0f)), f(200704.0f));
}

TEST(WgmmaModel, OverflowAndSpecials) {
  const float big = 0x1.FEp127f;  // max bf16
  EXPECT_EQ(dot16(kBf16, {{big, big}}, 0.0f), 0x7F800000u);
  EXPECT_EQ(dot16(kBf16, {{-big, big}}, 0.0f), 0xFF800000u);
  EXPECT_EQ(dot16(with_set("sat-overflow"), {{big, big}}, 0.0f), 0x7F7FFFFFu);
  const float inf = INFINITY;
  EXPECT_EQ(dot16(kBf16, {{inf, 1}, {inf, -1}}, 0.0f), 0x7FFFFFFFu);  // inf - inf
  EXPECT_EQ(dot16(kBf16, {{inf, 0}}, 0.0f), 0x7FFFFFFFu);             // inf * 0 (b = +0)
  EXPECT_EQ(dot16(kBf16, {{inf, 2}}, -1e30f), 0x7F800000u);
  EXPECT_EQ(dot16(kBf16, {{1, 1}}, -inf), 0xFF800000u);
  EXPECT_EQ(dot16(kBf16, {{inf, 1}}, -inf), 0x7FFFFFFFu);
  EXPECT_EQ(dot16(kBf16, {{1, 1}}, NAN), 0x7FFFFFFFu);
  std::vector<uint16_t> a(32, 0), b(32, 0);
  a[3] = 0x7F, b[3] = e4(1);  // E4M3 NaN (no inf)
  EXPECT_EQ(wgmma_dot(kFp8, WgmmaInput::e4m3, a.data(), b.data(), 0), 0x7FFFFFFFu);
  a[3] = 0x7C;  // E5M2 +inf
  EXPECT_EQ(wgmma_dot(kFp8, WgmmaInput::e5m2, a.data(), b.data(), 0), 0x7F800000u);
}

TEST(WgmmaModel, SignedZerosAndSubnormals) {
  // -0 * +0 (x16) + (-0): +0 (mmasim 2.1.1); IEEE's sign of a sum of -0s is -0.
  std::vector<uint16_t> a(16, 0x8000), b(16, 0);
  EXPECT_EQ(wgmma_dot(kBf16, WgmmaInput::bf16, a.data(), b.data(), 0x80000000u), 0u);
  EXPECT_EQ(wgmma_dot(with_set("signed-zero"), WgmmaInput::bf16, a.data(), b.data(), 0x80000000u),
            0x80000000u);
  // 1 - 1 = +0 in both.
  EXPECT_EQ(dot16(with_set("signed-zero"), {{1, 1}, {-1, 1}}, 0.0f), 0u);
  // A float32 subnormal C and zero products: D = C exactly; plus a subnormal bf16 product
  // 2^-133 * 2^-10: 2^-143 + 2^-149 = 0x00000041.
  EXPECT_EQ(dot16(kBf16, {}, 0x1p-149f), 1u);
  EXPECT_EQ(dot16(kBf16, {{0x1p-133f, 0x1p-10f}}, 0x1p-149f), 0x41u);
}

TEST(WgmmaModel, EveryCandidateGivesExactSums) {
  // Small integers: every product and C and the sum are exact in every set's kept bits.
  std::mt19937 rng(7);
  for (int in = 0; in < kWgmmaInputs; ++in) {
    const auto t = WgmmaInput(in);
    const int k = wgmma_k(t);
    const auto& sets = k == 16 ? kWgmmaCandidates16 : kWgmmaCandidates8;
    const Format& fm = t == WgmmaInput::bf16   ? kBF16
                       : t == WgmmaInput::fp16 ? kFP16
                       : t == WgmmaInput::e4m3 ? kE4M3
                                               : kE5M2;
    for (int rep = 0; rep < 2000; ++rep) {
      uint16_t a[kWgmmaMaxK], b[kWgmmaMaxK];
      double exact = 0;
      for (int i = 0; i < k; ++i) {
        const int x = int(rng() % 15) - 7, y = int(rng() % 15) - 7;
        a[i] = uint16_t(encode(fm, float(x), Overflow::ieee));
        b[i] = uint16_t(encode(fm, float(y), Overflow::ieee));
        exact += double(x) * y;
      }
      const int c = int(rng() % 511) - 255;
      exact += c;
      for (const auto& s : sets)
        ASSERT_EQ(wgmma_dot(s.model, t, a, b, f32_bits(float(c))), f32_bits(float(exact)))
            << wgmma_input_name(t) << " set " << s.name << " rep " << rep;
    }
  }
}

// The model against recorded D values (tolerance 0 bits): FA4SIM_WGMMA_SAMPLE=DIR holds
// wgmma-<type>.npy files, uint16 (n, 2K + 4): a[K], b[K], C lo/hi, D lo/hi. Not part of the
// default run (it needs a sample): `FA4SIM_WGMMA_SAMPLE=DIR test_wgmma_model
// --gtest_also_run_disabled_tests --gtest_filter=*SampleFile*` (ctest wgmma_mmasim_crosscheck).
TEST(WgmmaModel, DISABLED_SampleFile) {
  const char* dir = std::getenv("FA4SIM_WGMMA_SAMPLE");
  if (dir == nullptr)
    GTEST_SKIP() << "FA4SIM_WGMMA_SAMPLE not set (scripts/check/check_wgmma_mmasim.py --make DIR)";
  int files = 0;
  for (int in = 0; in < kWgmmaInputs; ++in) {
    const auto t = WgmmaInput(in);
    const std::string path = fmt::format("{}/wgmma-{}.npy", dir, wgmma_input_name(t));
    if (!std::filesystem::exists(path)) continue;
    ++files;
    const NpyArray arr = read_npy(path);
    const int k = wgmma_k(t);
    ASSERT_EQ(arr.type, NpyType::u16);
    ASSERT_EQ(arr.shape.size(), 2u);
    ASSERT_EQ(arr.shape[1], uint64_t(2 * k + 4));
    const auto* rows = reinterpret_cast<const uint16_t*>(arr.raw.data());
    uint64_t bad = 0;
    const WgmmaModel m = wgmma_model_hopper(t);
    for (uint64_t r = 0; r < arr.shape[0]; ++r) {
      const uint16_t* row = rows + r * (2 * k + 4);
      const uint32_t c = row[2 * k] | (uint32_t(row[2 * k + 1]) << 16);
      const uint32_t d = row[2 * k + 2] | (uint32_t(row[2 * k + 3]) << 16);
      const uint32_t got = wgmma_dot(m, t, row, row + k, c);
      if (got != d && ++bad <= 8) {
        std::string s;
        for (int i = 0; i < 2 * k; ++i)
          s += fmt::format("{:04X}{}", row[i], i == k - 1 ? " | " : " ");
        ADD_FAILURE() << fmt::format(
            "{} row {}: a | b = {} c=0x{:08X} file 0x{:08X} model 0x{:08X}", wgmma_input_name(t), r,
            s, c, d, got);
      }
    }
    std::printf("%s: %llu dot products, %llu mismatches (model vs %s)\n", wgmma_input_name(t),
                (unsigned long long)arr.shape[0], (unsigned long long)bad, path.c_str());
    EXPECT_EQ(bad, 0u);
  }
  EXPECT_GT(files, 0) << "no wgmma-<type>.npy in " << dir;
}
