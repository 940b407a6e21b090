// GPU parity (label gpu): the device's own instructions (src/cuda/gpu_backend.cu, inline PTX)
// against the CPU emulators on a fixed set of special values plus 2^22 seeded random bit
// patterns, with 0 bits of tolerance. The exhaustive 2^32 proof is `fa4sim gpu verify`; this
// test is the quick one that runs wherever a device is. Without a usable device it prints why
// and exits 77 (ctest shows "Skipped", never "Passed").
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_verify.h"

using namespace fa4sim;

namespace {

std::vector<float> inputs() {
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x00000001u, 0x807FFFFFu, 0x00800000u,
                                0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u, 0x7F800001u,
                                0x3F800000u, 0xBF800000u, 0x42FE0000u, 0x43000000u, 0xC2FE0000u,
                                0xC3000000u, 0x43FF8000u, 0x7F7FFFFFu, 0xFF7FFFFFu, 0x43E00000u,
                                0x43E80000u, 0x47600000u, 0x477FE000u, 0x477FF000u};
  // Around the rounding boundaries of every format and the exp2 clamp: neighbours of each.
  const size_t base = bits.size();
  for (size_t i = 0; i < base; ++i)
    for (int d = -3; d <= 3; ++d) bits.push_back(bits[i] + static_cast<uint32_t>(d));
  std::mt19937 rng(20260815);  // determinism: fixed seed
  for (int i = 0; i < (1 << 22); ++i) bits.push_back(rng());
  std::vector<float> x(bits.size());
  for (size_t i = 0; i < bits.size(); ++i) x[i] = f32_from_bits(bits[i]);
  return x;
}

void expect_parity(const GpuVerifyTarget& t) {
  const auto x = inputs();
  std::vector<uint32_t> got(x.size());
  gpu::run(t.op, t.degree, x, got);
  size_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const uint32_t in = f32_bits(x[i]);
    const uint32_t want = gpu_verify_model(t, in);
    if (want != got[i] && ++bad <= 10)
      ADD_FAILURE() << t.name << ": input 0x" << std::hex << in << " cpu 0x" << want << " gpu 0x"
                    << got[i];
  }
  std::printf("%-16s %zu inputs, %zu mismatches (tolerance: 0 bits)\n", t.name.c_str(), x.size(),
              bad);
  EXPECT_EQ(bad, 0u) << t.name;
}

}  // namespace

TEST(GpuParity, EmulatedExp2EveryDegree) {
  GpuVerifyOptions o;
  o.what = "exp2";
  for (const auto& t : gpu_verify_targets(o)) expect_parity(t);
}

TEST(GpuParity, Conversions) {
  GpuVerifyOptions o;
  o.what = "formats";
  for (const auto& t : gpu_verify_targets(o)) expect_parity(t);
}

// The MUFU reciprocal against its measured-table model (core/mufu.h), NaN inputs included (the
// model's NaN, 0x7FFFFFFF, is an assumption this checks).
TEST(GpuParity, MufuReciprocal) {
  GpuVerifyOptions o;
  o.what = "mufu";
  for (const auto& t : gpu_verify_targets(o)) expect_parity(t);
}

// The MUFU's exp2 has no bit-exact model; check what the PTX ISA promises for ex2.approx.ftz.f32
// (max relative error 2^-22 for normal results; exact powers of two for integer inputs) and ftz.
TEST(GpuParity, MufuWithinPtxIsaBound) {
  std::vector<float> x;
  for (int i = -126; i <= 127; ++i) x.push_back(static_cast<float>(i));
  for (int i = 0; i < 100000; ++i) x.push_back(-20.0f + 28.0f * static_cast<float>(i) / 100000.0f);
  std::vector<uint32_t> y(x.size());
  gpu::run_ex2_mufu(x, y);
  double max_rel = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const double ref = std::exp2(static_cast<double>(x[i]));
    const double got = f32_from_bits(y[i]);
    if (x[i] == std::floor(x[i])) {
      EXPECT_EQ(got, ref) << "x = " << x[i];
    }
    max_rel = std::max(max_rel, std::fabs(got - ref) / ref);
  }
  std::printf(
      "MUFU ex2.approx.ftz.f32: max rel error %.3g over %zu inputs (PTX ISA bound 2^-22 = %.3g)\n",
      max_rel, x.size(), std::ldexp(1.0, -22));
  EXPECT_LE(max_rel, std::ldexp(1.0, -22));
  std::vector<float> sub = {f32_from_bits(0x00000001u), -126.5f};
  std::vector<uint32_t> ys(sub.size());
  gpu::run_ex2_mufu(sub, ys);
  EXPECT_EQ(ys[0], f32_bits(1.0f));  // subnormal input flushed to 0 -> 2^0
  EXPECT_EQ(ys[1], 0u);              // subnormal result flushed to +0
}

int main(int argc, char** argv) {
  if (!gpu::available()) {
    std::printf("SKIPPED: %s\n", gpu::unavailable_reason().c_str());
    return 77;
  }
  const auto d = gpu::device_info();
  std::printf("device: %s, %d SMs, driver %s\n", d.name.c_str(), d.sm_count,
              d.driver_version.c_str());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
