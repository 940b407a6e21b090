// `fa4sim gpu upstream`: upstream FlashAttention-4 (flash-attn-4, CuTe DSL) on the GPU as the
// reference: `info` (versions, device), `exp2` (its ex2_emulation vs ex2_emu on every float32),
// `check` (its sm90 forward vs the float64 reference and the CPU model). Parses and validates;
// the work is in src/gpu/gpu_upstream.cpp. Registered under `gpu` by add_gpu.
#include <fmt/format.h>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/seed.h"
#include "fa4sim/util/error.h"
#include "fa4sim/gpu/gpu_upstream.h"

namespace fa4sim::cli {

namespace {

struct UpstreamCli {
  std::string python = "python3";
  // exp2
  std::string degrees = "0,1,2,3,4,5", inputs_log2 = "32";
  // check
  std::string dtype = "bf16", head_dim = "128", batch = "1", heads = "4", kv_heads, seq = "1024",
              seq_k, q_scale = "1", seed = default_seed_text(), tau, max_offset, emu;
  bool causal = false, suite = false, suite_tricks = false, variant = false, count_rescales = false,
       compare_models = false;
  std::string save_dir, from_dir, model = "sm90-mufu", unfused;
  // bench
  std::string b_batch = "4", b_heads = "32", b_seq = "4096", b_d = "64,128", b_causal = "0,1",
              b_tau = "0,4,8", b_emu = "0,2,4", b_warmup = "5", b_iters = "20";
  CommonOptions info_common, exp2_common, check_common, bench_common;
};

double parse_q_scale(const std::string& s) {
  const double q = parse_double("--q-scale", s);
  if (!(q > 0) || q > 1e6) throw Error("--q-scale must be in (0, 1e6]", "e.g. --q-scale 8");
  return q;
}

UpstreamRunConfig run_from_options(const UpstreamCli& c) {
  UpstreamRunConfig r;
  r.dtype = gpu_attn_dtype(parse_dtype("--dtype", c.dtype, FormatRole::attention_input));
  r.shape.d = int(parse_int("--d", c.head_dim, 1, 4096));
  r.shape.batch = int(parse_int("--batch", c.batch, 1, 65535));
  r.shape.heads = int(parse_int("--heads", c.heads, 1, 65535));
  r.shape.kv_heads =
      c.kv_heads.empty() ? r.shape.heads : int(parse_int("--kv-heads", c.kv_heads, 1, 65535));
  r.shape.seq_q = int(parse_int("--seq", c.seq, 1, 1 << 20));
  r.shape.seq_k = c.seq_k.empty() ? r.shape.seq_q : int(parse_int("--seq-k", c.seq_k, 1, 1 << 20));
  r.shape.causal = c.causal;
  r.shape.causal_bottom_right = true;  // upstream's alignment
  r.q_scale = parse_q_scale(c.q_scale);
  r.seed = uint64_t(parse_int("--seed", c.seed, 0, int64_t(1) << 53));
  r.label = "custom";
  upstream_validate(r.shape, r.dtype);
  upstream_validate_check_size(r.shape);
  r.tricks.variant = c.variant || !c.tau.empty() || !c.max_offset.empty() || !c.emu.empty();
  if (r.tricks.variant) {
    r.tricks.tau = c.tau.empty() ? 0.f : float(parse_double("--tau", c.tau));
    r.tricks.max_offset =
        c.max_offset.empty() ? 0.f : float(parse_double("--max-offset", c.max_offset));
    r.tricks.emu_eighths = c.emu.empty() ? 0 : int(parse_int("--emu", c.emu, 0, 8));
    upstream_validate_tricks(r.tricks, r.dtype);
    r.label = fmt::format("variant tau {:g} offset {:g} emu {}/8", r.tricks.tau,
                          r.tricks.max_offset, r.tricks.emu_eighths);
  }
  return r;
}

constexpr int64_t kUpstreamMaxGrid = 65535;  // batch and heads
constexpr int64_t kUpstreamMaxSeq = 1 << 20;

// --d: parsed as 1..4096, then upstream's own rule on sm90 (8..256, a multiple of 8) with its message.
void check_upstream_head_dims(const std::string& opt, const std::string& v) {
  for (int64_t d : parse_int_list(opt, v, 1, 4096)) {
    GpuAttnShape s;
    s.d = int(d);
    upstream_validate(s, GpuAttnDtype::bf16);
  }
}

// --tau, --max-offset: the variant's own rule (0..64 in log2 units) with its message.
void check_variant_knobs(const std::string& opt, const std::string& v) {
  for (double x : parse_double_list(opt, v)) {
    UpstreamTricks t;
    (opt == "--max-offset" ? t.max_offset : t.tau) = float(x);
    upstream_validate_tricks(t, GpuAttnDtype::bf16);
  }
}

void add_python_option(CLI::App* s, UpstreamCli& c) {
  s->add_option("--python", c.python,
                "Python with torch and flash-attn-4 (runs scripts/drivers/fa4_upstream.py)")
      ->type_name("PATH")
      ->capture_default_str();
}

void add_info(CLI::App* up, UpstreamCli& c) {
  auto* info = up->add_subcommand("info",
                                  "Versions of the pinned upstream packages, torch and the device "
                                  "(exit 3 without a GPU, 2 when upstream is not installed)");
  add_python_option(info, c);
  add_common_options(info, c.info_common);
  info->callback([&c] {
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
    t.rows.push_back({"torch", env.value("torch", json(nullptr)).is_null()
                                   ? "not importable"
                                   : env["torch"].get<std::string>()});
    t.rows.push_back({"device", env.value("device", std::string("none"))});
    t.rows.push_back(
        {"flash_attn.cute imports", env.value("upstream_importable", false) ? "yes" : "no"});
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
}

void add_exp2(CLI::App* up, UpstreamCli& c) {
  auto* ex = up->add_subcommand(
      "exp2",
      "Upstream's own ex2_emulation, compiled by the CuTe DSL on the GPU, against fa4sim's ex2_emu on "
      "every float32 input, per degree (exit 1 on any mismatch)");
  ints_in(ex->add_option("--degree", c.degrees, "Degrees of upstream's POLY_EX2"), 0, 5)
      ->type_name("N[,N...]")
      ->capture_default_str();
  int_in(ex->add_option("--inputs-log2", c.inputs_log2,
                        "Compare inputs 0 .. 2^K-1 (32 = every bit pattern)"),
         8, 32)
      ->type_name("K")
      ->capture_default_str();
  add_python_option(ex, c);
  add_common_options(ex, c.exp2_common);
  ex->callback([&c] {
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
      throw Error("upstream's ex2_emulation and fa4sim's ex2_emu differ",
                  "see the mismatches above", kExitCheckFailed);
  });
}

void add_check_shape_options(CLI::App* ck, UpstreamCli& c) {
  ck->add_option("--dtype", c.dtype, "Q/K/V type: bf16 or fp16 (FP8 is sm100-only upstream)")
      ->type_name("DTYPE")
      ->capture_default_str();
  checked(ck->add_option("--d", c.head_dim, "Head dimension, a multiple of 8"), "8..256",
          check_upstream_head_dims)
      ->type_name("D")
      ->capture_default_str();
  add_hidden_alias(ck, "--head-dim", c.head_dim);
  int_in(ck->add_option("--batch", c.batch, "Batch size"), 1, kUpstreamMaxGrid)
      ->type_name("N")
      ->capture_default_str();
  int_in(ck->add_option("--heads", c.heads, "Query heads"), 1, kUpstreamMaxGrid)
      ->type_name("N")
      ->capture_default_str();
  int_in(ck->add_option("--kv-heads", c.kv_heads, "K/V heads (GQA; default = --heads)"), 1,
         kUpstreamMaxGrid)
      ->type_name("N");
  int_in(ck->add_option("--seq", c.seq, "Query length in tokens (and key length unless --seq-k)"),
         1, kUpstreamMaxSeq)
      ->type_name("N")
      ->capture_default_str();
  int_in(ck->add_option("--seq-k", c.seq_k, "Key length in tokens (default = --seq)"), 1,
         kUpstreamMaxSeq)
      ->type_name("N");
  ck->add_flag("--causal", c.causal, "Causal mask, bottom-right aligned as upstream's");
  checked(ck->add_option("--q-scale", c.q_scale, "Multiply Q by this (sharper rows)"), "(0,1e6]",
          [](const std::string&, const std::string& v) { parse_q_scale(v); })
      ->type_name("ALPHA")
      ->capture_default_str();
  int_in(ck->add_option("--seed", c.seed, "Seed of the inputs"), 0, int64_t(1) << 53)
      ->type_name("S")
      ->capture_default_str();
}

void add_check_variant_options(CLI::App* ck, UpstreamCli& c) {
  ck->add_flag("--variant", c.variant,
               "Run fa4sim's variant of upstream's kernel with FA4's softmax tricks "
               "(scripts/drivers/fa4_tricks.py); implied by --tau/--max-offset/--emu");
  checked(ck->add_option("--tau", c.tau, "Variant: rescale threshold in log2 units (FA4 uses 8)"),
          "0..64", check_variant_knobs)
      ->type_name("T");
  checked(ck->add_option("--max-offset", c.max_offset,
                         "Variant: P offset in log2 units (FA4 uses 0 for 16-bit)"),
          "0..64", check_variant_knobs)
      ->type_name("M");
  int_in(ck->add_option("--emu", c.emu,
                        "Variant: eighths of each key block's n8 tiles through ex2_emulation"),
         0, 8)
      ->type_name("K");
  ck->add_flag(
      "--count-rescales", c.count_rescales,
      "Variant runs also count their rescale decisions on the GPU (returned in place of the LSE, so the "
      "LSE criteria are skipped) and compare the shares with the CPU model's");
}

void run_check(const UpstreamCli& c) {
  Stopwatch sw;
  UpstreamCheckOptions o;
  if (c.suite && c.suite_tricks)
    throw Error("--suite and --suite-tricks exclude each other", "run one, then the other");
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
    if (!any)
      throw Error("--count-rescales counts in fa4sim's variant only",
                  "add --variant, --tau or --emu, or --suite-tricks");
  }
  o.python = c.python;
  o.threads = resolved_threads(c.check_common);
  o.save_dir = c.save_dir;
  o.from_dir = c.from_dir;
  o.compare_models = c.compare_models;
  const std::string m =
      parse_choice("--model", c.model, {"sm90-mufu", "sm90-wgmma", "sm90-cr", "rowblock-cr"});
  o.model = m == "sm90-mufu"    ? GpuAttnCpuModel::sm90_mufu
            : m == "sm90-wgmma" ? GpuAttnCpuModel::sm90_wgmma
            : m == "sm90-cr"    ? GpuAttnCpuModel::sm90_cr
                                : GpuAttnCpuModel::row_block_cr;
  if (!c.unfused.empty())
    for (const std::string& item : list_items("--unfused", c.unfused, "a name")) {
      const std::string u =
          parse_choice("--unfused", item, {"exp-argument", "row-sum-init", "lse"});
      (u == "exp-argument"   ? o.fma.exp_argument
       : u == "row-sum-init" ? o.fma.row_sum_init
                             : o.fma.lse) = false;
    }
  check_report_path(c.check_common.json_path);
  Report r = run_upstream_check(o);
  emit(r, c.check_common.json_path, sw.seconds());
  if (!r.results.value("pass", false))
    throw Error("a criterion failed for upstream vs the CPU model", "see the table above",
                kExitCheckFailed);
}

void add_check(CLI::App* up, UpstreamCli& c) {
  auto* ck = up->add_subcommand(
      "check",
      "Upstream's forward (flash_attn_func; sm90 path on Hopper) on seeded inputs against float64 and the "
      "CPU model configured as that kernel (exit 1 when a criterion fails)");
  ck->add_flag("--suite", c.suite,
               "Run the standard 19 configurations (bf16/fp16, d 64/128, causal, GQA, "
               "ragged 300x333, seq 8192) instead of the shape options");
  add_check_shape_options(ck, c);
  add_check_variant_options(ck, c);
  ck->add_flag("--suite-tricks", c.suite_tricks,
               "Run the variant's 36-run grid (tau 0/4/8, q-scale 1/8, bf16 d64 "
               "and fp16 d128, emulated 0, 1/4, 1/2) instead of the shape options");
  ck->add_option("--model", c.model,
                 "CPU model to compare with: sm90-mufu (upstream's sm90 order, the H200's MUFU "
                 "models), sm90-wgmma (sm90-mufu with both GEMMs through the wgmma model; "
                 "slower), sm90-cr (same order, correctly rounded exp2/rcp/log2: fast, not "
                 "bit-exact), rowblock-cr (fa4sim's RowBlockSim, the model before the sm90 order)")
      ->type_name("MODEL")
      ->capture_default_str();
  ck->add_option("--unfused", c.unfused,
                 "sm90 models: compute these as a multiply then an add instead of one fma "
                 "(not read from upstream's compiled code): exp-argument, row-sum-init, lse")
      ->type_name("NAME[,NAME...]");
  ck->add_flag("--compare-models", c.compare_models,
               "Also report every CPU model's bit-identity shares with upstream (four more model "
               "runs per run)");
  ck->add_option("--save", c.save_dir,
                 "Keep the inputs, the driver's answer and upstream's O and LSE in this new folder "
                 "(read back later with --from, no GPU needed)")
      ->type_name("DIR");
  ck->add_option("--from", c.from_dir,
                 "Read upstream's outputs from a folder --save wrote, instead of running upstream "
                 "(no GPU; the same runs and seeds)")
      ->type_name("DIR");
  add_python_option(ck, c);
  add_common_options(ck, c.check_common);
  ck->callback([&c] { run_check(c); });
}

void add_bench(CLI::App* up, UpstreamCli& c) {
  auto* bn = up->add_subcommand(
      "bench",
      "Time upstream's sm90 forward with FA4's softmax tricks (tau x emulated fraction) next to the stock "
      "kernel and SDPA cuDNN, bf16, in one run");
  int_in(bn->add_option("--batch", c.b_batch, "Batch size"), 1, kUpstreamMaxGrid)
      ->type_name("N")
      ->capture_default_str();
  int_in(bn->add_option("--heads", c.b_heads, "Heads"), 1, kUpstreamMaxGrid)
      ->type_name("N")
      ->capture_default_str();
  ints_in(bn->add_option("--seq", c.b_seq, "Sequence lengths in tokens"), 1, kUpstreamMaxSeq)
      ->type_name("N[,N...]")
      ->capture_default_str();
  checked(bn->add_option("--d", c.b_d, "Head dims, multiples of 8"), "8..256",
          check_upstream_head_dims)
      ->type_name("D[,D...]")
      ->capture_default_str();
  add_hidden_alias(bn, "--head-dim", c.b_d);
  zero_ones(bn->add_option("--causal", c.b_causal, "Causal values"))->capture_default_str();
  checked(bn->add_option("--tau", c.b_tau, "Variant thresholds in log2 units"), "0..64",
          check_variant_knobs)
      ->type_name("T[,T...]")
      ->capture_default_str();
  ints_in(bn->add_option("--emu", c.b_emu, "Variant emulated eighths"), 0, 8)
      ->type_name("K[,K...]")
      ->capture_default_str();
  int_in(bn->add_option("--warmup", c.b_warmup, "Untimed calls per point"), 0, 1000)
      ->type_name("N")
      ->capture_default_str();
  int_in(bn->add_option("--iters", c.b_iters, "Timed calls per point (median)"), 1, 10000)
      ->type_name("N")
      ->capture_default_str();
  add_python_option(bn, c);
  add_common_options(bn, c.bench_common);
  bn->callback([&c] {
    Stopwatch sw;
    UpstreamBenchOptions o;
    o.batch = int(parse_int("--batch", c.b_batch, 1, kUpstreamMaxGrid));
    o.heads = int(parse_int("--heads", c.b_heads, 1, kUpstreamMaxGrid));
    auto ints = [](const std::string& opt, const std::string& v, int64_t lo, int64_t hi) {
      std::vector<int> out;
      for (int64_t x : parse_int_list(opt, v, lo, hi)) out.push_back(int(x));
      return out;
    };
    o.seqs = ints("--seq", c.b_seq, 1, kUpstreamMaxSeq);
    o.ds = ints("--d", c.b_d, 1, 4096);
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

}  // namespace

void add_gpu_upstream(CLI::App& gpu) {
  static UpstreamCli c;
  auto* up = gpu.add_subcommand(
      "upstream",
      "Upstream FlashAttention-4 (the flash-attn-4 package) on the GPU as the reference: its "
      "ex2_emulation and its sm90 forward against fa4sim (needs scripts/gpu/upstream_install.sh)");
  up->require_subcommand(1);
  add_info(up, c);
  add_exp2(up, c);
  add_check(up, c);
  add_bench(up, c);
}

}  // namespace fa4sim::cli
