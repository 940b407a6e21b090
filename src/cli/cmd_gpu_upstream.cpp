// `fa4sim gpu upstream`: upstream FlashAttention-4 (flash-attn-4, CuTe DSL) on the GPU as the
// reference: `info` (versions, device), `exp2` (its ex2_emulation vs ex2_emu on every float32),
// `check` (its sm90 forward vs the float64 reference and the CPU model). Parses and validates;
// the work is in src/gpu/gpu_upstream.cpp. Registered under `gpu` by add_gpu.
#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/error.h"
#include "fa4sim/gpu/gpu_upstream.h"

namespace fa4sim::cli {

namespace {

struct UpstreamCli {
  std::string python = "python3";
  // exp2
  std::string degrees = "0,1,2,3,4,5", inputs_log2 = "32";
  // check
  std::string dtype = "bf16", head_dim = "128", batch = "1", heads = "4", kv_heads, seq = "1024", seq_k,
              q_scale = "1", seed = "1", tau, max_offset, emu;
  bool causal = false, suite = false, suite_tricks = false, variant = false, count_rescales = false;
  // bench
  std::string b_batch = "4", b_heads = "32", b_seq = "4096", b_d = "64,128", b_causal = "0,1", b_tau = "0,4,8",
              b_emu = "0,2,4", b_warmup = "5", b_iters = "20";
  CommonOptions info_common, exp2_common, check_common, bench_common;
};

UpstreamRunConfig run_from_options(const UpstreamCli& c) {
  UpstreamRunConfig r;
  const std::string d = parse_choice("--dtype", c.dtype, {"bf16", "fp16", "e4m3", "e5m2"});
  r.dtype = d == "bf16" ? GpuAttnDtype::bf16 : d == "fp16" ? GpuAttnDtype::fp16
                                            : d == "e4m3" ? GpuAttnDtype::e4m3
                                                          : GpuAttnDtype::e5m2;
  r.shape.head_dim = int(parse_int("--d", c.head_dim, 1, 4096));
  r.shape.batch = int(parse_int("--batch", c.batch, 1, 65535));
  r.shape.heads_q = int(parse_int("--heads", c.heads, 1, 65535));
  r.shape.heads_kv = c.kv_heads.empty() ? r.shape.heads_q : int(parse_int("--kv-heads", c.kv_heads, 1, 65535));
  r.shape.seq_q = int(parse_int("--seq", c.seq, 1, 1 << 20));
  r.shape.seq_k = c.seq_k.empty() ? r.shape.seq_q : int(parse_int("--seq-k", c.seq_k, 1, 1 << 20));
  r.shape.causal = c.causal;
  r.shape.causal_bottom_right = true;  // upstream's alignment
  r.q_scale = parse_double("--q-scale", c.q_scale);
  if (!(r.q_scale > 0) || r.q_scale > 1e6) throw Error("--q-scale must be in (0, 1e6]", "e.g. --q-scale 8");
  r.seed = uint64_t(parse_int("--seed", c.seed, 0, int64_t(1) << 53));
  r.label = "custom";
  upstream_validate(r.shape, r.dtype);
  upstream_validate_check_size(r.shape);
  r.tricks.variant = c.variant || !c.tau.empty() || !c.max_offset.empty() || !c.emu.empty();
  if (r.tricks.variant) {
    r.tricks.tau = c.tau.empty() ? 0.f : float(parse_double("--tau", c.tau));
    r.tricks.max_offset = c.max_offset.empty() ? 0.f : float(parse_double("--max-offset", c.max_offset));
    r.tricks.emu_eighths = c.emu.empty() ? 0 : int(parse_int("--emu", c.emu, 0, 8));
    upstream_validate_tricks(r.tricks, r.dtype);
    r.label = fmt::format("variant tau {:g} offset {:g} emu {}/8", r.tricks.tau, r.tricks.max_offset,
                          r.tricks.emu_eighths);
  }
  return r;
}

}  // namespace

void add_gpu_upstream(CLI::App& gpu) {
  static UpstreamCli c;
  auto* up = gpu.add_subcommand(
      "upstream",
      "Upstream FlashAttention-4 (the flash-attn-4 package) on the GPU as the reference: its "
      "ex2_emulation and its sm90 forward against fa4sim (needs scripts/upstream_install.sh)");
  up->require_subcommand(1);
  auto python_opt = [](CLI::App* s) {
    s->add_option("--python", c.python, "Python with torch and flash-attn-4 (runs scripts/fa4_upstream.py)")
        ->type_name("PATH")
        ->capture_default_str();
  };

  auto* info = up->add_subcommand("info", "Versions of the pinned upstream packages, torch and the device "
                                          "(exit 3 without a GPU, 2 when upstream is not installed)");
  python_opt(info);
  add_common_options(info, c.info_common);
  info->callback([] {
    Stopwatch sw;
    check_report_path(c.info_common.json_path);
    const json env = upstream_env(c.python);
    Report r;
    r.command = "gpu upstream info";
    r.results = json{{"env", env}};
    Table t{"Upstream FlashAttention-4 on this machine", {"what", "value"}, {}, {}};
    const json packages = env.value("packages", json::object());  // items() must not outlive it
    for (const auto& [k, v] : packages.items())
      t.rows.push_back({k, v.is_null() ? std::string("not installed") : v.get<std::string>()});
    t.rows.push_back({"torch", env.value("torch", json(nullptr)).is_null() ? "not importable" : env["torch"].get<std::string>()});
    t.rows.push_back({"device", env.value("device", std::string("none"))});
    t.rows.push_back({"flash_attn.cute imports", env.value("upstream_importable", false) ? "yes" : "no"});
    r.tables.push_back(t);
    // The table always (it is how an install is diagnosed); the JSON report only when usable.
    bool usable = true;
    try {
      upstream_require(env);
    } catch (const Error&) {
      usable = false;
    }
    emit(r, usable ? c.info_common.json_path : std::string(), sw.seconds());
    upstream_require(env);
  });

  auto* ex = up->add_subcommand(
      "exp2", "Upstream's own ex2_emulation, compiled by the CuTe DSL on the GPU, against fa4sim's ex2_emu on "
              "every float32 input, per degree (exit 1 on any mismatch)");
  ex->add_option("--degree", c.degrees, "Degrees of upstream's POLY_EX2 (0..5)")->type_name("LIST")->capture_default_str();
  ex->add_option("--inputs-log2", c.inputs_log2, "Compare inputs 0 .. 2^K-1 (8..32; 32 = every bit pattern)")
      ->type_name("K")
      ->capture_default_str();
  python_opt(ex);
  add_common_options(ex, c.exp2_common);
  ex->callback([] {
    Stopwatch sw;
    UpstreamExp2Options o;
    o.degrees.clear();
    for (int64_t d : parse_int_list("--degree", c.degrees, 0, 5)) o.degrees.push_back(int(d));
    o.total_log2 = int(parse_int("--inputs-log2", c.inputs_log2, 8, 32));
    o.python = c.python;
    o.threads = resolved_threads(c.exp2_common);
    check_report_path(c.exp2_common.json_path);
    Report r = run_upstream_exp2(o);
    emit(r, c.exp2_common.json_path, sw.seconds());
    if (!r.results.value("bit_exact", false))
      throw Error("upstream's ex2_emulation and fa4sim's ex2_emu differ", "see the mismatches above", kExitCheckFailed);
  });

  auto* ck = up->add_subcommand(
      "check", "Upstream's forward (flash_attn_func; sm90 path on Hopper) on seeded inputs against float64 and the "
               "CPU model configured as that kernel (exit 1 when a criterion fails)");
  ck->add_flag("--suite", c.suite, "Run the standard 19 configurations (bf16/fp16, d 64/128, causal, GQA, "
                                   "ragged 300x333, seq 8192) instead of the shape options");
  ck->add_option("--dtype", c.dtype, "Q/K/V type: bf16 or fp16 (FP8 is sm100-only upstream)")->capture_default_str();
  ck->add_option("--d", c.head_dim, "Head dimension: 8..256, a multiple of 8")->type_name("D")->capture_default_str();
  add_hidden_alias(ck, "--head-dim", c.head_dim);
  ck->add_option("--batch", c.batch, "Batch size")->capture_default_str();
  ck->add_option("--heads", c.heads, "Query heads")->capture_default_str();
  ck->add_option("--kv-heads", c.kv_heads, "K/V heads (GQA; default = --heads)");
  ck->add_option("--seq", c.seq, "Query length (and key length unless --seq-k)")->capture_default_str();
  ck->add_option("--seq-k", c.seq_k, "Key length (default = --seq)");
  ck->add_flag("--causal", c.causal, "Causal mask, bottom-right aligned as upstream's");
  ck->add_option("--q-scale", c.q_scale, "Multiply Q by this (sharper rows)")->capture_default_str();
  ck->add_option("--seed", c.seed, "Seed of the inputs")->capture_default_str();
  ck->add_flag("--variant", c.variant, "Run fa4sim's variant of upstream's kernel with FA4's softmax tricks "
                                       "(scripts/fa4_tricks.py); implied by --tau/--max-offset/--emu");
  ck->add_option("--tau", c.tau, "Variant: rescale threshold in log2 units (0..64; FA4 uses 8)");
  ck->add_option("--max-offset", c.max_offset, "Variant: P offset in log2 units (0..64; FA4 uses 0 for 16-bit)");
  ck->add_option("--emu", c.emu, "Variant: eighths of each key block's n8 tiles through ex2_emulation (0..8)");
  ck->add_flag("--count-rescales", c.count_rescales,
               "Variant runs also count their rescale decisions on the GPU (returned in place of the LSE, so the "
               "LSE criteria are skipped) and compare the shares with the CPU model's");
  ck->add_flag("--suite-tricks", c.suite_tricks, "Run the variant's 36-run grid (tau 0/4/8, q-scale 1/8, bf16 d64 "
                                                 "and fp16 d128, emulated 0, 1/4, 1/2) instead of the shape options");
  python_opt(ck);
  add_common_options(ck, c.check_common);
  ck->callback([] {
    Stopwatch sw;
    UpstreamCheckOptions o;
    if (c.suite && c.suite_tricks) throw Error("--suite and --suite-tricks exclude each other", "run one, then the other");
    if (c.suite) {
      o.runs = upstream_suite();
    } else if (c.suite_tricks) {
      o.runs = upstream_tricks_suite();
    } else {
      o.runs.push_back(run_from_options(c));
    }
    if (c.count_rescales) {
      bool any = false;
      for (auto& run : o.runs) {
        run.tricks.count = run.tricks.variant;
        any = any || run.tricks.variant;
      }
      if (!any) throw Error("--count-rescales counts in fa4sim's variant only", "add --variant, --tau or --emu, or --suite-tricks");
    }
    o.python = c.python;
    o.threads = resolved_threads(c.check_common);
    check_report_path(c.check_common.json_path);
    Report r = run_upstream_check(o);
    emit(r, c.check_common.json_path, sw.seconds());
    if (!r.results.value("pass", false))
      throw Error("a criterion failed for upstream vs the CPU model", "see the table above", kExitCheckFailed);
  });

  auto* bn = up->add_subcommand(
      "bench", "Time upstream's sm90 forward with FA4's softmax tricks (tau x emulated fraction) next to the stock "
               "kernel and SDPA cuDNN, bf16, in one run");
  bn->add_option("--batch", c.b_batch, "Batch size")->capture_default_str();
  bn->add_option("--heads", c.b_heads, "Heads")->capture_default_str();
  bn->add_option("--seq", c.b_seq, "Sequence lengths (list)")->type_name("LIST")->capture_default_str();
  bn->add_option("--d", c.b_d, "Head dims (list; 8..256, multiples of 8)")->type_name("D[,D...]")->capture_default_str();
  add_hidden_alias(bn, "--head-dim", c.b_d);
  bn->add_option("--causal", c.b_causal, "Causal values (list of 0/1)")->type_name("LIST")->capture_default_str();
  bn->add_option("--tau", c.b_tau, "Variant thresholds (list, log2 units)")->type_name("LIST")->capture_default_str();
  bn->add_option("--emu", c.b_emu, "Variant emulated eighths (list, 0..8)")->type_name("LIST")->capture_default_str();
  bn->add_option("--warmup", c.b_warmup, "Untimed calls per point")->capture_default_str();
  bn->add_option("--iters", c.b_iters, "Timed calls per point (median)")->capture_default_str();
  python_opt(bn);
  add_common_options(bn, c.bench_common);
  bn->callback([] {
    Stopwatch sw;
    UpstreamBenchOptions o;
    o.batch = int(parse_int("--batch", c.b_batch, 1, 65535));
    o.heads = int(parse_int("--heads", c.b_heads, 1, 65535));
    auto ints = [](const std::string& opt, const std::string& v, int64_t lo, int64_t hi) {
      std::vector<int> out;
      for (int64_t x : parse_int_list(opt, v, lo, hi)) out.push_back(int(x));
      return out;
    };
    o.seqs = ints("--seq", c.b_seq, 1, 1 << 20);
    o.head_dims = ints("--d", c.b_d, 1, 4096);
    o.causal = ints("--causal", c.b_causal, 0, 1);
    o.taus.clear();
    for (double x : parse_double_list("--tau", c.b_tau)) o.taus.push_back(float(x));
    o.emu_eighths = ints("--emu", c.b_emu, 0, 8);
    o.warmup = int(parse_int("--warmup", c.b_warmup, 0, 1000));
    o.iters = int(parse_int("--iters", c.b_iters, 1, 10000));
    o.python = c.python;
    check_report_path(c.bench_common.json_path);
    Report r = run_upstream_bench(o);
    emit(r, c.bench_common.json_path, sw.seconds());
  });
}

}  // namespace fa4sim::cli
