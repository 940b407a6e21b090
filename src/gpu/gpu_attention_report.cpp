// gpu_attention_report.cpp: the analyses behind `fa4sim gpu attention` (--check and --bench),
// built on include/fa4sim/gpu/gpu_attention.h. Returns Reports; the CLI only parses and prints.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "fa4sim/util/paths.h"
#include "fa4sim/util/subprocess.h"
#include "fa4sim/util/error.h"
#include "fa4sim/gpu/gpu.h"
#include "fa4sim/gpu/gpu_attention_report.h"

namespace fa4sim {

double gpu_attn_share_tolerance(double p_pct, uint64_t n) {
  if (n == 0) return 0.5;
  const double p = p_pct / 100.0;
  return 100.0 * 3.0 * std::sqrt(2.0 * std::max(p * (1 - p), 1e-12) / double(n)) + 0.5;
}

namespace {

double pct(uint64_t a, uint64_t b) { return b == 0 ? 0.0 : 100.0 * double(a) / double(b); }

json shape_json(const GpuAttnShape& s) {
  return json{{"batch", s.batch},  {"heads_q", s.heads}, {"heads_kv", s.kv_heads},
              {"seq_q", s.seq_q},  {"seq_k", s.seq_k},   {"head_dim", s.d},
              {"causal", s.causal}};
}

json softmax_json(const GpuAttnSoftmax& sm, const GpuAttnShape& s) {
  return json{
      {"dtype", gpu_attn_dtype_name(sm.dtype)},
      {"softmax_scale", sm.softmax_scale > 0 ? sm.softmax_scale : 1.0 / std::sqrt(double(s.d))},
      {"tau", sm.tau},
      {"max_offset", sm.max_offset},
      {"emu_tiles", sm.emu_tiles},
      {"emu_fraction", sm.emu_tiles / 8.0},
      {"block_order", sm.reverse_blocks ? "reverse" : "forward"},
      {"block_m", kGpuAttnBlockM},
      {"block_n", kGpuAttnBlockN},
      {"warp_rows", kGpuAttnWarpRows}};
}

json side_json(const GpuAttnCheckSide& s) {
  const GpuAttnCounts& c = s.counts;
  return json{{"rel_l2", s.rel_l2},
              {"rescale_rows_pct", pct(c.row_rescales, c.row_decisions)},
              {"rescale_warps_pct", pct(c.warp_rescales, c.warp_decisions)},
              {"row_decisions", c.row_decisions},
              {"warp_decisions", c.warp_decisions},
              {"saturated_p", c.saturated}};
}

std::vector<std::string> side_cells(const std::string& name, const GpuAttnCheckSide& s) {
  const GpuAttnCounts& c = s.counts;
  return {name, fmt::format("{:.4e}", s.rel_l2),
          fmt::format("{:.3f}", pct(c.row_rescales, c.row_decisions)),
          fmt::format("{:.3f}", pct(c.warp_rescales, c.warp_decisions)),
          std::to_string(c.saturated)};
}

// Comparison 1's criteria: the GPU's rel-L2 within 5 % of the model's, each rescale share within
// gpu_attn_share_tolerance of the model's. Adds results.agreement and the table's notes; returns
// whether all hold.
bool agreement(const GpuAttnCheckSide& gpu, const GpuAttnCheckSide& m, json& res, Table& t) {
  const GpuAttnCounts& gc = gpu.counts;
  const GpuAttnCounts& mc = m.counts;
  const double ratio = gpu.rel_l2 / m.rel_l2;
  const double rows_g = pct(gc.row_rescales, gc.row_decisions),
               rows_m = pct(mc.row_rescales, mc.row_decisions);
  const double warps_g = pct(gc.warp_rescales, gc.warp_decisions),
               warps_m = pct(mc.warp_rescales, mc.warp_decisions);
  const double tol_rows = gpu_attn_share_tolerance(rows_m, mc.row_decisions);
  const double tol_warps = gpu_attn_share_tolerance(warps_m, mc.warp_decisions);
  const bool ok_l2 = std::abs(ratio - 1.0) <= 0.05;
  const bool ok_rows = std::abs(rows_g - rows_m) <= tol_rows;
  const bool ok_warps = std::abs(warps_g - warps_m) <= tol_warps;
  res["agreement"] =
      json{{"rel_l2_ratio", ratio},     {"rel_l2_ok", ok_l2},  {"rows_diff_pp", rows_g - rows_m},
           {"rows_tol_pp", tol_rows},   {"rows_ok", ok_rows},  {"warps_diff_pp", warps_g - warps_m},
           {"warps_tol_pp", tol_warps}, {"warps_ok", ok_warps}};
  t.notes.push_back(fmt::format("rel-L2 ratio GPU/model {:.4f} (must be within 5 %): {}", ratio,
                                ok_l2 ? "ok" : "FAIL"));
  t.notes.push_back(fmt::format(
      "rows diff {:+.3f} pp (tol {:.3f}), warps diff {:+.3f} pp (tol {:.3f}): {}", rows_g - rows_m,
      tol_rows, warps_g - warps_m, tol_warps, ok_rows && ok_warps ? "ok" : "FAIL"));
  return ok_l2 && ok_rows && ok_warps;
}

// Comparison 2: results.exact and its table; returns whether every exact comparison held.
bool replay_section(const GpuAttnReplay& rp, json& res, Report& r) {
  const uint64_t mism = rp.row_max_mismatch + rp.flag_mismatch + rp.warp_mismatch +
                        rp.p_emu_mismatch + rp.p_cvt_mismatch + rp.p_cvt_emu_mismatch;
  res["exact"] = json{{"row_max", {rp.row_max_checked, rp.row_max_mismatch}},
                      {"rescale_flag", {rp.flag_checked, rp.flag_mismatch}},
                      {"warp_vote", {rp.warp_checked, rp.warp_mismatch}},
                      {"p_emulated_bits", {rp.p_emu_checked, rp.p_emu_mismatch}},
                      {"p_cast_bits", {rp.p_cvt_checked, rp.p_cvt_mismatch}},
                      {"p_cast_bits_emulated", {rp.p_cvt_emu_checked, rp.p_cvt_emu_mismatch}},
                      {"p_mufu_checked", rp.p_mufu_checked},
                      {"p_mufu_ulp_hist_0_1_2_gt2",
                       {rp.p_mufu_ulp[0], rp.p_mufu_ulp[1], rp.p_mufu_ulp[2], rp.p_mufu_ulp[3]}},
                      {"first_mismatches", rp.first_mismatches}};
  Table e{"Exact replay of the GPU's own S on the CPU (checked, mismatches)",
          {"quantity", "checked", "mismatch"},
          {},
          {}};
  auto row = [&](const char* n, uint64_t c, uint64_t m) {
    e.rows.push_back({n, std::to_string(c), std::to_string(m)});
  };
  row("row_max after each block (bits)", rp.row_max_checked, rp.row_max_mismatch);
  row("row rescale flag", rp.flag_checked, rp.flag_mismatch);
  row("warp vote (__any_sync)", rp.warp_checked, rp.warp_mismatch);
  row("P emulated (float32 bits)", rp.p_emu_checked, rp.p_emu_mismatch);
  row("P cast bits (all)", rp.p_cvt_checked, rp.p_cvt_mismatch);
  row("P cast bits (emulated, from CPU P)", rp.p_cvt_emu_checked, rp.p_cvt_emu_mismatch);
  e.notes.push_back(fmt::format(
      "MUFU P vs correctly rounded exp2, {} values: 0 ulp {}, 1 ulp {}, 2 ulp {}, >2 ulp {}",
      rp.p_mufu_checked, rp.p_mufu_ulp[0], rp.p_mufu_ulp[1], rp.p_mufu_ulp[2], rp.p_mufu_ulp[3]));
  for (const auto& s : rp.first_mismatches) e.notes.push_back("mismatch: " + s);
  r.tables.push_back(e);
  return mism == 0 && rp.p_mufu_ulp[3] == 0;
}

}  // namespace

GpuAttnCheckResult compute_gpu_attention_check(const GpuAttnCheckOptions& o) {
  GpuAttnCheckResult res;
  res.device = gpu_attn_device_name();
  const GpuAttnInputs in = gpu_attn_make_inputs(o.shape, o.sm.dtype, o.q_scale, o.seed);
  const GpuAttnOutputs gpu = gpu_attn_run(o.shape, o.sm, in, true, o.exact);
  const GpuAttnReference ref = gpu_attn_reference(o.shape, o.sm, in, o.threads);
  res.gpu.rel_l2 = gpu_attn_rel_l2_bf16(gpu.o, ref.o);
  res.gpu.counts = gpu_attn_counts(o.shape, o.sm, gpu.instr);
  if (o.sm.emu_tiles == 0) {
    const GpuAttnModel m = gpu_attn_cpu_model(o.shape, o.sm, in, o.threads);
    GpuAttnCheckSide side;
    side.rel_l2 = gpu_attn_rel_l2(m.o, ref.o);
    side.counts = GpuAttnCounts{m.row_decisions, m.row_rescales, m.warp_decisions, m.warp_rescales,
                                m.saturated};
    res.model = side;
  }
  if (o.exact) res.replay = gpu_attn_replay(o.shape, o.sm, in, gpu);
  return res;
}

Report gpu_attention_check_report(const GpuAttnCheckOptions& o, const GpuAttnCheckResult& c) {
  Report r;
  r.command = "gpu attention";
  r.params = json{{"mode", o.exact ? "check+exact" : "check"},
                  {"shape", shape_json(o.shape)},
                  {"softmax", softmax_json(o.sm, o.shape)},
                  {"q_scale", o.q_scale},
                  {"seed", o.seed}};
  bool pass = std::isfinite(c.gpu.rel_l2);
  json res = json{{"device", c.device}, {"gpu", side_json(c.gpu)}};
  Table t{"GPU kernel vs CPU model (float64 reference for rel-L2)",
          {"", "rel-L2 vs f64", "rescale rows %", "rescale warps %", "saturated P"},
          {},
          {}};
  t.rows.push_back(side_cells("GPU (" + c.device + ")", c.gpu));
  if (c.model) {
    res["model"] = side_json(*c.model);
    t.rows.push_back(side_cells("CPU model (online_softmax.h)", *c.model));
    pass = agreement(c.gpu, *c.model, res, t) && pass;
  } else {
    t.notes.push_back("CPU model skipped: emulated tiles are checked bit for bit by --exact");
  }
  r.tables.push_back(t);
  if (c.replay) pass = replay_section(*c.replay, res, r) && pass;
  res["pass"] = pass;
  r.results = res;
  r.threads = o.threads;
  return r;
}

Report run_gpu_attention_check(const GpuAttnCheckOptions& o) {
  return gpu_attention_check_report(o, compute_gpu_attention_check(o));
}

namespace {

// Runs scripts/drivers/sdpa_bench.py with the shapes; returns its JSON (an array, one object per shape)
// or an object {"error": why}.
json run_torch_bench(const std::string& python, const json& shapes, int warmup, int iters) {
  const std::string script = drivers_dir() + "/sdpa_bench.py";
  const std::string cmd =
      shell_command({python, script, "--warmup", std::to_string(warmup), "--iters",
                     std::to_string(iters), "--shapes", shapes.dump()},
                    "2>&1");
  Pipe pipe(cmd);
  if (pipe.f == nullptr) return json{{"error", "could not start " + python}};
  const std::string out = read_all(pipe.f);
  const auto pos = out.rfind("\n[");
  const std::string tail = pos == std::string::npos ? out : out.substr(pos + 1);
  try {
    return json::parse(tail);
  } catch (const std::exception&) {
    return json{{"error", "torch benchmark failed: " + out.substr(0, 400)}};
  }
}

}  // namespace

GpuAttnBenchResult compute_gpu_attention_bench(const GpuAttnBenchOptions& o) {
  GpuAttnBenchResult res;
  res.device = gpu_attn_device_name();
  json torch_shapes = json::array();
  for (int d : o.ds)
    for (int c : o.causal)
      torch_shapes.push_back(json{{"batch", o.batch},
                                  {"heads", o.heads},
                                  {"seq", o.seq},
                                  {"head_dim", d},
                                  {"causal", c != 0},
                                  {"dtype", gpu_attn_dtype_name(o.dtype)}});
  res.torch = o.python.empty() ? json{{"error", "skipped (--python '')"}}
                               : run_torch_bench(o.python, torch_shapes, o.warmup, o.iters);
  for (int d : o.ds)
    for (int c : o.causal)
      for (float tau : o.taus)
        for (int e : o.emu_tiles) {
          GpuAttnShape s;
          s.batch = o.batch;
          s.heads = s.kv_heads = o.heads;
          s.seq_q = s.seq_k = o.seq;
          s.d = d;
          s.causal = c != 0;
          GpuAttnSoftmax sm;
          sm.dtype = o.dtype;
          sm.tau = tau;
          sm.emu_tiles = e;
          gpu_attn_validate(s, sm, false);
          std::vector<double> ms = gpu_attn_time(s, sm, o.seed, o.warmup, o.iters);
          std::sort(ms.begin(), ms.end());
          GpuAttnBenchRow row;
          row.head_dim = d;
          row.causal = c != 0;
          row.tau = tau;
          row.emu_tiles = e;
          row.ms_median = ms[ms.size() / 2];
          row.ms_min = ms.front();
          row.ms_max = ms.back();
          row.tflops = gpu_attn_flops(s) / (row.ms_median * 1e-3) / 1e12;
          res.rows.push_back(row);
        }
  return res;
}

namespace {

// torch's object for this (head_dim, causal), or an empty object.
json torch_for(const json& torch, int d, bool causal) {
  json tj = json::object();
  if (torch.is_array())
    for (const auto& x : torch)
      if (x.value("head_dim", 0) == d && x.value("causal", false) == causal) tj = x;
  return tj;
}

// A TFLOP/s figure of torch's object, or "n/a".
std::string torch_tflops(const json& tj, const char* key) {
  if (tj.contains(key) && tj[key].is_number()) return fmt::format("{:.1f}", tj[key].get<double>());
  return "n/a";
}

}  // namespace

Report gpu_attention_bench_report(const GpuAttnBenchOptions& o, const GpuAttnBenchResult& res) {
  Report r;
  r.command = "gpu attention --bench";
  r.params = json{{"batch", o.batch},
                  {"heads", o.heads},
                  {"seq", o.seq},
                  {"head_dims", o.ds},
                  {"causal", o.causal},
                  {"taus", o.taus},
                  {"emu_tiles", o.emu_tiles},
                  {"dtype", gpu_attn_dtype_name(o.dtype)},
                  {"warmup", o.warmup},
                  {"iters", o.iters},
                  {"timing", "CUDA events around each launch, median"},
                  {"seed", o.seed}};
  const json& torch = res.torch;
  json rows = json::array();
  Table t{"fa4sim kernel vs upstream FA4 and torch SDPA (TFLOP/s, median; same run, " + res.device +
              ")",
          {"d", "causal", "tau", "emu f", "fa4sim ms", "fa4sim TFLOP/s", "upstream FA4",
           "SDPA flash", "SDPA cuDNN"},
          {},
          {}};
  for (const GpuAttnBenchRow& b : res.rows) {
    const json tj = torch_for(torch, b.head_dim, b.causal);
    rows.push_back(json{{"head_dim", b.head_dim},
                        {"causal", b.causal},
                        {"tau", b.tau},
                        {"emu_tiles", b.emu_tiles},
                        {"emu_fraction", b.emu_tiles / 8.0},
                        {"ms_median", b.ms_median},
                        {"ms_min", b.ms_min},
                        {"ms_max", b.ms_max},
                        {"tflops", b.tflops},
                        {"torch", tj}});
    t.rows.push_back({std::to_string(b.head_dim), b.causal ? "yes" : "no",
                      fmt::format("{:g}", b.tau), fmt::format("{}/8", b.emu_tiles),
                      fmt::format("{:.3f}", b.ms_median), fmt::format("{:.1f}", b.tflops),
                      torch_tflops(tj, "fa4_tflops"), torch_tflops(tj, "flash_tflops"),
                      torch_tflops(tj, "cudnn_tflops")});
  }
  if (torch.is_object() && torch.contains("error"))
    t.notes.push_back("torch: " + torch["error"].get<std::string>());
  if (torch.is_array() && !torch.empty() && torch[0].contains("fa4_error"))
    t.notes.push_back("upstream FA4: " + torch[0]["fa4_error"].get<std::string>() +
                      " (install: scripts/gpu/upstream_install.sh)");
  t.notes.push_back(
      "upstream FA4 = flash-attn-4's flash_attn_func (CuTe DSL; sm90 path on Hopper), bf16/fp16, "
      "causal bottom-right (= top-left here: seq_q = seq_k)");
  t.notes.push_back(
      "FLOPs = 4*B*H*S^2*d (halved for causal); fa4sim kernel: wgmma m64n64k16 / m64nDk16, see README");
  r.tables.push_back(t);
  r.results = json{{"device", res.device}, {"rows", rows}, {"torch_raw", torch}};
  return r;
}

Report run_gpu_attention_bench(const GpuAttnBenchOptions& o) {
  return gpu_attention_bench_report(o, compute_gpu_attention_bench(o));
}

}  // namespace fa4sim
