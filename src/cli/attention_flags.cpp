// attention_flags.cpp: `fa4sim attention`'s options declared on a CLI::App (attention_flags.h).
#include "attention_flags.h"

#include "cli_util.h"

namespace fa4sim::cli {

namespace {
constexpr int64_t kMaxDim = kAttentionMaxDim;
void add_exp_options(CLI::App* sub, AttentionCliOptions& o);
void add_run_flags(CLI::App* sub, AttentionCliOptions& o);
void add_block_operand_options(CLI::App* sub, AttentionCliOptions& o);
}  // namespace

void add_attention_options(CLI::App* sub, AttentionCliOptions& o) {
  // ---- geometry
  int_in(sub->add_option("--batch", o.batch, "Batch size"), 1, kMaxDim)
      ->type_name("B")
      ->capture_default_str()
      ->group("Geometry");
  int_in(sub->add_option("--heads", o.heads, "Query heads"), 1, 4096)
      ->type_name("H")
      ->capture_default_str()
      ->group("Geometry");
  int_in(sub->add_option("--kv-heads", o.kv_heads,
                         "Key/value heads (GQA: heads must be a multiple; default = heads)"),
         1, 4096)
      ->type_name("HKV")
      ->group("Geometry");
  ints_in(sub->add_option("--seq", o.seq,
                          "Sequence length(s) in tokens, one run per value (seq_q = seq_k)"),
          1, kMaxDim)
      ->type_name("N[,N...]")
      ->capture_default_str()
      ->group("Geometry");
  int_in(sub->add_option("--seq-q", o.seq_q, "Query length in tokens (instead of --seq)"), 1,
         kMaxDim)
      ->type_name("N")
      ->group("Geometry");
  int_in(sub->add_option("--seq-k", o.seq_k, "Key length in tokens (default = the query length)"),
         1, kMaxDim)
      ->type_name("N")
      ->group("Geometry");
  int_in(sub->add_option("--d", o.d, "Head dimension"), 1, 1024)
      ->type_name("D")
      ->capture_default_str()
      ->group("Geometry");
  sub->add_flag("--causal", o.causal, "Causal mask (top-left: query i sees keys j <= i)")
      ->group("Geometry");
  positive(sub->add_option("--softmax-scale", o.softmax_scale,
                           "Softmax scale (natural units; default 1/sqrt(d))"),
           "")
      ->type_name("X")
      ->group("Geometry");
  // ---- inputs
  int_in(sub->add_option("--seed", o.seed, "Seed of the N(0,1) inputs"), 0, int64_t(1) << 53)
      ->type_name("S")
      ->capture_default_str()
      ->group("Inputs");
  positive(sub->add_option("--q-scale", o.q_scale,
                           "Multiply Q by ALPHA before quantisation (larger = peaked rows)"),
           "")
      ->type_name("ALPHA")
      ->capture_default_str()
      ->group("Inputs");
  sub->add_option(
         "--q", o.q,
         "Q from a .npy file (batch, seq, heads, d): float32, float16, or bfloat16 saved as uint16")
      ->type_name("FILE.npy")
      ->group("Inputs");
  sub->add_option("--k", o.k, "K from a .npy file (batch, seq_k, kv_heads, d)")
      ->type_name("FILE.npy")
      ->group("Inputs");
  sub->add_option("--v", o.v, "V from a .npy file (batch, seq_k, kv_heads, d)")
      ->type_name("FILE.npy")
      ->group("Inputs");
  // ---- kernel
  sub->add_option("--dtype", o.dtype, "Input dtype(s): bf16, fp16, e4m3, e5m2 (one run per value)")
      ->type_name("DTYPE[,DTYPE...]")
      ->capture_default_str()
      ->group("Kernel");
  sub->add_option(
         "--preset", o.preset,
         "Per-dtype tau/max_offset defaults: upstream (current), fp8-tau4 (before issue #2716)")
      ->type_name("NAME")
      ->capture_default_str()
      ->group("Kernel");
  log2_knobs(
      sub->add_option("--tau", o.tau,
                      "Rescale threshold(s) in log2 units (default: the preset's per dtype)"))
      ->type_name("T[,T...]")
      ->group("Kernel");
  log2_knob(sub->add_option("--max-offset", o.max_offset,
                            "P offset in log2 units (default: the preset's: 8 FP8, 0 16-bit)"))
      ->type_name("M")
      ->group("Kernel");
  sub->add_option("--descale", o.descale,
                  "FP8 descales: amax (amax / fp8_max per (batch, kv_head)) or one")
      ->type_name("amax|one")
      ->capture_default_str()
      ->group("Kernel");
  int_in(sub->add_option("--block-n", o.block_n, "Keys per tile"), 1, 4096)
      ->type_name("N")
      ->capture_default_str()
      ->group("Kernel");
  int_in(sub->add_option("--block-m", o.block_m,
                         "Query rows per tile (the CTA's M; sets where tiles start)"),
         1, 4096)
      ->type_name("N")
      ->capture_default_str()
      ->group("Kernel");
  int_in(
      sub->add_option("--warp-rows", o.warp_rows,
                      "Rows per warp for the O-rescale vote (sm100: 32; fa4sim's sm90 kernel: 16)"),
      1, 4096)
      ->type_name("N")
      ->capture_default_str()
      ->group("Kernel");
  add_exp_options(sub, o);
  add_run_flags(sub, o);
  add_block_operand_options(sub, o);
}

namespace {
// --exp, --masked-exp, --order
void add_exp_options(CLI::App* sub, AttentionCliOptions& o) {
  sub->add_option("--exp", o.exp,
                  "exp2: mufu (the H200's ex2/rcp/lg2.approx, bit-exact models; loads data/mufu/ "
                  "once), cr (fast mode: correctly rounded float32, not bit-exact with hardware), "
                  "exact, emu0..emu5, schedule:FREQ[,RES[,START_FRG]] (emu and schedule: the rest "
                  "on the modelled MUFU)")
      ->type_name("MODE")
      ->capture_default_str()
      ->group("Kernel");
  sub->add_option(
         "--masked-exp", o.masked_exp,
         "With --exp schedule: the exp2 of the tiles the kernel masks (a row's first tile, "
         "tiles holding a masked score): schedule (as every tile) or mufu (upstream's "
         "sm100 forward: no emulation under a mask function)")
      ->type_name("schedule|mufu")
      ->capture_default_str()
      ->group("Kernel");
  sub->add_option("--order", o.order,
                  "Key-tile order: reverse (the kernel's) or forward (the article's)")
      ->type_name("reverse|forward")
      ->capture_default_str()
      ->group("Kernel");
}

// --allow-saturation, --no-split
void add_run_flags(CLI::App* sub, AttentionCliOptions& o) {
  sub->add_flag("--allow-saturation", o.allow_saturation,
                "Run a configuration that fails the kernel's safety check (see fa4sim check)")
      ->group("Kernel");
  sub->add_option("--save-o", o.save_o,
                  "Write the kernel model's bf16 output as float32 .npy (batch, seq_q, heads, d); "
                  "one run only (one --seq, --dtype, --tau)")
      ->type_name("FILE.npy")
      ->group("Kernel");
  sub->add_flag("--no-split", o.no_split,
                "Skip the error split (its extra model runs); the references still run")
      ->group("Kernel");
}

// ---- block-scaled operands (Note [Block-scaled attention])
void add_block_operand_options(CLI::App* sub, AttentionCliOptions& o) {
  const char* formats =
      "bf16, fp16, e4m3, e5m2, mxfp8, mxfp8-e5m2, mxfp6, mxfp6-e3m2, mxfp4, nvfp4";
  sub->add_option("--qk-format", o.qk_format,
                  std::string("Q and K's format (blocks along d; default --dtype): ") + formats)
      ->type_name("NAME")
      ->group("Block-scaled operands");
  sub->add_option(
         "--p-format", o.p_format,
         std::string("P's format (blocks along a key tile's row; default --dtype): ") + formats)
      ->type_name("NAME")
      ->group("Block-scaled operands");
  sub->add_option("--v-format", o.v_format,
                  std::string("V's format (blocks along the keys; default --dtype): ") + formats)
      ->type_name("NAME")
      ->group("Block-scaled operands");
  sub->add_option("--scale-rule", o.scale_rule,
                  "Scale rule of every block operand: floor, ceil, even, rceil (MX) or nearest "
                  "(nvfp4); default each format's")
      ->type_name("floor|ceil|even|rceil|nearest")
      ->group("Block-scaled operands");
  int_in(
      sub->add_option("--scale-block", o.block,
                      "Block size of every block operand (default each format's: MX 32, NVFP4 16)"),
      1, 4096)
      ->type_name("N")
      ->group("Block-scaled operands");
  sub->add_option("--p-rule", o.p_rule,
                  "P into a block format: max-offset (FA4's P with max_offset) or two-level "
                  "(SageAttention3: row max to 448 x 6, then 1x16 E4M3 scales; nvfp4 only)")
      ->type_name("max-offset|two-level")
      ->capture_default_str()
      ->group("Block-scaled operands");
  sub->add_option("--tensor-scale", o.tensor_scale,
                  "NVFP4 Q/K/V's FP32 tensor scale: amax (amax / 2688 per tensor) or one (none: "
                  "flashinfer's nvfp4_quantize with global scale 1.0)")
      ->type_name("amax|one")
      ->capture_default_str()
      ->group("Block-scaled operands");
}
}  // namespace

}  // namespace fa4sim::cli
