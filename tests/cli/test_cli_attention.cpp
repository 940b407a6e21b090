// test_cli_attention.cpp: `fa4sim attention` and `fa4sim check` through the binary: every bad
// input (exit 2, "fa4sim: error: <what> (<hint>)"), the check's exit
// codes (0 safe, 1 unsafe), and the JSON fields.
#include <cmath>
#include <filesystem>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cli_helpers.h"
#include "fa4sim/analysis/attention.h"
#include "fa4sim/util/npy.h"

namespace fa4sim::test {
namespace {

const std::string kSmall = "attention --batch 1 --heads 2 --kv-heads 1 --d 16 --seq 64 --threads 2";

void expect_usage_error(const CliResult& r, const std::string& needle) {
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_EQ(r.err.rfind("fa4sim: error: ", 0), 0u) << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  EXPECT_TRUE(r.out.empty()) << "partial output: " << r.out;
}

// ---- check
TEST(CliCheck, ExitCodes) {
  auto r = run_cli("check");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("verdict: safe"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("flash_fwd_sm100.py @0251105a"), std::string::npos) << r.out;  // the source
  r = run_cli("check --preset fp8-tau4");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("2^12 = 4096"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("row_sum counts the unclipped value"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("unsafe configuration for e4m3"), std::string::npos) << r.err;
  EXPECT_EQ(run_cli("check --dtype e4m3 --tau 4 --max-offset 8").code, 1);
  EXPECT_EQ(run_cli("check --dtype e5m2 --tau 4 --max-offset 8").code, 0);
  EXPECT_EQ(run_cli("check --dtype e4m3 --tau 0.8 --max-offset 8").code, 0);
  EXPECT_EQ(run_cli("check --dtype fp16 --tau 16 --max-offset 0").code, 1);
  expect_usage_error(run_cli("check --preset upstreem"), "did you mean 'upstream'");
  expect_usage_error(run_cli("check --dtype fp8"), "unknown --dtype 'fp8'");
  expect_usage_error(run_cli("check --tau -1 --max-offset 8"), "finite and >= 0");
}

// One rule for tau and max_offset in every command: finite, 0..64 (log2 units). Beyond, the
// check printed "clips by up to infx" and a "largest safe tau < -1e+300" with exit 1.
TEST(CliCheck, TauAndMaxOffsetHaveOneRange) {
  for (const std::string& cmd : std::vector<std::string>{"check --dtype e4m3", kSmall,
                                                         "rescale --rows 8 --keys 256 --d 8"}) {
    expect_usage_error(run_cli(cmd + " --tau 1e308"), "--tau 1e+308 is out of range");
    expect_usage_error(run_cli(cmd + " --max-offset 1e300"), "--max-offset 1e+300 is out of range");
    expect_usage_error(run_cli(cmd + " --max-offset 65"), "at most 64");
  }
  EXPECT_EQ(run_cli("check --dtype bf16 --tau 64 --max-offset 0").code, 0);
}

// Scores float32 cannot resolve are refused, naming the value (they gave rel-L2 nan, LSE inf).
TEST(CliAttention, OverflowingScoresAreRefused) {
  expect_usage_error(run_cli("attention --heads 2 --d 64 --seq 128 --q-scale 1e30"),
                     "after --q-scale 1e+30");
  expect_usage_error(run_cli(kSmall + " --softmax-scale 1e30"), "beyond 2^24");
  EXPECT_EQ(run_cli(kSmall + " --q-scale 100 --json -").code, 0);
}

TEST(CliCheck, Json) {
  const auto r = run_cli("check --preset fp8-tau4 --dtype e4m3 --json -");
  EXPECT_EQ(r.code, 1);
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["command"], "check");
  EXPECT_FALSE(j["results"]["safe"].get<bool>());
  EXPECT_EQ(j["results"]["rows"][0]["largest_safe_tau"].get<double>(), std::log2(448.0) - 8);
}

// ---- attention: JSON fields
TEST(CliAttention, JsonHasTheListedFields) {
  const auto r = run_cli(kSmall + " --dtype e4m3,bf16 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["results"]["runs"].size(), 2u);
  for (const char* k : {"dtype",
                        "tau",
                        "max_offset",
                        "batch",
                        "heads",
                        "kv_heads",
                        "seq_q",
                        "seq_k",
                        "d",
                        "causal",
                        "q_scale",
                        "seed",
                        "rel_l2_unquantized",
                        "rel_l2_dequantized",
                        "max_abs",
                        "cosine",
                        "lse_max_err",
                        "saturated",
                        "saturated_pct",
                        "rows_pct",
                        "warps_pct",
                        "error_split"})
    EXPECT_TRUE(j["results"]["runs"][0].contains(k)) << k;
  for (const char* k : {"qkv_quantization", "saturation", "p_conversion", "kernel_rest"})
    EXPECT_TRUE(j["results"]["runs"][0]["error_split"].contains(k)) << k;
  EXPECT_EQ(j["results"]["runs"][0]["max_offset"], 8.0);  // upstream preset, FP8
  EXPECT_EQ(j["results"]["runs"][1]["tau"], 8.0);         // upstream preset, bf16
  EXPECT_EQ(j["results"]["runs"][0]["descales"]["q"].size(), 1u);
}

TEST(CliAttention, UnsafeIsRefusedUnlessAllowed) {
  expect_usage_error(run_cli(kSmall + " --dtype e4m3 --preset fp8-tau4"), "refusing to run");
  const auto r = run_cli(kSmall + " --dtype e4m3 --preset fp8-tau4 --allow-saturation");
  EXPECT_EQ(r.code, 0) << r.err;
}

// ---- every bad input
TEST(CliAttention, BadGeometry) {
  expect_usage_error(run_cli("attention --heads 6 --kv-heads 4"),
                     "--heads 6 is not a multiple of --kv-heads 4");
  expect_usage_error(run_cli("attention --d 0"), "--d = 0 is out of range");
  expect_usage_error(run_cli("attention --seq 0"), "--seq = 0 is out of range");
  expect_usage_error(run_cli("attention --seq 128,0"), "--seq = 0 is out of range");
  expect_usage_error(run_cli("attention --preset nightly"), "unknown --preset 'nightly'");
  expect_usage_error(run_cli("attention --dtype e4m3fn"), "unknown --dtype 'e4m3fn'");
  expect_usage_error(run_cli("attention --q-scale 0"), "--q-scale must be finite and > 0");
  expect_usage_error(run_cli("attention --exp fast"), "unknown --exp 'fast'");
  expect_usage_error(run_cli("attention --seq 100 --seq-k 50 --causal"),
                     "seq_q = 100 > seq_k = 50");
}

// --exp mufu reads the MUFU tables: a data folder without them is exit 2 naming the table and the
// command that rebuilds it (nothing falls back to the correctly rounded functions); --exp cr, the
// fast mode, reads no table and runs.
TEST(CliAttention, MufuNeedsItsTablesCrDoesNot) {
  const auto dir = fa4sim::test::temp_dir("attention-no-mufu");
  setenv("FA4SIM_DATA_DIR", dir.c_str(), 1);
  auto r = run_cli("attention --seq 64 --heads 1 --d 16");
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("mufu/"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("python3 scripts/datagen/mufu_table.py"), std::string::npos) << r.err;
  auto cr = run_cli("attention --seq 64 --heads 1 --d 16 --exp cr");
  EXPECT_EQ(cr.code, 0) << cr.err;
  EXPECT_NE(cr.out.find("exp2 cr"), std::string::npos) << cr.out;
  unsetenv("FA4SIM_DATA_DIR");
  std::filesystem::remove_all(dir);
}

// --warp-rows: the vote granularity. One row per warp makes warps % equal rows %; a warp's
// vote is an any-of, so larger warps never rescale less often.
TEST(CliAttention, WarpRowsGranularity) {
  auto warps = [](const std::string& extra) {
    const auto r = run_cli(
        "attention --heads 2 --kv-heads 1 --d 16 --seq 512 --block-n 32 --threads 2"
        " --dtype bf16 --tau 0 --no-split --json -" +
        extra);
    EXPECT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(r.out)["results"]["runs"][0];
    return std::pair<double, double>{j["rows_pct"].get<double>(), j["warps_pct"].get<double>()};
  };
  const auto w1 = warps(" --warp-rows 1"), w16 = warps(" --warp-rows 16"), w32 = warps("");
  EXPECT_DOUBLE_EQ(w1.first, w1.second);
  EXPECT_DOUBLE_EQ(w1.first, w32.first);  // the rows do not depend on the vote
  EXPECT_GT(w1.first, 0.0);
  EXPECT_LE(w1.second, w16.second);
  EXPECT_LE(w16.second, w32.second);
  expect_usage_error(run_cli("attention --warp-rows 0"), "--warp-rows = 0 is out of range");
  expect_usage_error(run_cli("attention --warp-rows x"), "--warp-rows");
  expect_usage_error(run_cli("attention --warp-rows 48"),
                     "--warp-rows 48 does not divide --block-m 128");
  expect_usage_error(run_cli("attention --block-m 0"), "--block-m = 0 is out of range");
}

struct Files {
  std::filesystem::path dir;
  std::string q, k, v;
  explicit Files(const std::string& tag) : dir(temp_dir(tag)) {
    q = (dir / "q.npy").string(), k = (dir / "k.npy").string(), v = (dir / "v.npy").string();
  }
  ~Files() { std::filesystem::remove_all(dir); }
  std::string args() const { return " --q " + q + " --k " + k + " --v " + v; }
};

void put(const std::string& path, int s, int h, int d, int tensor) {
  write_npy_f32(path, {1, uint64_t(s), uint64_t(h), uint64_t(d)},
                seeded_input(3, tensor, 1, s, h, d, 1));
}

TEST(CliAttention, BadNpyInputs) {
  Files f("cli-attn");
  put(f.q, 64, 2, 16, 0);
  put(f.k, 64, 1, 16, 1);
  put(f.v, 48, 1, 16, 2);  // mismatched with K
  expect_usage_error(run_cli("attention" + f.args()), "K and V must match");
  put(f.v, 64, 1, 16, 2);
  EXPECT_EQ(run_cli("attention" + f.args()).code, 0);
  // geometry flags do not mix with files
  expect_usage_error(run_cli("attention --heads 2" + f.args()),
                     "--heads does not apply to .npy inputs");
  // nor does --seed (it was silently ignored)
  expect_usage_error(run_cli("attention --seed 5" + f.args()),
                     "--seed does not apply to .npy inputs");
  // only some of the three
  expect_usage_error(run_cli("attention --q " + f.q), "--q, --k and --v go together");
  // NaN / inf: refused with the count and where
  auto v = seeded_input(3, 2, 1, 64, 1, 16, 1);
  v[5] = INFINITY;
  write_npy_f32(f.v, {1, 64, 1, 16}, v);
  expect_usage_error(run_cli("attention" + f.args()),
                     "holds 1 non-finite value(s) (NaN or inf); the first is inf at flat index 5");
  put(f.v, 64, 1, 16, 2);
  // not a .npy file
  {
    std::FILE* fp = std::fopen(f.k.c_str(), "w");
    std::fputs("not numpy\n", fp);
    std::fclose(fp);
  }
  expect_usage_error(run_cli("attention" + f.args()),
                     "is not a valid .npy file: it does not start with the .npy magic");
  // wrong rank
  write_npy_f32(f.k, {64, 16}, std::vector<float>(64 * 16, 1.0f));
  expect_usage_error(run_cli("attention" + f.args()), "expected 4-D (batch, seq, heads, d)");
  // big-endian / float64: a numpy-compatible header the reader refuses clearly
  {
    std::string hdr = "{'descr': '>f4', 'fortran_order': False, 'shape': (1, 64, 1, 16), }";
    hdr.append(64 - (10 + hdr.size() + 1) % 64, ' ');
    hdr += '\n';
    std::string img = std::string("\x93NUMPY\x01\x00", 8) + char(hdr.size() & 0xFF) +
                      char(hdr.size() >> 8) + hdr + std::string(64 * 16 * 4, '\0');
    std::FILE* fp = std::fopen(f.k.c_str(), "wb");
    std::fwrite(img.data(), 1, img.size(), fp);
    std::fclose(fp);
  }
  expect_usage_error(run_cli("attention" + f.args()), "big-endian");
  expect_usage_error(run_cli("attention --q /nonexistent.npy --k /x.npy --v /y.npy"),
                     "cannot open '/nonexistent.npy'");
}

TEST(CliAttention, FortranOrderNpyIsSupported) {
  Files c("cli-attn-c"), fo("cli-attn-f");
  for (const Files* f : {&c, &fo}) {
    const bool fortran = f == &fo;
    for (int t = 0; t < 3; ++t) {
      const int h = t == 0 ? 2 : 1;
      const auto x = seeded_input(3, t, 1, 64, h, 16, 1);
      const std::string& path = t == 0 ? f->q : t == 1 ? f->k : f->v;
      if (!fortran) {
        write_npy_f32(path, {1, 64, uint64_t(h), 16}, x);
        continue;
      }
      std::vector<float> col(x.size());
      for (int s = 0; s < 64; ++s)
        for (int hh = 0; hh < h; ++hh)
          for (int j = 0; j < 16; ++j)
            col[size_t(s) + 64 * (size_t(hh) + size_t(h) * size_t(j))] =
                x[(size_t(s) * size_t(h) + size_t(hh)) * 16 + size_t(j)];
      write_npy(path, NpyType::f32, {1, 64, uint64_t(h), 16}, col.data(), col.size() * 4, true);
    }
  }
  const auto a = run_cli("attention --dtype e5m2 --json -" + c.args());
  const auto b = run_cli("attention --dtype e5m2 --json -" + fo.args());
  ASSERT_EQ(a.code, 0) << a.err;
  ASSERT_EQ(b.code, 0) << b.err;
  auto runs = [](const std::string& out) {
    auto j = nlohmann::json::parse(out)["results"]["runs"];
    for (auto& r : j) r.erase("elapsed_s");
    return j.dump();
  };
  EXPECT_EQ(runs(a.out), runs(b.out));
}

// V of a constant 3e37 overflows the float32 O accumulator (P sums V over 64 keys); the bf16
// output conversion saturated the inf to 3.39e38 and the run printed rel-L2 2.2 with no word.
TEST(CliAttention, AccumulatorOverflowIsRefused) {
  Files f("cli-attn-ovf");
  put(f.q, 64, 2, 16, 0);
  put(f.k, 64, 1, 16, 1);
  write_npy_f32(f.v, {1, 64, 1, 16}, std::vector<float>(64 * 16, 3e37f));
  expect_usage_error(run_cli("attention --dtype bf16" + f.args()),
                     "the float32 O accumulator overflows (|O| > 3.4e38)");
}

// Inputs beyond the dtype's range are clamped by the conversion: V of 1e30 in fp16 became 65504
// with rel-L2 1.0 and no word. The table says so and the JSON counts them.
TEST(CliAttention, SaturatedInputsAreReported) {
  Files f("cli-attn-sat");
  put(f.q, 64, 2, 16, 0);
  put(f.k, 64, 1, 16, 1);
  write_npy_f32(f.v, {1, 64, 1, 16}, std::vector<float>(64 * 16, 1e30f));
  // One run: the table on stdout and the JSON in a file (--json PATH keeps the table).
  const std::string report = (f.dir / "report.json").string();
  auto t = run_cli("attention --dtype fp16 --json " + report + f.args());
  ASSERT_EQ(t.code, 0) << t.err;
  EXPECT_NE(t.out.find("fp16 inputs saturated: Q 0, K 0, V 1024 values beyond fp16's max finite"),
            std::string::npos)
      << t.out;
  EXPECT_EQ(nlohmann::json::parse(slurp(report))["results"]["runs"][0]["inputs_saturated"]["v"],
            1024);
  auto plain = run_cli(kSmall + " --json -");  // nothing saturated: no such field
  ASSERT_EQ(plain.code, 0) << plain.err;
  EXPECT_FALSE(nlohmann::json::parse(plain.out)["results"]["runs"][0].contains("inputs_saturated"));
}

// Q = 0 and V = 0: the output and the reference are zero vectors, whose cosine is undefined:
// nan, not 0.000000 next to a rel-L2 of 0.
TEST(CliAttention, CosineOfZeroVectorsIsNan) {
  Files f("cli-attn-zero");
  write_npy_f32(f.q, {1, 64, 2, 16}, std::vector<float>(64 * 2 * 16, 0.0f));
  put(f.k, 64, 1, 16, 1);
  write_npy_f32(f.v, {1, 64, 1, 16}, std::vector<float>(64 * 16, 0.0f));
  auto r = run_cli("attention --dtype e4m3 --json -" + f.args());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["results"]["runs"][0]["cosine"], "nan");
}

// With --seq-k the table's seq column shows both lengths (it showed seq_q alone).
TEST(CliAttention, SeqColumnShowsBothLengths) {
  auto r = run_cli("attention --batch 1 --heads 1 --d 16 --seq 128 --seq-k 64 --threads 2");
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(" 128/64 "), std::string::npos) << r.out;
}

// ---- block-scaled operands: every bad input names its option (exit 2)
TEST(CliAttention, BlockOperandErrors) {
  const std::string s = "attention --batch 1 --heads 1 --d 64 --seq 128 --threads 2";
  expect_usage_error(run_cli(s + " --p-format fp4"), "unknown --p-format 'fp4'");
  expect_usage_error(run_cli(s + " --qk-format mxfp9"), "--qk-format");
  expect_usage_error(run_cli(s + " --p-format mxfp4 --scale-rule round"), "--scale-rule");
  expect_usage_error(run_cli(s + " --qk-format mxfp8 --scale-block 48"),
                     "does not divide the head dim d = 64");
  expect_usage_error(run_cli(s + " --v-format nvfp4 --block-n 40"), "does not divide --block-n 40");
  expect_usage_error(run_cli(s + " --p-format nvfp4 --scale-rule rceil"), "cannot hold");
  expect_usage_error(run_cli(s + " --p-format mxfp4 --scale-rule nearest"), "cannot hold");
  expect_usage_error(run_cli(s + " --p-format mxfp4 --p-rule two-level"), "--p-rule two-level");
  expect_usage_error(run_cli(s + " --p-rule two-level"),
                     "--p-rule applies to block-scaled operands");
  expect_usage_error(run_cli(s + " --scale-block 16"),
                     "--scale-block applies to block-scaled operands");
  expect_usage_error(run_cli(s + " --p-format nvfp4 --p-rule two-level --tau 1"),
                     "refusing to run");
  expect_usage_error(run_cli(s + " --p-format nvfp4 --dtype bf16,e4m3"), "--dtype lists");
}

TEST(CliAttention, BlockOperandsRunAndSplit) {
  const auto r = run_cli(
      "attention --batch 1 --heads 1 --d 64 --seq 128 --threads 2 --qk-format mxfp8 "
      "--p-format nvfp4 --p-rule two-level --v-format mxfp8 --json -");
  ASSERT_EQ(r.code, 0) << r.err;
  const auto j = nlohmann::json::parse(r.out);
  const auto& run = j["results"]["runs"][0];
  EXPECT_EQ(run["formats"]["p"], "nvfp4");
  EXPECT_EQ(run["formats"]["p_rule"], "two-level");
  for (const char* k : {"qk_quantization", "v_quantization", "p_quantization", "exp2", "rescaling"})
    EXPECT_TRUE(run["error_split"].contains(k)) << k;
  EXPECT_GT(run["error_split"]["p_quantization"].get<double>(), 0.0);
}

// --tensor-scale (NVFP4 Q/K/V's FP32 tensor scale), --save-o (the output as .npy) and --masked-exp
// (the masked tiles' exp2): bad values exit 2 naming the option.
TEST(CliAttention, TensorScaleSaveOMaskedExpRefusals) {
  const std::string never = " --save-o /tmp/fa4sim-never.npy";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {kSmall + " --qk-format nvfp4 --tensor-scale two", "unknown --tensor-scale 'two'"},
      {kSmall + " --tensor-scale one", "--tensor-scale applies to block-scaled operands"},
      {"attention --heads 2 --d 16 --seq 64,128" + never, "--save-o writes one run's output"},
      {kSmall + " --dtype bf16,e4m3" + never, "--save-o writes one run's output"},
      {kSmall + " --tau 0,8" + never, "--save-o writes one run's output"},
      {kSmall + " --save-o /nonexistent-dir/o.npy", "--save-o"},
      {kSmall + " --exp schedule:10 --masked-exp never", "unknown --masked-exp 'never'"},
      {kSmall + " --exp mufu --masked-exp mufu", "--masked-exp mufu applies to --exp schedule"}};
  for (const auto& [args, needle] : cases) expect_usage_error(run_cli(args), needle);
}

// The saved output is the run's: (batch, seq, heads, d), bf16 values. --tensor-scale one changes
// the NVFP4 operands (the scales are rounded relative to 1, not to amax / 2688). With one key tile
// (seq 128 = --block-n) every tile is the row's first, so --masked-exp mufu runs the whole pass on
// the MUFU: the output equals --exp mufu's bit for bit, and differs from the schedule's.
TEST(CliAttention, SaveOTensorScaleAndMaskedExp) {
  const auto dir = temp_dir("cli-attn-save-o");
  const std::string base = "attention --batch 1 --heads 2 --d 64 --seq 128 --threads 2";
  auto out = [&](const std::string& opts, const std::string& name) {
    const std::string path = (dir / name).string();
    const auto r = run_cli(base + " " + opts + " --no-split --save-o " + path);
    EXPECT_EQ(r.code, 0) << r.err;
    const NpyArray a = read_npy(path);
    EXPECT_EQ(a.shape, (std::vector<uint64_t>{1, 128, 2, 64})) << opts;
    return a.to_float32();
  };
  const std::vector<float> mufu = out("--exp mufu", "mufu.npy");
  ASSERT_EQ(mufu.size(), size_t(128 * 2 * 64));
  for (float x : mufu) ASSERT_EQ(x, quantize(kBF16, x, Overflow::satfinite)) << "not a bf16 value";
  const std::vector<float> masked = out("--exp schedule:10,4,1 --masked-exp mufu", "masked.npy");
  const std::vector<float> sched = out("--exp schedule:10,4,1", "sched.npy");
  EXPECT_EQ(masked, mufu);
  EXPECT_NE(sched, mufu);
  // The --tensor-scale one run writes its JSON report too (one run for both checks).
  const std::string report = (dir / "one.json").string();
  EXPECT_NE(out("--qk-format nvfp4", "amax.npy"),
            out("--qk-format nvfp4 --tensor-scale one --json " + report, "one.npy"));
  EXPECT_EQ(nlohmann::json::parse(slurp(report))["params"]["tensor_scale"], "one");
  std::filesystem::remove_all(dir);
}

TEST(CliCheck, BlockScaledP) {
  auto r = run_cli("check --p-format nvfp4 --p-rule two-level --tau 0");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("2688"), std::string::npos) << r.out;
  r = run_cli("check --p-format nvfp4 --p-rule two-level --tau 1");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.out.find("UNSAFE"), std::string::npos) << r.out;
  r = run_cli("check --p-format mxfp4 --scale-rule floor,rceil");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("25 % of maxima"), std::string::npos) << r.out;
  expect_usage_error(run_cli("check --p-format fp4"), "unknown --p-format 'fp4'");
  expect_usage_error(run_cli("check --p-format nvfp4 --scale-rule floor"), "--scale-rule");
  expect_usage_error(run_cli("check --p-format mxfp4 --p-rule two-level"), "--p-rule two-level");
  expect_usage_error(run_cli("check --p-format nvfp4 --dtype e4m3"), "--dtype and --p-format");
  expect_usage_error(run_cli("check --scale-rule floor"), "--scale-rule applies");
}

}  // namespace
}  // namespace fa4sim::test
