// GPU attention (label gpu): the sm_90a kernel against the CPU side of fa4sim on small problems.
// Exact: the GPU's own dumped S replayed on the CPU gives the same row maxima, rescale flags,
// warp votes, emulated P bits and P cast bits (0 mismatches), MUFU P within 2 ulp. End to end:
// the GPU's rel-L2 against float64 and the CPU model's agree within 5 %, rescale shares within
// their binomial bound. Without a usable device it prints why and exits 77 (a visible skip).
#include <gtest/gtest.h>

#include <cstdio>

#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_attention_report.h"

using namespace fa4sim;

namespace {

GpuAttnShape shape(int seq_q, int seq_k, int heads, int kv_heads, int d, bool causal) {
  GpuAttnShape s;
  s.seq_q = seq_q;
  s.seq_k = seq_k;
  s.heads = heads;
  s.kv_heads = kv_heads;
  s.d = d;
  s.causal = causal;
  return s;
}

void expect_exact(const GpuAttnShape& s, const GpuAttnSoftmax& sm, double q_scale) {
  gpu_attn_validate(s, sm, true);
  const GpuAttnInputs in = gpu_attn_make_inputs(s, sm.dtype, q_scale, 7);
  const GpuAttnOutputs g = gpu_attn_run(s, sm, in, true, true);
  const GpuAttnReplay r = gpu_attn_replay(s, sm, in, g);
  for (const auto& m : r.first_mismatches) ADD_FAILURE() << m;
  std::printf(
      "%s d%d seq %dx%d causal %d emu %d: row_max %llu, flags %llu, votes %llu, P emu %llu, "
      "P cast %llu checked; MUFU ulp 0/1/2/>2 = %llu/%llu/%llu/%llu\n",
      gpu_attn_dtype_name(sm.dtype), s.d, s.seq_q, s.seq_k, int(s.causal), sm.emu_tiles,
      (unsigned long long)r.row_max_checked, (unsigned long long)r.flag_checked,
      (unsigned long long)r.warp_checked, (unsigned long long)r.p_emu_checked,
      (unsigned long long)r.p_cvt_checked, (unsigned long long)r.p_mufu_ulp[0],
      (unsigned long long)r.p_mufu_ulp[1], (unsigned long long)r.p_mufu_ulp[2],
      (unsigned long long)r.p_mufu_ulp[3]);
  EXPECT_GT(r.row_max_checked, 0u);
  EXPECT_GT(r.warp_checked, 0u);
  EXPECT_EQ(r.row_max_mismatch, 0u);
  EXPECT_EQ(r.flag_mismatch, 0u);
  EXPECT_EQ(r.warp_mismatch, 0u);
  EXPECT_EQ(r.p_emu_mismatch, 0u);
  EXPECT_EQ(r.p_cvt_mismatch, 0u);
  EXPECT_EQ(r.p_cvt_emu_mismatch, 0u);
  EXPECT_EQ(r.p_mufu_ulp[3], 0u);
  if (sm.emu_tiles > 0) {
    EXPECT_GT(r.p_emu_checked, 0u);
  }
}

}  // namespace

TEST(GpuAttention, ExactReplayBf16TailsGqaEmulation) {
  GpuAttnSoftmax sm;
  sm.emu_tiles = 4;
  expect_exact(shape(300, 333, 4, 2, 128, false), sm, 1);
}

TEST(GpuAttention, ExactReplayCausalD64SharpRows) {
  GpuAttnSoftmax sm;
  sm.emu_tiles = 3;
  expect_exact(shape(257, 257, 2, 2, 64, true), sm, 8);
}

TEST(GpuAttention, ExactReplayE4m3Tau4Saturating) {
  GpuAttnSoftmax sm;
  sm.dtype = GpuAttnDtype::e4m3;
  sm.tau = 4;
  sm.max_offset = 8;
  sm.emu_tiles = 2;
  expect_exact(shape(256, 256, 2, 1, 128, false), sm, 1);
}

TEST(GpuAttention, EndToEndAgainstCpuModel) {
  for (GpuAttnDtype dt : {GpuAttnDtype::bf16, GpuAttnDtype::fp16, GpuAttnDtype::e5m2}) {
    GpuAttnCheckOptions o;
    o.shape = shape(512, 512, 2, 2, 128, false);
    o.sm.dtype = dt;
    o.sm.tau = 8;
    o.sm.max_offset = gpu_attn_is_fp8(dt) ? 8 : 0;
    const Report r = run_gpu_attention_check(o);
    std::printf("%s: %s\n", gpu_attn_dtype_name(dt), r.results.dump().c_str());
    EXPECT_TRUE(r.results.at("pass").get<bool>()) << gpu_attn_dtype_name(dt);
  }
}

int main(int argc, char** argv) {
  if (!gpu::available()) {
    std::printf("SKIPPED: %s\n", gpu::unavailable_reason().c_str());
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
