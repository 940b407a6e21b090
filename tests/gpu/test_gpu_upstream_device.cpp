// Upstream FlashAttention-4 on the GPU (label gpu): its own ex2_emulation against ex2_emu on the
// first 2^24 float32 bit patterns for every degree it compiles (0 mismatches), and its sm90
// forward against float64 and the CPU model on small shapes (a ragged bottom-right-causal GQA
// one, fp16 ones, and fa4sim's variant with FA4's tricks). The full 2^32 sweep and the 19-run suite are the CLI's
// (`fa4sim gpu upstream exp2`, `check --suite`). Without a usable device, or without upstream
// installed for python3 (scripts/gpu/upstream_install.sh), it prints why and exits 77 (a visible skip).
#include <gtest/gtest.h>

#include <cstdio>

#include "fa4sim/util/error.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_upstream.h"

using namespace fa4sim;

TEST(GpuUpstream, Ex2EmulationMatchesOnFirst2To24Inputs) {
  UpstreamExp2Options o;
  o.total_log2 = 24;
  o.progress = false;
  const Report r = run_upstream_exp2(o);
  for (const auto& d : r.results.at("degrees")) {
    std::printf("degree %d: compiled %d, %llu inputs, %llu mismatches %s\n",
                d.at("degree").get<int>(), int(d.at("compiled").get<bool>()),
                (unsigned long long)d.at("inputs").get<uint64_t>(),
                (unsigned long long)d.at("mismatches").get<uint64_t>(),
                d.at("error").get<std::string>().c_str());
    if (d.at("compiled").get<bool>()) {
      EXPECT_EQ(d.at("mismatches").get<uint64_t>(), 0u);
      EXPECT_EQ(d.at("inputs").get<uint64_t>(), uint64_t(1) << 24);
    }
  }
  // Degrees 1..5 are tuples in upstream's POLY_EX2 and must build.
  for (int deg = 1; deg <= 5; ++deg)
    EXPECT_TRUE(r.results.at("degrees")[size_t(deg)].at("compiled").get<bool>()) << deg;
}

TEST(GpuUpstream, ForwardAgreesWithCpuModel) {
  UpstreamCheckOptions o;
  UpstreamRunConfig a;
  a.label = "bf16 d64 causal gqa 300x333";
  a.shape = GpuAttnShape{1, 4, 2, 300, 333, 64, true, true};
  UpstreamRunConfig b;
  b.label = "fp16 d128 256";
  b.shape = GpuAttnShape{1, 2, 2, 256, 256, 128, false, true};
  b.dtype = GpuAttnDtype::fp16;
  o.runs = {a, b};
  const Report r = run_upstream_check(o);
  std::printf("%s\n", r.results.at("runs").dump().c_str());
  EXPECT_TRUE(r.results.at("pass").get<bool>());
}

// Sharp rows (q-scale 8, |LSE| ~ 30): the rel-L2 ratio criterion still holds; the absolute LSE
// criterion (2e-6) does not, since float32's spacing at |LSE| >= 16 is 1.9e-6 (measured on the
// H200: upstream 1.1e-5, the CPU model 3.3e-6); only the ratio is asserted here.
TEST(GpuUpstream, SharpRowsKeepTheRatio) {
  UpstreamCheckOptions o;
  UpstreamRunConfig c;
  c.label = "fp16 d128 256 q-scale 8";
  c.shape = GpuAttnShape{1, 2, 2, 256, 256, 128, false, true};
  c.dtype = GpuAttnDtype::fp16;
  c.q_scale = 8;
  o.runs = {c};
  const Report r = run_upstream_check(o);
  const json& run = r.results.at("runs")[0];
  std::printf("%s\n", run.dump().c_str());
  EXPECT_NEAR(run.at("ratio").get<double>(), 1.0, kUpstreamL2RatioTol);
}

// fa4sim's variant of upstream's kernel with FA4's tricks (tau 8, 2/8 of the tiles emulated, sharp
// rows so that rescales are skipped): its rel-L2 ratio to the CPU model running the same tricks.
TEST(GpuUpstream, TricksVariantAgreesWithCpuModel) {
  UpstreamCheckOptions o;
  UpstreamRunConfig c;
  c.label = "variant bf16 d64 tau 8 emu 2/8 q-scale 8";
  c.shape = GpuAttnShape{1, 2, 2, 512, 512, 64, false, true};
  c.q_scale = 8;
  c.tricks = UpstreamTricks{true, 8, 0, 2};
  o.runs = {c};
  const Report r = run_upstream_check(o);
  const json& run = r.results.at("runs")[0];
  std::printf("%s\n", run.dump().c_str());
  EXPECT_NEAR(run.at("ratio").get<double>(), 1.0, kUpstreamL2RatioTol);
}

int main(int argc, char** argv) {
  if (!gpu::available()) {
    std::printf("SKIPPED: %s\n", gpu::unavailable_reason().c_str());
    return 77;
  }
  try {
    upstream_require(upstream_env("python3"));
  } catch (const Error& e) {
    std::printf("SKIPPED: %s\n", e.what());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
