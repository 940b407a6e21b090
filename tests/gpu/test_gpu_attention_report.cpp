// gpu_attention_report (host side, no GPU needed): `fa4sim gpu attention`'s reports rendered from
// results given by hand. With the numbers of recorded H200 runs (data/gpu/attention/) the reports
// give back those runs' params and results, key for key; the tables' cells and notes; the
// criteria (a rel-L2 ratio off by more than 5 %, a replay mismatch) fail the check.
#include <gtest/gtest.h>

#include <fstream>
#include <limits>
#include <string>

#include "fa4sim/gpu/gpu_attention_report.h"
#include "recorded_run.h"

using namespace fa4sim;

namespace {

using fa4sim::test::expect_recorded;
using fa4sim::test::recorded;

const char* kH200 = "NVIDIA H200 (132 SMs, sm_90)";

// data/gpu/attention/e2e_e4m3_tau4_q8_s256.json: e4m3, tau 4, max_offset 8, q-scale 8, 2 heads of
// 256 x 256, d 128; 316 of 1536 rows and 90 of 96 warps rescaled, 252 saturated P, on both sides.
GpuAttnCheckOptions e4m3_check_options() {
  GpuAttnCheckOptions o;
  o.shape.heads = o.shape.kv_heads = 2;
  o.shape.seq_q = o.shape.seq_k = 256;
  o.sm.dtype = GpuAttnDtype::e4m3;
  o.sm.tau = 4;
  o.sm.max_offset = 8;
  o.q_scale = 8;
  return o;
}

GpuAttnCheckResult e4m3_check_result() {
  GpuAttnCheckResult c;
  c.device = kH200;
  c.gpu.rel_l2 = 0.27458646442593887;
  c.gpu.counts = GpuAttnCounts{1536, 316, 96, 90, 252};
  c.model = GpuAttnCheckSide{0.2745864529428272, GpuAttnCounts{1536, 316, 96, 90, 252}};
  return c;
}

}  // namespace

TEST(GpuAttentionReport, CheckWithModelGivesTheRecordedRun) {
  const GpuAttnCheckOptions o = e4m3_check_options();
  const Report r = gpu_attention_check_report(o, e4m3_check_result());
  expect_recorded(r, recorded("attention/e2e_e4m3_tau4_q8_s256.json"));
  ASSERT_EQ(r.tables.size(), 1u);
  const Table& t = r.tables[0];
  EXPECT_EQ(t.title, "GPU kernel vs CPU model (float64 reference for rel-L2)");
  EXPECT_EQ(t.columns, (std::vector<std::string>{"", "rel-L2 vs f64", "rescale rows %",
                                                 "rescale warps %", "saturated P"}));
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"GPU (NVIDIA H200 (132 SMs, sm_90))", "2.7459e-01",
                                                 "20.573", "93.750", "252"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"CPU model (online_softmax.h)", "2.7459e-01",
                                                 "20.573", "93.750", "252"}));
  EXPECT_EQ(t.notes,
            (std::vector<std::string>{
                "rel-L2 ratio GPU/model 1.0000 (must be within 5 %): ok",
                "rows diff +0.000 pp (tol 4.876), warps diff +0.000 pp (tol 10.982): ok"}));
}

TEST(GpuAttentionReport, CheckFailsOnARelL2RatioOffByMoreThanFivePercent) {
  const GpuAttnCheckOptions o = e4m3_check_options();
  GpuAttnCheckResult c = e4m3_check_result();
  c.gpu.rel_l2 = c.model->rel_l2 * 1.06;
  c.gpu.counts.row_rescales = 300;
  const Report r = gpu_attention_check_report(o, c);
  EXPECT_FALSE(r.results.at("pass").get<bool>());
  EXPECT_FALSE(r.results.at("agreement").at("rel_l2_ok").get<bool>());
  EXPECT_TRUE(r.results.at("agreement").at("rows_ok").get<bool>());
  EXPECT_EQ(r.tables[0].notes[0], "rel-L2 ratio GPU/model 1.0600 (must be within 5 %): FAIL");
  EXPECT_EQ(r.tables[0].notes[1],
            "rows diff -1.042 pp (tol 4.876), warps diff +0.000 pp (tol 10.982): ok");
  c.gpu.rel_l2 = std::numeric_limits<double>::quiet_NaN();  // NaN fails whatever the model says
  c.model.reset();
  EXPECT_FALSE(gpu_attention_check_report(o, c).results.at("pass").get<bool>());
}

// data/gpu/attention/exact_e4m3_tau4_emu2.json: emulated tiles (2 of 8), so no CPU model; the
// replay of the GPU's S with 0 mismatches.
TEST(GpuAttentionReport, CheckWithReplayGivesTheRecordedRun) {
  GpuAttnCheckOptions o = e4m3_check_options();
  o.sm.emu_tiles = 2;
  o.q_scale = 1;
  o.exact = true;
  GpuAttnCheckResult c;
  c.device = kH200;
  c.gpu = GpuAttnCheckSide{0.17616046141586084, GpuAttnCounts{1536, 1, 96, 1, 296}};
  GpuAttnReplay rp;
  rp.row_max_checked = rp.flag_checked = 2048;
  rp.warp_checked = 128;
  rp.p_emu_checked = rp.p_cvt_emu_checked = 32768;
  rp.p_cvt_checked = 131072;
  rp.p_mufu_checked = 98304;
  rp.p_mufu_ulp[0] = 59502;
  rp.p_mufu_ulp[1] = 38800;
  rp.p_mufu_ulp[2] = 2;
  c.replay = rp;
  const Report r = gpu_attention_check_report(o, c);
  expect_recorded(r, recorded("attention/exact_e4m3_tau4_emu2.json"));
  ASSERT_EQ(r.tables.size(), 2u);
  ASSERT_EQ(r.tables[0].rows.size(), 1u);
  EXPECT_EQ(r.tables[0].rows[0], (std::vector<std::string>{"GPU (NVIDIA H200 (132 SMs, sm_90))",
                                                           "1.7616e-01", "0.065", "1.042", "296"}));
  EXPECT_EQ(r.tables[0].notes,
            (std::vector<std::string>{
                "CPU model skipped: emulated tiles are checked bit for bit by --exact"}));
  const Table& e = r.tables[1];
  EXPECT_EQ(e.title, "Exact replay of the GPU's own S on the CPU (checked, mismatches)");
  EXPECT_EQ(e.columns, (std::vector<std::string>{"quantity", "checked", "mismatch"}));
  EXPECT_EQ(e.rows, (std::vector<std::vector<std::string>>{
                        {"row_max after each block (bits)", "2048", "0"},
                        {"row rescale flag", "2048", "0"},
                        {"warp vote (__any_sync)", "128", "0"},
                        {"P emulated (float32 bits)", "32768", "0"},
                        {"P cast bits (all)", "131072", "0"},
                        {"P cast bits (emulated, from CPU P)", "32768", "0"}}));
  EXPECT_EQ(
      e.notes,
      (std::vector<std::string>{
          "MUFU P vs correctly rounded exp2, 98304 values: 0 ulp 59502, 1 ulp 38800, 2 ulp 2, >2 ulp 0"}));
}

TEST(GpuAttentionReport, CheckFailsOnAnyReplayMismatch) {
  GpuAttnCheckOptions o = e4m3_check_options();
  o.exact = true;
  GpuAttnCheckResult c = e4m3_check_result();
  GpuAttnReplay rp;
  rp.flag_checked = 10;
  rp.flag_mismatch = 1;
  rp.first_mismatches = {"flag at (0, 3, 1): cpu 1 gpu 0"};
  c.replay = rp;
  Report r = gpu_attention_check_report(o, c);
  EXPECT_EQ(r.params.at("mode"), "check+exact");
  EXPECT_FALSE(r.results.at("pass").get<bool>());
  EXPECT_TRUE(r.results.at("agreement").at("rel_l2_ok").get<bool>());
  EXPECT_EQ(r.results.at("exact").at("rescale_flag"), json::parse("[10, 1]"));
  EXPECT_EQ(r.results.at("exact").at("first_mismatches"),
            json::parse(R"(["flag at (0, 3, 1): cpu 1 gpu 0"])"));
  ASSERT_EQ(r.tables.size(), 2u);
  EXPECT_EQ(r.tables[1].rows[1], (std::vector<std::string>{"row rescale flag", "10", "1"}));
  EXPECT_EQ(r.tables[1].notes.back(), "mismatch: flag at (0, 3, 1): cpu 1 gpu 0");
  c.replay = GpuAttnReplay{};
  c.replay->p_mufu_ulp[3] = 1;  // a MUFU result more than 2 ulp off fails too
  r = gpu_attention_check_report(o, c);
  EXPECT_FALSE(r.results.at("pass").get<bool>());
  EXPECT_EQ(r.tables[1].notes[0],
            "MUFU P vs correctly rounded exp2, 0 values: 0 ulp 0, 1 ulp 0, 2 ulp 0, >2 ulp 1");
}

// data/gpu/upstream/bench_four_way.json: d 64/128 x causal x tau 0/8 next to torch's rows, which
// carry upstream FA4's figures as well; each row takes the torch object of its (d, causal).
TEST(GpuAttentionReport, BenchGivesTheRecordedRunWithTorch) {
  const json rec = recorded("upstream/bench_four_way.json");
  GpuAttnBenchOptions o;
  o.taus = {0, 8};
  GpuAttnBenchResult b;
  b.device = kH200;
  b.torch = rec.at("results").at("torch_raw");
  for (const auto& row : rec.at("results").at("rows")) {
    GpuAttnBenchRow x;
    x.head_dim = row.at("head_dim").get<int>();
    x.causal = row.at("causal").get<bool>();
    x.tau = row.at("tau").get<float>();
    x.emu_tiles = row.at("emu_tiles").get<int>();
    x.ms_median = row.at("ms_median").get<double>();
    x.ms_min = row.at("ms_min").get<double>();
    x.ms_max = row.at("ms_max").get<double>();
    x.tflops = row.at("tflops").get<double>();
    b.rows.push_back(x);
  }
  ASSERT_EQ(b.rows.size(), 8u);
  const Report r = gpu_attention_bench_report(o, b);
  expect_recorded(r, rec);
  ASSERT_EQ(r.tables.size(), 1u);
  const Table& t = r.tables[0];
  EXPECT_EQ(
      t.title,
      "fa4sim kernel vs upstream FA4 and torch SDPA (TFLOP/s, median; same run, NVIDIA H200 (132 SMs, "
      "sm_90))");
  EXPECT_EQ(t.columns,
            (std::vector<std::string>{"d", "causal", "tau", "emu f", "fa4sim ms", "fa4sim TFLOP/s",
                                      "upstream FA4", "SDPA flash", "SDPA cuDNN"}));
  ASSERT_EQ(t.rows.size(), 8u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"64", "no", "0", "0/8", "1.396", "393.9", "503.7",
                                                 "300.3", "473.0"}));
  EXPECT_EQ(t.rows[3][0], "64");
  EXPECT_EQ(t.rows[3][1], "yes");
  EXPECT_EQ(t.rows[3][2], "8");
  EXPECT_EQ(t.rows[3][6], "352.1");
  EXPECT_EQ(
      t.notes,
      (std::vector<std::string>{
          "upstream FA4 = flash-attn-4's flash_attn_func (CuTe DSL; sm90 path on Hopper), bf16/fp16, "
          "causal bottom-right (= top-left here: seq_q = seq_k)",
          "FLOPs = 4*B*H*S^2*d (halved for causal); fa4sim kernel: wgmma m64n64k16 / m64nDk16, see "
          "README"}));
}

// Without torch (--python ''), or with torch but without upstream FA4: "n/a" columns and a note
// saying why.
TEST(GpuAttentionReport, BenchSaysWhyTorchOrUpstreamIsMissing) {
  GpuAttnBenchOptions o;
  o.ds = {128};
  o.causal = {1};
  o.emu_tiles = {4};
  o.python = "";
  GpuAttnBenchResult b;
  b.device = "GPU";
  b.torch = json{{"error", "skipped (--python '')"}};
  b.rows.push_back(GpuAttnBenchRow{128, true, 8, 4, 2.0, 1.5, 2.5, 300.24});
  Report r = gpu_attention_bench_report(o, b);
  EXPECT_EQ(r.tables[0].rows[0], (std::vector<std::string>{"128", "yes", "8", "4/8", "2.000",
                                                           "300.2", "n/a", "n/a", "n/a"}));
  EXPECT_EQ(r.tables[0].notes[0], "torch: skipped (--python '')");
  EXPECT_EQ(r.results.at("rows")[0].at("emu_fraction").get<double>(), 0.5);
  EXPECT_EQ(r.results.at("rows")[0].at("torch"), json::object());
  EXPECT_EQ(r.results.at("torch_raw"), b.torch);
  b.torch = json::array({json{{"head_dim", 128},
                              {"causal", true},
                              {"flash_tflops", 250.0},
                              {"cudnn_tflops", "n/a"},
                              {"fa4_error", "No module named 'flash_attn'"}}});
  r = gpu_attention_bench_report(o, b);
  EXPECT_EQ(r.tables[0].rows[0], (std::vector<std::string>{"128", "yes", "8", "4/8", "2.000",
                                                           "300.2", "n/a", "250.0", "n/a"}));
  EXPECT_EQ(
      r.tables[0].notes[0],
      "upstream FA4: No module named 'flash_attn' (install: scripts/gpu/upstream_install.sh)");
  EXPECT_EQ(r.results.at("rows")[0].at("torch"), b.torch[0]);
}
