// test_attention.cpp: the attention-forward model (attention.h): presets and the safety check,
// determinism across thread counts, the FP8 saturation mechanism, the error split's exact zeros,
// GQA and .npy inputs (C and Fortran order), causal bookkeeping, and every refused config.
#include <cmath>
#include <cstring>
#include <filesystem>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cli_helpers.h"
#include "fa4sim/analysis/attention.h"
#include "fa4sim/util/error.h"
#include "fa4sim/util/npy.h"

namespace fa4sim {
namespace {

AttentionConfig small(const std::string& dtype, int seq = 256) {
  AttentionConfig c;
  c.batch = 1, c.heads = 2, c.kv_heads = 1, c.d = 64;
  c.seq_q = {seq};
  c.dtypes = {&format_by_name(dtype)};
  c.threads = 2;
  return c;
}

// Expects `fn` to throw an Error with exit code 2 whose message contains `needle`.
template <class Fn>
void expect_error(Fn fn, const std::string& needle) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), kExitUsage);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

// ---- presets and the check
TEST(AttentionCheck, UpstreamPresetIsSafeForEveryDtype) {
  const Report r = run_check({}, "upstream", {}, std::nullopt);
  EXPECT_TRUE(r.results["safe"].get<bool>());
  ASSERT_EQ(r.results["rows"].size(), 4u);
  for (const auto& row : r.results["rows"]) EXPECT_TRUE(row["safe"].get<bool>()) << row.dump();
}

// compute_check decides, check_report only renders: the rows of an explicit tau list (one row per
// dtype x tau) and the verdict, then the same report as run_check.
TEST(AttentionCheck, ComputeThenRender) {
  const CheckResult c = compute_check({&kE4M3}, "upstream", {4, 0.5}, 8.0);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_FALSE(c.from_preset);
  EXPECT_FALSE(c.rows[0].safe);  // 8 + 4 = 12 > log2(448) = 8.807
  EXPECT_TRUE(c.rows[1].safe);   // 8.5 < 8.807
  EXPECT_FALSE(c.all_safe);
  EXPECT_EQ(c.log2_dtype_max[0], kE4M3.log2_max);
  const Report r = check_report(c);
  EXPECT_EQ(r.results, run_check({&kE4M3}, "upstream", {4, 0.5}, 8.0).results);
  EXPECT_EQ(r.tables.at(0).rows.at(1).back(), "safe");
}

TEST(AttentionCheck, EarlierFp8PresetFailsForE4m3WithTheMechanism) {
  const Report r = run_check({&kE4M3, &kE5M2}, "fp8-tau4", {}, std::nullopt);
  EXPECT_FALSE(r.results["safe"].get<bool>());
  const auto& e4 = r.results["rows"][0];
  EXPECT_FALSE(e4["safe"].get<bool>());
  EXPECT_EQ(e4["worst_p"].get<double>(), 4096.0);  // 2^(8 + 4)
  EXPECT_EQ(e4["dtype_max"].get<double>(), 448.0);
  const std::string why = e4["explanation"].get<std::string>();
  EXPECT_NE(why.find("4096"), std::string::npos) << why;
  EXPECT_NE(why.find("448"), std::string::npos) << why;
  EXPECT_NE(why.find("row_sum counts the unclipped value"), std::string::npos) << why;
  EXPECT_TRUE(r.results["rows"][1]["safe"].get<bool>());  // E5M2: 2^12 < 57344
}

TEST(AttentionCheck, LargestSafeTauIsTheBoundary) {
  // log2(448) - 8 = 0.807...: tau 0.8 is safe, 0.81 is not.
  EXPECT_TRUE(check_safety(kE4M3, 0.8, 8).safe);
  EXPECT_FALSE(check_safety(kE4M3, 0.81, 8).safe);
  EXPECT_NEAR(check_safety(kE4M3, 0, 8).largest_safe_tau, std::log2(448.0) - 8, 1e-12);
  EXPECT_FALSE(check_safety(kFP16, 16, 0).safe);  // 2^16 > 65504
  EXPECT_TRUE(check_safety(kFP16, 15.99, 0).safe);
}

TEST(AttentionCheck, PresetLookup) {
  EXPECT_EQ(preset_tau(attention_preset("upstream"), kE4M3), 0.0);
  EXPECT_EQ(preset_tau(attention_preset("upstream"), kBF16), 8.0);
  EXPECT_EQ(preset_max_offset(attention_preset("upstream"), kE5M2), 8.0);
  EXPECT_EQ(preset_max_offset(attention_preset("upstream"), kFP16), 0.0);
  EXPECT_EQ(preset_tau(attention_preset("fp8-tau4"), kE4M3), 4.0);
  expect_error([] { attention_preset("upstraem"); }, "did you mean 'upstream'");
}

TEST(AttentionModel, UnclippedFormatKeepsPrecisionAndSubnormals) {
  const Format u = unclipped_format(kE4M3);
  EXPECT_EQ(u.man_bits, kE4M3.man_bits);
  EXPECT_EQ(u.min_subnormal, kE4M3.min_subnormal);
  EXPECT_GT(u.max_finite, 4096.0 * 2);
  // Every float below E4M3's clipping point rounds identically; 4096 does not clip.
  for (float x = 1e-4f; x < 440.0f; x *= 1.01f)
    EXPECT_EQ(quantize(u, x, Overflow::satfinite), quantize(kE4M3, x, Overflow::satfinite)) << x;
  EXPECT_EQ(quantize(u, 4096.0f, Overflow::satfinite), 4096.0f);
  EXPECT_EQ(unclipped_format(kBF16).max_finite, kBF16.max_finite);
}

// ---- the model
TEST(AttentionModel, SameBitsForAnyThreadCount) {
  AttentionConfig c = small("e4m3");
  c.causal = true;
  c.threads = 1;
  const json one = run_attention(c).report.results["runs"];
  c.threads = 2;
  const json two = run_attention(c).report.results["runs"];
  c.threads = 5;
  const json five = run_attention(c).report.results["runs"];
  auto strip = [](json j) {
    for (auto& r : j) r.erase("elapsed_s");
    return j.dump();
  };
  EXPECT_EQ(strip(one), strip(two));
  EXPECT_EQ(strip(one), strip(five));
}

// FNV-1a 64 over the float32 bits of x.
uint64_t bits_digest(const std::vector<float>& x) {
  uint64_t h = 1469598103934665603ull;
  for (const float f : x) {
    uint32_t b;
    std::memcpy(&b, &f, sizeof b);
    for (int i = 0; i < 4; ++i) h = (h ^ ((b >> (8 * i)) & 0xFFu)) * 1099511628211ull;
  }
  return h;
}

// The model's outputs (O and LSE, every bit) stay what they are: its order (the float32 score
// product S, one fma per key for P V) is part of what it computes, so a refactor that changes a bit
// is a change of the model, to be made on purpose with new digests. The score product's order is
// one fma chain per element whatever the instruction set (Note [Score product order]), so the
// digests hold on every build. Recorded on 2026-12-03 from the score product of that note on the
// project's 2-core Intel Xeon VM (an AVX-512 host, -march=native build); against the digests
// before it (Eigen's float32 GEMM at the baseline ISA, 2c954d8) the LSE of configurations 2, 3 and
// 7 changed and every O kept its bits (the bf16 P hides the scores' last bits there).
TEST(AttentionModel, OutputsKeepTheirBits) {
  std::vector<AttentionConfig> cs(8);
  for (auto& c : cs) {
    c.batch = 1, c.heads = 2, c.kv_heads = 2, c.d = 64, c.seq_q = {200};
    c.keep_outputs = true, c.threads = 2;
  }
  cs[1].dtypes = {&kE4M3}, cs[1].preset = "fp8-tau4", cs[1].allow_saturation = true;
  cs[1].d = 128, cs[1].seq_q = {300};
  cs[2].dtypes = {&kFP16}, cs[2].causal = true, cs[2].heads = 4, cs[2].kv_heads = 1;
  cs[2].seq_q = {257}, cs[2].seq_k = 257;
  cs[3].exp2.mode = Exp2Mode::emu, cs[3].exp2.degree = 3, cs[3].d = 96, cs[3].seq_k = 333;
  cs[3].block_n = 64, cs[3].warp_rows = 16;
  cs[4].d = 128, cs[4].qk_format = "mxfp8", cs[4].v_format = "mxfp8", cs[4].p_format = "nvfp4";
  cs[4].p_rule = PRule::two_level;
  // Edge shapes of the score kernel (and of Eigen's GEMM before it): a 1-row last tile, rows +
  // keys + d < 20, one query row.
  cs[5].seq_q = {129}, cs[5].causal = true, cs[5].d = 32;
  cs[6].seq_q = {9}, cs[6].d = 4, cs[6].block_n = 4;
  cs[7].seq_q = {1}, cs[7].seq_k = 300, cs[7].d = 64;
  const uint64_t want[8][2] = {{0x2820c03f6aac4e5aull, 0xf95083b6364c0824ull},
                               {0xb5cc25c358442185ull, 0x66210e263e2e6883ull},
                               {0xd1484f560efb5e75ull, 0xbea7e3edded91606ull},
                               {0x69894a53014fafe1ull, 0x8b847ada536fd52aull},
                               {0xa6860b96b445107full, 0x8bc2437e30eb59b6ull},
                               {0xf0012997e7e3c88eull, 0x56e1f20f11619d18ull},
                               {0xd6719a85ef6b2131ull, 0x82d51809ce71a42bull},
                               {0xd38cca03bfa02d37ull, 0x15d8e4caf8eb0c3eull}};
  for (size_t i = 0; i < cs.size(); ++i) {
    const AttentionResult r = run_attention(cs[i]);
    ASSERT_EQ(r.runs.size(), 1u);
    EXPECT_EQ(bits_digest(r.runs[0].o), want[i][0]) << "O of configuration " << i;
    EXPECT_EQ(bits_digest(r.runs[0].lse), want[i][1]) << "LSE of configuration " << i;
  }
  // And the digest sees one bit.
  std::vector<float> o = run_attention(cs[0]).runs[0].o;
  o[o.size() / 2] = std::nextafter(o[o.size() / 2], 1.0f);
  EXPECT_NE(bits_digest(o), want[0][0]);
}

// A list of runs computes each float64 reference once (Note [Shared references]); every run's
// results (and outputs) are the bits of that run alone.
TEST(AttentionModel, ListRunsEqualSingleRuns) {
  auto runs_alone = [](AttentionConfig c, const std::vector<const Format*>& dtypes,
                       const std::vector<double>& taus) {
    json all = json::array();
    std::vector<std::vector<float>> outs;
    for (const Format* f : dtypes)
      for (double tau : taus) {
        c.dtypes = {f};
        c.taus = {tau};
        const AttentionResult r = run_attention(c);
        all.push_back(r.report.results["runs"][0]);
        outs.push_back(r.runs[0].o);
      }
    return std::make_pair(all, outs);
  };
  AttentionConfig c = small("bf16", 200);
  c.causal = true, c.max_offset = 8.0, c.allow_saturation = true, c.keep_outputs = true;
  const std::vector<const Format*> dtypes = {&kBF16, &kE4M3};
  const std::vector<double> taus = {0.0, 4.0, 8.0};
  const auto [want, want_o] = runs_alone(c, dtypes, taus);
  c.dtypes = dtypes, c.taus = taus;
  const AttentionResult list = run_attention(c);
  ASSERT_EQ(list.runs.size(), 6u);
  EXPECT_EQ(list.report.results["runs"].dump(), want.dump());
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(list.runs[i].o, want_o[i]) << "run " << i;
  EXPECT_GT(list.runs[4].saturated, 0u);  // E4M3's tau 4 with max_offset 8 is in the list
  // ... and computed 3 references (a once, b once per dtype) where the 6 runs alone compute 12.
  c.dtypes = {&kBF16}, c.taus = {0.0};
  const double one_run = run_attention(c).report.timings["gemm_gflop"]["ref_fp64"].get<double>();
  EXPECT_DOUBLE_EQ(list.report.timings["gemm_gflop"]["ref_fp64"].get<double>(), one_run * 3 / 2);
  // Block mode: the taus of one P format share both references and the split's Q/K, V parts.
  AttentionConfig b = small("e4m3", 160);
  b.qk_format = "mxfp8", b.v_format = "mxfp8", b.p_format = "e4m3";
  b.keep_outputs = true, b.allow_saturation = true;
  const auto [bwant, bwant_o] = runs_alone(b, {&kE4M3}, {0.0, 2.0});
  b.taus = {0.0, 2.0};
  const AttentionResult blist = run_attention(b);
  ASSERT_EQ(blist.runs.size(), 2u);
  EXPECT_EQ(blist.report.results["runs"].dump(), bwant.dump());
  b.taus = {0.0};  // the split's 4 references per run, shared but for Q/K and V alone: 4 + 2
  const double b_one = run_attention(b).report.timings["gemm_gflop"]["ref_fp64"].get<double>();
  EXPECT_DOUBLE_EQ(blist.report.timings["gemm_gflop"]["ref_fp64"].get<double>(), b_one * 6 / 4);
  for (size_t i = 0; i < 2; ++i) EXPECT_EQ(blist.runs[i].o, bwant_o[i]) << "block run " << i;
}

TEST(AttentionModel, Bf16ErrorsAreSmallAndOrdered) {
  AttentionConfig c = small("bf16");
  const AttentionRun r = run_attention(c).runs.at(0);
  // bf16 inputs and output: ~2^-9 relative per rounding, averaged over d = 64 products.
  EXPECT_LT(r.rel_l2_dequantized, 1e-2);
  EXPECT_LT(r.rel_l2_unquantized, 2e-2);
  EXPECT_GT(r.rel_l2_unquantized, 0.0);
  EXPECT_GT(r.cosine, 0.9999);
  EXPECT_LT(r.lse_max_err, 1e-4);
  EXPECT_EQ(r.saturated, 0u);
  EXPECT_EQ(r.split_saturation, 0.0);  // bf16's unclipped format is bf16 itself
  EXPECT_TRUE(r.q_descale.empty());    // no descales for 16-bit inputs
  EXPECT_EQ(r.tau, 8.0);               // the upstream preset for 16-bit inputs
}

TEST(AttentionModel, Fp8SaturationMechanism) {
  // max_offset 8: with tau 0, P <= 2^8 = 256 < 448 can never clip; with tau 4 it can.
  AttentionConfig c = small("e4m3", 1024);
  c.dtypes = {&kE4M3, &kE5M2};
  c.taus = {0.0, 4.0};
  c.max_offset = 8.0;
  c.allow_saturation = true;
  const auto runs = run_attention(c).runs;
  ASSERT_EQ(runs.size(), 4u);
  const AttentionRun &e4t0 = runs[0], &e4t4 = runs[1], &e5t0 = runs[2], &e5t4 = runs[3];
  EXPECT_EQ(e4t0.saturated, 0u);
  EXPECT_EQ(e4t0.split_saturation, 0.0);
  EXPECT_GT(e4t4.saturated, 0u);
  EXPECT_GT(e4t4.split_saturation, 0.0);
  EXPECT_GT(e4t4.rel_l2_dequantized, 2.0 * e4t0.rel_l2_dequantized);
  EXPECT_EQ(e5t4.saturated, 0u);  // 2^12 < 57344
  EXPECT_LT(e5t4.rel_l2_dequantized, 1.5 * e5t0.rel_l2_dequantized);
  // Q/K/V quantisation does not depend on tau.
  EXPECT_EQ(e4t0.split_qkv, e4t4.split_qkv);
  // FP8 descales are stated: amax / 448 per (batch, kv_head) = 1 entry here.
  ASSERT_EQ(e4t0.q_descale.size(), 1u);
  EXPECT_GT(e4t0.q_descale[0], 0.0f);
}

TEST(AttentionModel, UnsafeConfigIsRefusedUnlessAllowed) {
  AttentionConfig c = small("e4m3");
  c.preset = "fp8-tau4";
  expect_error([&] { validate_attention_config(c); }, "refusing to run");
  c.allow_saturation = true;
  EXPECT_NO_THROW(validate_attention_config(c));
}

TEST(AttentionModel, CausalCountsOnlyVisibleKeys) {
  AttentionConfig c = small("bf16", 256);
  c.causal = true;
  c.d = 32;
  const AttentionRun r = run_attention(c).runs.at(0);
  // Per head, 128-row tiles: tile 0 computes 128 x 128, tile 1 computes 128 x 256 (top-left).
  EXPECT_EQ(r.flops, 2 * 4.0 * (128.0 * 128 + 128.0 * 256) * 32);
  EXPECT_LT(r.rel_l2_dequantized, 1e-2);  // a mask mismatch with the reference would be O(1)
}

// ---- .npy inputs
struct NpyInputs {
  std::filesystem::path dir;
  std::string q, k, v;
};

// Writes Q (1, s, hq, d), K/V (1, s, hkv, d) from the seeded generator. With `replicate`, K and V
// are written with their single kv head repeated hq times (MHA layout of the same GQA problem).
NpyInputs write_inputs(int s, int hq, int hkv, int d, bool replicate, bool fortran) {
  NpyInputs n;
  n.dir = test::temp_dir("attn-npy");
  n.q = (n.dir / "q.npy").string(), n.k = (n.dir / "k.npy").string(),
  n.v = (n.dir / "v.npy").string();
  const auto q = seeded_input(7, 0, 1, s, hq, d, 1);
  auto k = seeded_input(7, 1, 1, s, hkv, d, 1), v = seeded_input(7, 2, 1, s, hkv, d, 1);
  int hk = hkv;
  if (replicate) {
    std::vector<float> k2, v2;
    for (int t = 0; t < s; ++t)
      for (int h = 0; h < hq; ++h)
        for (int j = 0; j < d; ++j) {
          const size_t src =
              (size_t(t) * size_t(hkv) + size_t(h / (hq / hkv))) * size_t(d) + size_t(j);
          k2.push_back(k[src]);
          v2.push_back(v[src]);
        }
    k = k2, v = v2, hk = hq;
  }
  auto put = [&](const std::string& path, const std::vector<float>& x, int heads) {
    const std::vector<uint64_t> shape = {1, uint64_t(s), uint64_t(heads), uint64_t(d)};
    if (!fortran) return write_npy_f32(path, shape, x);
    std::vector<float> f(x.size());  // column-major: index i0 + 1*(i1 + s*(i2 + heads*i3))
    for (int t = 0; t < s; ++t)
      for (int h = 0; h < heads; ++h)
        for (int j = 0; j < d; ++j)
          f[size_t(t) + size_t(s) * (size_t(h) + size_t(heads) * size_t(j))] =
              x[(size_t(t) * size_t(heads) + size_t(h)) * size_t(d) + size_t(j)];
    write_npy(path, NpyType::f32, shape, f.data(), f.size() * 4, true);
  };
  put(n.q, q, hq);
  put(n.k, k, hk);
  put(n.v, v, hk);
  return n;
}

json runs_of(const NpyInputs& n, const std::string& dtype = "bf16") {
  AttentionConfig c = small(dtype);
  c.q_path = n.q, c.k_path = n.k, c.v_path = n.v;
  json j = run_attention(c).report.results["runs"];
  for (auto& r : j) r.erase("elapsed_s"), r.erase("kv_heads"), r.erase("descales");
  return j;
}

TEST(AttentionModel, GqaEqualsReplicatedKv) {
  const NpyInputs gqa = write_inputs(160, 4, 2, 32, false, false);
  const NpyInputs mha = write_inputs(160, 4, 2, 32, true, false);
  EXPECT_EQ(runs_of(gqa).dump(), runs_of(mha).dump());
  std::filesystem::remove_all(gqa.dir);
  std::filesystem::remove_all(mha.dir);
}

TEST(AttentionModel, FortranOrderNpyEqualsCOrder) {
  const NpyInputs c = write_inputs(96, 2, 1, 16, false, false);
  const NpyInputs f = write_inputs(96, 2, 1, 16, false, true);
  EXPECT_EQ(runs_of(c, "e4m3").dump(), runs_of(f, "e4m3").dump());
  std::filesystem::remove_all(c.dir);
  std::filesystem::remove_all(f.dir);
}

TEST(AttentionModel, NpyGeometryComesFromTheFiles) {
  const NpyInputs n = write_inputs(96, 2, 1, 16, false, false);
  AttentionConfig c = small("bf16");
  c.q_path = n.q, c.k_path = n.k, c.v_path = n.v;
  const AttentionRun r = run_attention(c).runs.at(0);
  EXPECT_EQ(r.seq_q, 96);
  EXPECT_EQ(r.heads, 2);
  EXPECT_EQ(r.kv_heads, 1);
  EXPECT_EQ(r.d, 16);
  std::filesystem::remove_all(n.dir);
}

// ---- refused configurations
TEST(AttentionModel, RefusesBadConfigs) {
  AttentionConfig c = small("bf16");
  c.heads = 6, c.kv_heads = 4;
  expect_error([&] { validate_attention_config(c); },
               "--heads 6 is not a multiple of --kv-heads 4");
  c = small("bf16");
  c.d = 0;
  expect_error([&] { validate_attention_config(c); }, "must be >= 1");
  c = small("bf16");
  c.seq_q = {0};
  expect_error([&] { validate_attention_config(c); }, "--seq must be >= 1");
  c = small("bf16");
  c.preset = "nope";
  expect_error([&] { validate_attention_config(c); }, "unknown preset 'nope'");
  c = small("fp32");  // a format, but not one the kernel takes (formats_of(attention_input))
  expect_error([&] { validate_attention_config(c); },
               "unknown --dtype 'fp32' (valid: bf16, fp16, e4m3, e5m2 (the kernel's input types))");
  c = small("bf16");
  c.q_path = "/tmp/q.npy";
  expect_error([&] { validate_attention_config(c); }, "--q, --k and --v go together");
}

TEST(AttentionModel, RefusesMismatchedAndNonFiniteNpy) {
  const NpyInputs a = write_inputs(64, 2, 1, 16, false, false);
  const NpyInputs b = write_inputs(80, 2, 1, 16, false, false);
  AttentionConfig c = small("bf16");
  c.q_path = a.q, c.k_path = a.k, c.v_path = b.v;  // V has 80 keys, K 64
  expect_error([&] { validate_attention_config(c); }, "K and V must match");
  const NpyInputs d32 = write_inputs(64, 2, 1, 32, false, false);
  c.q_path = d32.q, c.k_path = a.k, c.v_path = a.v;  // Q has d 32, K d 16
  expect_error([&] { validate_attention_config(c); }, "batch (dim 0) and d (dim 3) must agree");
  // NaN in K: refused with the count and the first index.
  std::vector<float> k = seeded_input(7, 1, 1, 64, 1, 16, 1);
  k[37] = std::nanf("");
  k[40] = INFINITY;
  write_npy_f32(a.k, {1, 64, 1, 16}, k);
  c.q_path = a.q, c.k_path = a.k, c.v_path = a.v;
  expect_error([&] { run_attention(c); },
               "holds 2 non-finite value(s) (NaN or inf); the first is nan at flat index 37");
  // Not a .npy file.
  test::slurp(a.q);
  {
    std::FILE* f = std::fopen(a.q.c_str(), "w");
    std::fputs("q,k,v\n1,2,3\n", f);
    std::fclose(f);
  }
  expect_error([&] { validate_attention_config(c); }, "is not a valid .npy file");
  for (const auto* n : {&a, &b, &d32}) std::filesystem::remove_all(n->dir);
}

// ---- block-scaled operands (Note [Block-scaled attention])

// Block mode with every operand an input dtype runs the same model as --dtype: the same bits.
TEST(AttentionBlock, PlainOperandsEqualTheDtypeRun) {
  for (const char* dt : {"bf16", "e4m3"}) {
    AttentionConfig a = small(dt), b = small(dt);
    b.qk_format = dt, b.p_format = dt, b.v_format = dt;
    const AttentionRun ra = run_attention(a).runs.at(0), rb = run_attention(b).runs.at(0);
    EXPECT_EQ(ra.rel_l2_unquantized, rb.rel_l2_unquantized) << dt;
    EXPECT_EQ(ra.rel_l2_dequantized, rb.rel_l2_dequantized) << dt;
    EXPECT_EQ(ra.saturated, rb.saturated) << dt;
    EXPECT_EQ(ra.split_qkv, rb.split_qkv) << dt;
    EXPECT_TRUE(rb.block);
    EXPECT_EQ(rb.dtype, fmt::format("{}/{}/{}", dt, dt, dt));
  }
}

// The split by source names the operand that carries the error: with only P in NVFP4 (Q, K, V
// bf16), P's part is most of the kernel's error; with Q/K in MXFP4, the Q/K part is most of the
// user's error.
TEST(AttentionBlock, SplitNamesTheSource) {
  AttentionConfig c = small("bf16");
  c.p_format = "nvfp4";
  AttentionRun r = run_attention(c).runs.at(0);
  EXPECT_LT(r.split_qk, 0.2 * r.split_p);  // bf16's rounding only
  EXPECT_LT(r.split_v, 0.2 * r.split_p);
  EXPECT_GT(r.split_p, 0.5 * r.rel_l2_dequantized);
  EXPECT_GT(r.split_p, 10 * std::fabs(r.split_exp2));
  c = small("bf16");
  c.qk_format = "mxfp4";
  r = run_attention(c).runs.at(0);
  EXPECT_GT(r.split_qk, 0.5 * r.rel_l2_unquantized);
  EXPECT_LT(r.split_v, 0.1 * r.split_qk);
}

// SageAttention3's reason for two-level P: on peaked rows (q-scale 4) NVFP4's E4M3 block scales
// of amax / 6 clamp at 2^-6 for blocks with amax < 6 x 2^-6 (max_offset 0) and round the row
// max's own scale; normalising the row max to 448 x 6 first makes that scale exactly 448.
TEST(AttentionBlock, TwoLevelBeatsMaxOffsetForNvfp4P) {
  AttentionConfig a = small("bf16");
  a.p_format = "nvfp4";
  a.q_scale = 4.0;
  a.taus = {0.0};
  AttentionConfig b = a;
  b.p_rule = PRule::two_level;
  const AttentionRun rb = run_attention(b).runs.at(0);
  EXPECT_NEAR(rb.max_offset, std::log2(2688.0), 1e-6);
  for (double mo : {0.0, 8.0}) {
    a.max_offset = mo;
    const AttentionRun ra = run_attention(a).runs.at(0);
    EXPECT_LT(rb.split_p, 0.8 * ra.split_p) << mo << ": " << ra.split_p << " " << rb.split_p;
  }
}

// E8M0 scales are powers of two and rceil's descale rounds up: a P block scaled by 2^8 gives the
// same elements, so max_offset leaves MXFP4 P's error unchanged (up to the float32 rounding of
// the exp2 argument, which the offset changes). floor is not: the row's largest P is 2^max_offset
// within an ulp, and one ulp below a power of two floor's scale leaves it at 2^emax x (2 - ulp),
// beyond E2M1's 6: clipped by 25 %. Whether it is below depends on the argument's rounding, so
// floor's error moves with the exp2 (the split's exp2 part), rceil's does not.
TEST(AttentionBlock, MxRceilPIsInvariantToMaxOffsetFloorIsNot) {
  AttentionConfig a = small("bf16");
  a.p_format = "mxfp4";
  a.scale_rule = ScaleRule::rceil;
  a.taus = {0.0};
  a.max_offset = 0.0;
  AttentionConfig b = a;
  b.max_offset = 8.0;
  const AttentionRun ra = run_attention(a).runs.at(0), rb = run_attention(b).runs.at(0);
  EXPECT_NEAR(ra.split_p, rb.split_p, 1e-3 * ra.split_p);
  a.scale_rule = ScaleRule::floor;
  const AttentionRun rf = run_attention(a).runs.at(0);
  EXPECT_GT(rf.split_exp2, 0.01) << rf.split_exp2;  // floor: the clipped row maxima
  EXPECT_LT(std::fabs(ra.split_exp2), 1e-3) << ra.split_exp2;
}

TEST(AttentionBlock, RefusesBadOperands) {
  auto with = [](auto edit) {
    AttentionConfig c = small("bf16");
    edit(c);
    return [c] { validate_attention_config(c); };
  };
  expect_error(with([](AttentionConfig& c) { c.p_format = "fp4"; }), "--p-format");
  expect_error(with([](AttentionConfig& c) { c.qk_format = "mxfp8", c.d = 48; }),
               "does not divide the head dim d = 48");
  expect_error(with([](AttentionConfig& c) { c.v_format = "nvfp4", c.block_n = 24; }),
               "does not divide --block-n 24");
  expect_error(
      with([](AttentionConfig& c) { c.p_format = "nvfp4", c.scale_rule = ScaleRule::floor; }),
      "cannot hold");
  expect_error(
      with([](AttentionConfig& c) { c.qk_format = "mxfp8", c.scale_rule = ScaleRule::nearest; }),
      "cannot hold");
  expect_error(with([](AttentionConfig& c) { c.p_format = "mxfp4", c.p_rule = PRule::two_level; }),
               "--p-rule two-level");
  expect_error(with([](AttentionConfig& c) { c.p_format = "bf16", c.block = 16; }),
               "--scale-block applies");
  // two-level with a lagging max: P reaches 2688 x 2^tau, beyond the E4M3 scale's 448 x 6.
  expect_error(with([](AttentionConfig& c) {
                 c.p_format = "nvfp4", c.p_rule = PRule::two_level, c.taus = {1.0};
               }),
               "refusing to run");
}

TEST(AttentionBlock, CheckRowsPerRule) {
  const BlockFormat mx4 = block_format_by_name("mxfp4");
  BlockFormat r = mx4;
  const BlockCheckRow floor = block_check_row("mxfp4", mx4, PRule::max_offset, 0, 8);
  EXPECT_NEAR(floor.elem_clip_share_pct, 25.0, 0.01);  // amax / 2^floor in [1.75, 2): y >= 7
  EXPECT_NEAR(floor.elem_clip_pct, 25.0, 0.01);        // 8 - ulp -> 6
  EXPECT_TRUE(floor.safe);
  r.rule = ScaleRule::rceil;
  EXPECT_EQ(block_check_row("mxfp4", r, PRule::max_offset, 0, 8).elem_clip_pct, 0.0);
  r.rule = ScaleRule::ceil;
  EXPECT_EQ(block_check_row("mxfp4", r, PRule::max_offset, 0, 8).elem_clip_pct, 0.0);
  const BlockFormat nv = block_format_by_name("nvfp4");
  const BlockCheckRow two = block_check_row("nvfp4", nv, PRule::two_level, 0, std::log2(2688.0));
  EXPECT_TRUE(two.safe);
  EXPECT_EQ(two.scale_clip_amax, 6.0 * 464.0);  // E4M3 rounds up to 464 to its max 448
  EXPECT_FALSE(block_check_row("nvfp4", nv, PRule::two_level, 0.5, std::log2(2688.0)).safe);
  // max_offset 0: blocks with amax below 6 x 2^-6 share the smallest scale, 2^-3.4 of the row max.
  const BlockCheckRow mo0 = block_check_row("nvfp4", nv, PRule::max_offset, 0, 0);
  EXPECT_EQ(mo0.floor_amax, 0.09375);
  EXPECT_NEAR(mo0.floor_rel_log2, std::log2(0.09375), 1e-12);
  const BlockCheckResult all =
      compute_block_check({}, {}, PRule::max_offset, "upstream", {}, std::nullopt);
  EXPECT_EQ(all.rows.size(), 3u * 4u + 1u);  // mxfp8, mxfp6, mxfp4 x 4 rules, nvfp4 x nearest
  EXPECT_TRUE(all.all_safe);
}

}  // namespace
}  // namespace fa4sim
