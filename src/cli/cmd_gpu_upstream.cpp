// `fa4sim gpu upstream`: upstream FlashAttention-4 (flash-attn-4, CuTe DSL) on the GPU as the
// reference: `info` (versions, device), `exp2` (its ex2_emulation vs ex2_emu on every float32),
// `check` (its sm90 forward vs the float64 reference and the CPU model). Parses and validates;
// the work is in src/gpu/gpu_upstream.cpp. Registered under `gpu` by add_gpu.
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
              q_scale = "1", seed = "1";
  bool causal = false, suite = false;
  CommonOptions info_common, exp2_common, check_common;
};

UpstreamRunConfig run_from_options(const UpstreamCli& c) {
  UpstreamRunConfig r;
  const std::string d = parse_choice("--dtype", c.dtype, {"bf16", "fp16", "e4m3", "e5m2"});
  r.dtype = d == "bf16" ? GpuAttnDtype::kBF16 : d == "fp16" ? GpuAttnDtype::kFP16
                                            : d == "e4m3" ? GpuAttnDtype::kE4M3
                                                          : GpuAttnDtype::kE5M2;
  r.shape.head_dim = int(parse_int("--head-dim", c.head_dim, 1, 4096));
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
  ck->add_option("--head-dim", c.head_dim, "Head dimension: 8..256, a multiple of 8")->capture_default_str();
  ck->add_option("--batch", c.batch, "Batch size")->capture_default_str();
  ck->add_option("--heads", c.heads, "Query heads")->capture_default_str();
  ck->add_option("--kv-heads", c.kv_heads, "K/V heads (GQA; default = --heads)");
  ck->add_option("--seq", c.seq, "Query length (and key length unless --seq-k)")->capture_default_str();
  ck->add_option("--seq-k", c.seq_k, "Key length (default = --seq)");
  ck->add_flag("--causal", c.causal, "Causal mask, bottom-right aligned as upstream's");
  ck->add_option("--q-scale", c.q_scale, "Multiply Q by this (sharper rows)")->capture_default_str();
  ck->add_option("--seed", c.seed, "Seed of the inputs")->capture_default_str();
  python_opt(ck);
  add_common_options(ck, c.check_common);
  ck->callback([] {
    Stopwatch sw;
    UpstreamCheckOptions o;
    if (c.suite) {
      o.runs = upstream_suite();
    } else {
      o.runs.push_back(run_from_options(c));
    }
    o.python = c.python;
    o.threads = resolved_threads(c.check_common);
    check_report_path(c.check_common.json_path);
    Report r = run_upstream_check(o);
    emit(r, c.check_common.json_path, sw.seconds());
    if (!r.results.value("pass", false))
      throw Error("a criterion failed for upstream vs the CPU model", "see the table above", kExitCheckFailed);
  });
}

}  // namespace fa4sim::cli
