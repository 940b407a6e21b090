// gpu_verify / gpu_bench host logic without a device: target selection and validation, the
// per-class mismatch counting and first-mismatch bookkeeping of the comparison, file naming.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#include "fa4sim/analysis/roofline.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/util/error.h"
#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/core/mufu.h"
#include "fa4sim/gpu/gpu_bench.h"
#include "fa4sim/gpu/gpu_verify.h"

using namespace fa4sim;

TEST(GpuVerify, InputClasses) {
  EXPECT_EQ(input_class(0x7FC00000u), InputClass::nan);
  EXPECT_EQ(input_class(0xFF800001u), InputClass::nan);
  EXPECT_EQ(input_class(0x7F800000u), InputClass::inf);
  EXPECT_EQ(input_class(0xFF800000u), InputClass::inf);
  EXPECT_EQ(input_class(0x00000000u), InputClass::zero_subnormal);
  EXPECT_EQ(input_class(0x807FFFFFu), InputClass::zero_subnormal);
  EXPECT_EQ(input_class(0x00800000u), InputClass::normal);
  EXPECT_EQ(input_class(0xFF7FFFFFu), InputClass::normal);
}

TEST(GpuVerify, TargetsPerSet) {
  GpuVerifyOptions o;
  EXPECT_EQ(gpu_verify_targets(o).size(), 6u + 6u + 3u);  // degrees 0..5, six conversions, MUFU
  o.what = "exp2";
  o.degrees = {3, 5};
  const auto t = gpu_verify_targets(o);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].name, "exp2-deg3");
  EXPECT_EQ(t[1].degree, 5);
  o.what = "formats";
  EXPECT_EQ(gpu_verify_targets(o).size(), 6u);
  o.what = "mufu";
  const auto m = gpu_verify_targets(o);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_EQ(m[0].name, "ex2-mufu");
  EXPECT_EQ(m[0].op, gpu::Op::ex2_mufu);
  EXPECT_EQ(m[1].name, "rcp-mufu");
  EXPECT_EQ(m[1].op, gpu::Op::rcp_mufu);
  EXPECT_EQ(m[2].name, "lg2-mufu");
  EXPECT_EQ(m[2].op, gpu::Op::lg2_mufu);
}

TEST(GpuVerify, BadOptionsAreUsageErrors) {
  GpuVerifyOptions o;
  o.what = "everything";
  try {
    gpu_verify_targets(o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
  }
  o.what = "exp2";
  o.degrees = {6};
  EXPECT_THROW(gpu_verify_targets(o), Error);
  o.degrees = {};
  EXPECT_THROW(gpu_verify_targets(o), Error);
  GpuBenchOptions b;
  b.degrees = {-1};
  EXPECT_THROW(validate(b), Error);
  b.degrees = {3};
  b.reps = 0;
  EXPECT_THROW(validate(b), Error);
}

TEST(GpuVerify, ModelIsTheCpuEmulator) {
  const GpuVerifyTarget e{"exp2-deg3", gpu::Op::ex2_emu, 3};
  EXPECT_EQ(gpu_verify_model(e, f32_bits(1.5f)), f32_bits(ex2_emu(1.5f, 3)));
  const GpuVerifyTarget c{"e4m3-satfinite", gpu::Op::cvt_e4m3_satfinite, 0};
  EXPECT_EQ(gpu_verify_model(c, f32_bits(1000.0f)), 0x7Eu);  // saturates to 448
  const GpuVerifyTarget m{"ex2-mufu", gpu::Op::ex2_mufu, 0};
  const GpuVerifyTarget r{"rcp-mufu", gpu::Op::rcp_mufu, 0};
  const GpuVerifyTarget l{"lg2-mufu", gpu::Op::lg2_mufu, 0};
  for (uint32_t x : {0x3FC00000u, 0x00000000u, 0x7FC00001u, 0xC2F70000u, 0x7E800001u}) {
    EXPECT_EQ(gpu_verify_model(m, x), f32_bits(ex2_approx_ftz(f32_from_bits(x)))) << x;
    EXPECT_EQ(gpu_verify_model(r, x), f32_bits(rcp_approx_ftz(f32_from_bits(x)))) << x;
    EXPECT_EQ(gpu_verify_model(l, x), f32_bits(lg2_approx_ftz(f32_from_bits(x)))) << x;
  }
}

// A fake device chunk: the model's own bits, with planted differences. The comparison must
// count each in its input class, keep the first ones in input order, for any thread count.
TEST(GpuVerify, CompareChunkCountsPlantedMismatches) {
  const GpuVerifyTarget t{"bf16", gpu::Op::cvt_bf16, 0};
  const uint64_t begin = 0x7F7F0000u, n = uint64_t(1) << 21;  // spans normal, inf and NaN inputs
  std::vector<uint32_t> dev(n);
  for (uint64_t i = 0; i < n; ++i) dev[i] = gpu_verify_model(t, static_cast<uint32_t>(begin + i));
  const uint32_t inf_in = 0x7F800000u, nan_in = 0x7F8F0001u, normal_in = 0x7F7F0005u;
  for (uint32_t in : {normal_in, inf_in, nan_in}) dev[in - begin] ^= 1u;
  for (int threads : {1, 3}) {
    GpuVerifyResult r;
    r.target = t;
    gpu_verify_compare_chunk(t, begin, dev.data(), n, threads, r);
    EXPECT_EQ(r.inputs, n);
    EXPECT_EQ(r.total_mismatches(), 3u);
    EXPECT_EQ(r.mismatches[static_cast<int>(InputClass::normal)], 1u);
    EXPECT_EQ(r.mismatches[static_cast<int>(InputClass::inf)], 1u);
    EXPECT_EQ(r.mismatches[static_cast<int>(InputClass::nan)], 1u);
    ASSERT_EQ(r.first.size(), 3u);
    EXPECT_EQ(r.first[0].input, normal_in);
    EXPECT_EQ(r.first[1].input, inf_in);
    EXPECT_EQ(r.first[2].input, nan_in);
    EXPECT_EQ(r.first[1].cpu, 0x7F80u);  // bf16 +inf
    EXPECT_EQ(r.first[1].gpu, 0x7F81u);
  }
}

TEST(GpuVerify, FirstMismatchesAreCapped) {
  const GpuVerifyTarget t{"exp2-deg0", gpu::Op::ex2_emu, 0};
  const uint64_t n = uint64_t(1) << 20;
  std::vector<uint32_t> dev(n, 0xDEADBEEFu);  // every element wrong
  GpuVerifyResult r;
  gpu_verify_compare_chunk(t, 0, dev.data(), n, 2, r);
  EXPECT_EQ(r.total_mismatches(), n);
  EXPECT_EQ(r.first.size(), kGpuVerifyFirst);
  EXPECT_EQ(r.first[0].input, 0u);
}

TEST(GpuBench, DeviceNames) {
  EXPECT_EQ(gpu_device_slug("NVIDIA H200"), "nvidia-h200");
  EXPECT_EQ(gpu_device_slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
  EXPECT_EQ(gpu_device_slug("  "), "unknown-gpu");
  EXPECT_EQ(gpu_arch_for_device("NVIDIA H200"), "h200");
  EXPECT_EQ(gpu_arch_for_device("NVIDIA H100 80GB HBM3"), "h100_sxm");
  EXPECT_EQ(gpu_arch_for_device("NVIDIA B200"), "");
}

// The benchmark compiles one kernel per (freq, res, start_frg) of kTuningRules; the list must be
// exactly the distinct schedules of data/fa4_tuning.json, in the table's order, or `gpu bench-exp
// --rules` would time a schedule upstream does not use (or miss one it does). freq = 0 emulates
// nothing, whatever res and start_frg say (exp2_schedule.h), so those entries are one schedule,
// (0, 4, 0).
TEST(GpuBench, TuningRulesAreTheDistinctEntriesOfTheTuningTable) {
  std::vector<std::tuple<int, int, int>> from_json;
  for (const TuningEntry& e : load_tuning().entries) {
    const auto rule =
        e.freq == 0 ? std::make_tuple(0, 4, 0) : std::make_tuple(e.freq, e.res, e.start_frg);
    if (std::find(from_json.begin(), from_json.end(), rule) == from_json.end())
      from_json.push_back(rule);
  }
  std::vector<std::tuple<int, int, int>> compiled;
  for (const gpu::RuleConfig& r : gpu::kTuningRules)
    compiled.emplace_back(r.freq, r.res, r.start_frg);
  EXPECT_EQ(compiled, from_json);
  EXPECT_EQ(std::set(compiled.begin(), compiled.end()).size(), compiled.size())
      << "a rule listed twice";
}
