// `fa4sim gpu attention`: the sm_90a attention kernel with FA4's softmax, checked against the
// float64 reference and the CPU model (default), replayed bit for bit (--exact), or timed next
// to torch SDPA (--bench). Parses and validates the options, then calls the library
// (src/gpu/gpu_attention_report.cpp). Registered under the `gpu` command (created if absent).
#include <cstdio>

#include "cli_util.h"
#include "commands.h"
#include "fa4sim/util/seed.h"
#include "fa4sim/util/error.h"
#include "fa4sim/gpu/gpu_attention_report.h"

namespace fa4sim::cli {

namespace {

struct GpuAttnCli {
  std::string dtype = "bf16", head_dim = "128", batch = "1", heads = "2", kv_heads, seq = "1024",
              seq_k, tau, max_offset, emu_tiles = "0", q_scale = "1", order = "reverse",
              seed = default_seed_text();
  std::string bench_d = "64,128", bench_causal = "0,1", bench_tau = "8", bench_emu = "0",
              bench_batch = "4", bench_heads = "32", bench_seq = "4096", iters = "20",
              python = "python3";
  bool causal = false, exact = false, bench = false, allow_saturation = false;
  CommonOptions common;
};

GpuAttnDtype parse_gpu_dtype(const std::string& s) {
  return gpu_attn_dtype(parse_dtype("--dtype", s, FormatRole::attention_input));
}

std::vector<int> attn_to_ints(const std::vector<int64_t>& v) { return {v.begin(), v.end()}; }

constexpr int64_t kMaxGrid = 65535;  // batch and heads: the kernel's grid limits
constexpr int64_t kMaxSeq = 1 << 20;

// --d / --bench-d: parsed as 1..1024, then the kernel's own rule (64 or 128) with its message.
void check_head_dims(const std::string& opt, const std::string& v) {
  for (int64_t d : parse_int_list(opt, v, 1, 1024)) {
    GpuAttnShape s;
    s.d = int(d);
    gpu_attn_validate(s, GpuAttnSoftmax{}, false);
  }
}

void add_shape_options(CLI::App* sub, GpuAttnCli& c) {
  sub->add_option("--dtype", c.dtype,
                  "Q/K/V type: bf16, fp16, e4m3, e5m2 (FP8 runs on the fp16 MMA)")
      ->type_name("DTYPE")
      ->capture_default_str();
  checked(sub->add_option("--d", c.head_dim, "Head dimension"), "64|128", check_head_dims)
      ->type_name("D")
      ->capture_default_str();
  add_hidden_alias(sub, "--head-dim", c.head_dim);
  int_in(sub->add_option("--batch", c.batch, "Batch size"), 1, kMaxGrid)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--heads", c.heads, "Query heads"), 1, kMaxGrid)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--kv-heads", c.kv_heads,
                         "K/V heads (GQA; divides --heads; default = --heads)"),
         1, kMaxGrid)
      ->type_name("N");
  int_in(sub->add_option("--seq", c.seq, "Query length in tokens (and key length unless --seq-k)"),
         1, kMaxSeq)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--seq-k", c.seq_k, "Key length in tokens (default = --seq)"), 1, kMaxSeq)
      ->type_name("N");
  sub->add_flag("--causal", c.causal, "Causal mask (top-left aligned, key j <= query i)");
}

void add_softmax_options(CLI::App* sub, GpuAttnCli& c) {
  log2_knob(sub->add_option("--tau", c.tau,
                            "Rescale threshold in log2 units (default 8 for bf16/fp16, 0 for FP8)"))
      ->type_name("T");
  log2_knob(sub->add_option("--max-offset", c.max_offset,
                            "P offset in log2 units (default 8 for FP8, 0 otherwise)"))
      ->type_name("M");
  int_in(sub->add_option(
             "--emu-tiles", c.emu_tiles,
             "Tiles of 8 columns per 64-key block through the emulated exp2 (fraction k/8)"),
         0, 8)
      ->type_name("K")
      ->capture_default_str();
  positive(sub->add_option("--q-scale", c.q_scale, "Multiply Q by this (sharper rows)"),
           "e.g. --q-scale 8")
      ->type_name("ALPHA")
      ->capture_default_str();
  sub->add_option("--order", c.order, "Key-block order: reverse (the kernel's) or forward")
      ->type_name("ORDER")
      ->capture_default_str();
  add_hidden_alias(sub, "--block-order", c.order);
  int_in(sub->add_option("--seed", c.seed, "Seed of the inputs"), 0, int64_t(1) << 53)
      ->type_name("S")
      ->capture_default_str();
  sub->add_flag("--allow-saturation", c.allow_saturation,
                "Accept max_offset + tau >= log2(max of P's cast) (P can saturate, issue #2716)");
  sub->add_flag("--exact", c.exact,
                "Also dump S and P and replay them on the CPU bit for bit (small shapes)");
}

void add_bench_options(CLI::App* sub, GpuAttnCli& c) {
  sub->add_flag("--bench", c.bench,
                "Time the kernel next to torch SDPA flash and cuDNN (bf16/fp16)");
  checked(sub->add_option("--bench-d", c.bench_d, "--bench: head dims"), "64|128", check_head_dims)
      ->type_name("D[,D...]")
      ->capture_default_str();
  zero_ones(sub->add_option("--bench-causal", c.bench_causal, "--bench: causal values"))
      ->capture_default_str();
  log2_knobs(sub->add_option("--bench-tau", c.bench_tau, "--bench: tau values (log2 units)"))
      ->type_name("T[,T...]")
      ->capture_default_str();
  ints_in(sub->add_option("--bench-emu", c.bench_emu, "--bench: emulated tiles out of 8"), 0, 8)
      ->type_name("K[,K...]")
      ->capture_default_str();
  int_in(sub->add_option("--bench-batch", c.bench_batch, "--bench: batch"), 1, kMaxGrid)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--bench-heads", c.bench_heads, "--bench: heads"), 1, kMaxGrid)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--bench-seq", c.bench_seq, "--bench: sequence length in tokens"), 1,
         kMaxSeq)
      ->type_name("N")
      ->capture_default_str();
  int_in(sub->add_option("--iters", c.iters, "--bench: timed launches per point (median)"), 1,
         10000)
      ->type_name("N")
      ->capture_default_str();
  sub->add_option("--python", c.python, "--bench: python with torch ('' = skip torch)")
      ->type_name("EXE")
      ->capture_default_str();
}

void run_bench(const GpuAttnCli& c, GpuAttnDtype dtype, const Stopwatch& sw) {
  GpuAttnBenchOptions b;
  b.dtype = dtype;
  if (gpu_attn_is_fp8(dtype))
    throw Error("--bench times bf16 and fp16 only",
                "FP8 runs on the fp16 MMA: see README Divergences");
  b.ds = attn_to_ints(parse_int_list("--bench-d", c.bench_d, 1, 1024));
  b.causal = attn_to_ints(parse_int_list("--bench-causal", c.bench_causal, 0, 1));
  b.taus.clear();
  for (double t : parse_double_list("--bench-tau", c.bench_tau)) b.taus.push_back(float(t));
  b.emu_tiles = attn_to_ints(parse_int_list("--bench-emu", c.bench_emu, 0, 8));
  b.batch = int(parse_int("--bench-batch", c.bench_batch, 1, kMaxGrid));
  b.heads = int(parse_int("--bench-heads", c.bench_heads, 1, kMaxGrid));
  b.seq = int(parse_int("--bench-seq", c.bench_seq, 1, kMaxSeq));
  b.iters = int(parse_int("--iters", c.iters, 1, 10000));
  b.python = c.python;
  b.seed = uint64_t(parse_int("--seed", c.seed, 0, int64_t(1) << 53));
  for (int d : b.ds) {
    GpuAttnShape s;
    s.d = d;
    GpuAttnSoftmax sm;
    sm.dtype = dtype;
    for (float t : b.taus) {
      sm.tau = t;
      gpu_attn_validate(s, sm, false);
    }
  }
  check_report_path(c.common.json_path);
  Report r = run_gpu_attention_bench(b);
  r.threads = resolved_threads(c.common);
  emit(r, c.common.json_path, sw.seconds());
}

void run_check(const GpuAttnCli& c, GpuAttnDtype dtype, const Stopwatch& sw) {
  const bool fp8 = gpu_attn_is_fp8(dtype);
  GpuAttnCheckOptions o;
  o.sm.dtype = dtype;
  o.shape.d = int(parse_int("--d", c.head_dim, 1, 1024));
  o.shape.batch = int(parse_int("--batch", c.batch, 1, kMaxGrid));
  o.shape.heads = int(parse_int("--heads", c.heads, 1, kMaxGrid));
  o.shape.kv_heads =
      c.kv_heads.empty() ? o.shape.heads : int(parse_int("--kv-heads", c.kv_heads, 1, kMaxGrid));
  o.shape.seq_q = int(parse_int("--seq", c.seq, 1, kMaxSeq));
  o.shape.seq_k = c.seq_k.empty() ? o.shape.seq_q : int(parse_int("--seq-k", c.seq_k, 1, kMaxSeq));
  o.shape.causal = c.causal;
  o.sm.tau = c.tau.empty() ? (fp8 ? 0.f : 8.f) : float(parse_double("--tau", c.tau));
  o.sm.max_offset =
      c.max_offset.empty() ? (fp8 ? 8.f : 0.f) : float(parse_double("--max-offset", c.max_offset));
  o.sm.emu_tiles = int(parse_int("--emu-tiles", c.emu_tiles, 0, 8));
  o.sm.reverse_blocks = parse_choice("--order", c.order, {"reverse", "forward"}) == "reverse";
  o.q_scale = parse_double("--q-scale", c.q_scale);
  if (!(o.q_scale > 0)) throw Error("--q-scale must be > 0", "e.g. --q-scale 8");
  o.seed = uint64_t(parse_int("--seed", c.seed, 0, int64_t(1) << 53));
  o.exact = c.exact;
  o.threads = resolved_threads(c.common);
  gpu_attn_validate(o.shape, o.sm, c.allow_saturation);
  const double work =
      2.0 * double(o.shape.batch) * o.shape.heads * o.shape.seq_q * o.shape.seq_k * o.shape.d;
  if (work > 4e11)
    throw Error("the float64 reference for this shape is too large for a check",
                "checks need batch*heads*seq_q*seq_k*d <= 2e11; use --bench for big shapes");
  check_report_path(c.common.json_path);
  Report r = run_gpu_attention_check(o);
  emit(r, c.common.json_path, sw.seconds());
  if (!r.results.value("pass", false))
    throw Error("a GPU-vs-CPU comparison failed", "see the tables above", kExitCheckFailed);
}

}  // namespace

void add_gpu_attention(CLI::App& root) {
  // The `gpu` command belongs to GPU backend I; attach to it when it is there.
  CLI::App* gpu = nullptr;
  for (CLI::App* s : root.get_subcommands([](CLI::App* a) { return a->get_name() == "gpu"; }))
    gpu = s;
  if (gpu == nullptr) {
    gpu = root.add_subcommand("gpu", "Run fa4sim's kernels on an NVIDIA H100/H200 (sm_90a)");
    gpu->require_subcommand(1);
  }
  static GpuAttnCli c;
  auto* sub = gpu->add_subcommand(
      "attention",
      "Attention forward on the GPU with FA4's softmax (tau, max_offset, P cast, warp-level rescale "
      "skip, emulated exp2 tiles): check vs float64 and the CPU model, --exact replay, or --bench vs "
      "torch SDPA");
  add_shape_options(sub, c);
  add_softmax_options(sub, c);
  add_bench_options(sub, c);
  add_common_options(sub, c.common);
  sub->callback([] {
    Stopwatch sw;
    const GpuAttnDtype dtype = parse_gpu_dtype(c.dtype);
    if (c.bench)
      run_bench(c, dtype, sw);
    else
      run_check(c, dtype, sw);
  });
}

}  // namespace fa4sim::cli
