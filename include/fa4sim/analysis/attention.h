// attention.h: the `fa4sim attention` model: one attention forward pass the way FlashAttention-4's
// sm100 kernel computes it, against two float64 references, and the `fa4sim check` safety test.
//
// Models: Dao-AILab/flash-attention flash_attn/cute/flash_fwd_sm100.py (FP8 inputs with float32
// descales per (batch, kv_head), softmax_scale_log2 * q_descale * k_descale, V's descale applied
// at the final normalisation, bf16 output, max_offset and rescale_threshold per dtype, key blocks
// walked last to first) and softmax.py (SoftmaxSm100) at commit 0251105a (2026-08-15);
// docs/facts.md §2. The softmax itself is online_softmax.h's RowBlockSim (the same
// core as `fa4sim rescale`), fed tile by tile: 128-query-row tiles x `block_n`-key tiles.
//
// The pipeline of one (batch, head), per 128-row query tile:
//   Q, K, V (float32, layout (batch, seq, heads, d))
//     FP8:  descale = amax / fp8_max per (batch, kv_head) (Q: over the group's query heads),
//           stored = encode(x / descale) satfinite (x / descale rounded to float32 first);
//           `--descale one`: descale = 1. 16-bit dtypes: stored = encode(x), descale 1.
//   S     = Q_stored K_stored^T, float32 (Eigen GEMM; masked keys = -inf; causal is top-left:
//           key j visible to query i iff j <= i)
//   P, O  = RowBlockSim(scale_log2 = softmax_scale * log2(e) * q_descale * k_descale,
//           max_offset, tau, exp2, P cast to the input dtype), V_stored as the MMA operand
//   out   = bf16(O * v_descale)
// References, float64 throughout (two-pass softmax, exp of float64): (a) on the float32 inputs
// before quantisation (the whole error a user sees), (b) on the dequantised inputs
// (stored * descale, exact in float64: the kernel's own error). Their products Q K^T and P V are
// one float64 fma chain per element in index order (src/analysis/attention_gemm.h) where AVX2/FMA
// is compiled in, Eigen's GEMM otherwise (the wheel's x86-64-v2 build).
//
// Error split (each part measured by re-running with that part exact, as a norm of the
// difference between the two outputs divided by the reference norm):
//   qkv_quantization = ||ref_b - ref_a|| / ||ref_a||
//   saturation       = ||O - O_unclipped|| / ||ref_b||, O_unclipped: P cast to a format with the
//                      same precision and subnormals but a wider exponent range (nothing clips)
//   p_conversion     = ||O_unclipped - O_fp32p|| / ||ref_b||, O_fp32p: P not converted at all
//   kernel_rest      = ||O_fp32p - ref_b|| / ||ref_b||: float32 S and O accumulation, exp2,
//                      the bf16 output
// The parts are not additive (norms of differences); each is the error that part alone adds.
//
// Does NOT model: the tensor core's accumulation order inside Q K^T (Eigen's float32 GEMM order
// is used) or inside P V (RowBlockSim: one fma per key in key order); the kernel's rcp.approx;
// bottom-right causal alignment for seq_q != seq_k (upstream aligns bottom-right; fa4sim and
// `fa4sim gpu attention` use top-left, identical when seq_q == seq_k); split-KV, paged KV,
// varlen, dropout, softcap, local windows.
//
// Note [Block-scaled attention]
// `--qk-format`, `--p-format`, `--v-format` give each operand its own format: an input dtype
// (bf16, fp16, e4m3, e5m2: as above, FP8 with its per-(batch, kv_head) descale) or a block
// format (core/block_scale.h: mxfp8, mxfp8-e5m2, mxfp6, mxfp6-e3m2, mxfp4, nvfp4; `--scale-rule`
// and `--scale-block` override the rule and block size of every block operand). Blocks run along the
// MMA's reduction dimension: Q and K per block of the head dim d, V per block of keys (a column
// of V, blocks starting at key 0, so they align with the key tiles), P per block of a key tile's
// row. A block operand is quantise-dequantised (block_round) to float32 before the MMA, which is
// modelled as today (float32 GEMM for S, one fma per key for P V); NVFP4 operands Q, K, V carry an
// FP32 tensor scale amax / 2688 per tensor (torchao's per_tensor_amax_to_scale, TransformerEngine's
// NVFP4 recipe), P none. P's block scale comes from the amax of the float32 P values of the block
// (torchao), after FA4's exp2 (emulated or not) and max_offset; row_sum sums the float32 P. The P
// rule `two-level` sets max_offset = log2(scale max x element max) (SageAttention3,
// sageattention3_blackwell/sageattn3/blackwell/softmax_fused.h@d1a57a5: P's row max becomes
// 448 x 6 = 2688, then 1x16 E4M3 scales); SageAttention3 then divides P by the unrounded amax / 6
// where torchao (and fa4sim) divide by the scale rounded to E4M3. tau lets the max lag (Note [Lazy
// rescale]), so a block amax can reach 2^(max_offset + tau): `fa4sim check --p-format` says when
// the block scale saturates or flushes.
// Error split in block mode (norms of differences / reference norm, each part the error it alone
// adds): Q/K = ||ref(Qdq, Kdq, V) - ref(Q, K, V)||, V = ||ref(Q, K, Vdq) - ref(Q, K, V)|| (float64
// references, over the unquantised reference's norm); P = ||O - O(P float32)|| (model runs, over
// the dequantised reference's norm); exp2 = rel-L2(O) - rel-L2(O with an exact exp2) and lazy
// rescaling = rel-L2(O) - rel-L2(O with tau 0), both against the dequantised reference: a
// difference of errors, not the norm of O's difference, because those variants round P anew
// (with a narrow P the norm of the difference counts both roundings); they can be negative.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fa4sim/util/seed.h"
#include "fa4sim/core/block_scale.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/core/online_softmax.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

// ---- presets: the upstream's per-dtype defaults (docs/facts.md §2)

struct AttentionPreset {
  const char* name;
  const char* source;  // where the numbers come from
  double tau_16bit, tau_fp8;
  double max_offset_16bit, max_offset_fp8;
};
const std::vector<AttentionPreset>& attention_presets();
// Throws Error (exit 2) listing the presets and suggesting the nearest.
const AttentionPreset& attention_preset(const std::string& name);
bool is_fp8(const Format& f);
double preset_tau(const AttentionPreset& p, const Format& f);
double preset_max_offset(const AttentionPreset& p, const Format& f);

// `f` when it is one of the input dtypes the kernel takes (formats_of(FormatRole::attention_input):
// bf16, fp16, e4m3, e5m2); Error "unknown --dtype" otherwise.
const Format& attention_dtype(const Format* f);

// ---- `fa4sim check`: the kernel's assertion max_offset + tau < log2(dtype_max)
struct CheckRow {
  std::string dtype, preset;  // preset empty when --tau/--max-offset were given
  double tau = 0, max_offset = 0;
  double worst_p = 0;  // 2^(max_offset + tau): the largest P a stale max allows
  double dtype_max = 0;
  double largest_safe_tau = 0;  // safe iff tau < this
  bool safe = true;
  std::string explanation;  // why it is unsafe (the mechanism), empty when safe
};
CheckRow check_safety(const Format& f, double tau, double max_offset);
// `fa4sim check`: rows for each dtype in `dtypes` (empty = all four) x each tau in `taus` (empty =
// the preset's) under `preset` or an explicit max_offset (explicit values override the preset's).
struct CheckResult {
  std::vector<const Format*> dtypes;
  std::vector<double> taus;          // as given (empty: the preset's per dtype)
  std::optional<double> max_offset;  // as given
  bool from_preset = false;          // some value came from the preset
  std::string preset, preset_source;
  std::vector<CheckRow> rows;
  std::vector<double> log2_dtype_max;  // parallel to rows
  bool all_safe = true;
};
CheckResult compute_check(const std::vector<const Format*>& dtypes, const std::string& preset,
                          const std::vector<double>& taus, std::optional<double> max_offset);
// Report results: {"safe": bool, "preset_source", "rows": [...]}.
Report check_report(const CheckResult& c);
Report run_check(const std::vector<const Format*>& dtypes, const std::string& preset,
                 const std::vector<double>& taus, std::optional<double> max_offset);

// ---- block-scaled operands (Note [Block-scaled attention])

// How P is brought into a block-scaled format's range before its per-block scales:
// max_offset: FA4's own P = exp2(... + max_offset) (the preset's max_offset of an FP8 P);
// two_level: SageAttention3's per-row normalisation, P's row max mapped to scale max x element
// max (2688 for NVFP4) by max_offset = log2(2688), then the per-block scale.
enum class PRule : uint8_t { max_offset, two_level };
const char* p_rule_name(PRule r);

// One operand's format: an input dtype of the kernel (`plain`: bf16, fp16, e4m3, e5m2, with the
// per-(batch, kv_head) FP8 descale) or a block format (block_format_by_name, with the overrides).
struct OperandFormat {
  std::string name;
  const Format* plain = nullptr;
  std::optional<BlockFormat> block;
};

// The `fa4sim check` of a block-scaled P: can P's block scale saturate or flush, per scale rule.
struct BlockCheckRow {
  std::string p_format, rule, p_rule;
  double tau = 0, max_offset = 0;
  double worst_p = 0;          // 2^(max_offset + tau): the largest P a stale max allows
  double scale_clip_amax = 0;  // a block amax above this clips (its scale saturates); inf = never
  double elem_clip_pct = 0;  // the rule's own clipping: the largest P of a block loses up to this %
  double elem_clip_share_pct = 0;  // ... and this % of uniformly spread block maxima clip
  double floor_amax = 0;        // blocks with amax below this get the smallest scale (flush risk)
  double floor_rel_log2 = 0;    // floor_amax relative to the row's P max 2^max_offset, log2
  double flush_ratio_log2 = 0;  // inside a block, P below amax * 2^this can become 0
  bool safe = true;
  std::string explanation;
};
// One row: P in block format `b` (named `name`) under `p_rule` with tau and max_offset.
BlockCheckRow block_check_row(const std::string& name, const BlockFormat& b, PRule p_rule,
                              double tau, double max_offset);
struct BlockCheckResult {
  std::vector<BlockCheckRow> rows;
  bool all_safe = true;
};
// Rows for each block format in `p_formats` (names; empty = mxfp8, mxfp6, mxfp4, nvfp4) x each
// applicable scale rule (`rules`, empty = all that the format's scale can hold) x each tau.
BlockCheckResult compute_block_check(const std::vector<std::string>& p_formats,
                                     const std::vector<ScaleRule>& rules, PRule p_rule,
                                     const std::string& preset, const std::vector<double>& taus,
                                     std::optional<double> max_offset);
Report block_check_report(const BlockCheckResult& c);

// ---- the attention model

struct AttentionConfig {
  // geometry; Q, K, V are BSHD, (batch, seq, heads, d) (GpuAttnShape: the same names, BHSD)
  int batch = 1, heads = 8, kv_heads = 8, d = 128;
  std::vector<int> seq_q = {1024};  // one run per entry (seq_k = seq_q unless seq_k is set)
  std::optional<int> seq_k;
  bool causal = false;
  std::optional<double> softmax_scale;  // default 1 / sqrt(d)
  // inputs
  uint64_t seed = kDefaultSeed;
  double q_scale = 1.0;
  std::string q_path, k_path, v_path;  // all three or none; layout (batch, seq, heads, d)
  // kernel
  std::vector<const Format*> dtypes = {&kBF16};
  std::string preset = "upstream";
  std::vector<double> taus;          // empty = the preset's per-dtype tau
  std::optional<double> max_offset;  // empty = the preset's per-dtype max_offset
  bool descale_one = false;          // FP8: unit descales instead of amax / fp8_max
  int block_n = 128;
  int block_m = 128;  // query rows per tile (the CTA's M)
  int warp_rows = 32;
  Exp2Choice exp2;             // default mufu
  bool exp2_upstream = false;  // --exp upstream: the tuning table's schedule per run
  BlockOrder order = kKernelBlockOrder;
  bool allow_saturation = false;
  bool split = true;  // run the two extra model variants for the error split
  int threads = 0;
  // In-memory inputs in place of seeded ones or .npy files (the Python module): all three or none,
  // float32, C order, layout (batch, seq, heads, d); the geometry comes from the shapes. Checked
  // like files (the same messages, naming the tensor `label` instead of the file) and refused
  // when not finite.
  struct Tensor {
    const float* data = nullptr;
    std::vector<uint64_t> shape;
    std::string label;  // "q", "k", "v" in messages
  };
  std::vector<Tensor> tensors;  // empty, or {q, k, v}
  bool keep_outputs = false;    // fill AttentionRun::o and ::lse
  // Block-scaled operands (Note [Block-scaled attention]): a format for Q/K, for P and for V,
  // each an input dtype or a block format; empty = --dtype. Any of them set: block mode (one
  // --dtype only). scale_rule and block override every block operand's rule and block size.
  std::string qk_format, p_format, v_format;
  std::optional<ScaleRule> scale_rule;
  std::optional<int> block;
  PRule p_rule = PRule::max_offset;
  // NVFP4 Q, K, V: the FP32 tensor scale amax / 2688 (false) or 1, no tensor scale (true:
  // flashinfer's nvfp4_quantize with global scale 1.0, as flash-attention PR #2582 sets it up).
  bool tensor_scale_one = false;
  bool block_mode() const { return !qk_format.empty() || !p_format.empty() || !v_format.empty(); }
};

// The operand format called `name` under cfg's overrides; Error naming `option` when unknown or
// when the override cannot apply (a rule the scale format cannot hold).
OperandFormat attention_operand(const AttentionConfig& cfg, const std::string& name,
                                const char* option);

// Checks every option and the .npy files' headers (shapes, dtypes) without doing any work;
// throws Error (exit 2). The safety check refuses an unsafe tau unless allow_saturation.
void validate_attention_config(const AttentionConfig& cfg);

// Per-run metrics (also the JSON `runs[]` entries).
struct AttentionRun {
  std::string dtype;
  double tau = 0, max_offset = 0;
  int batch = 0, heads = 0, kv_heads = 0, seq_q = 0, seq_k = 0, d = 0;
  bool causal = false;
  double q_scale = 1;
  uint64_t seed = 0;
  std::string exp2;
  double rel_l2_unquantized = 0, rel_l2_dequantized = 0;
  double max_abs = 0;      // vs the unquantised reference
  double cosine = 0;       // vs the unquantised reference
  double lse_max_err = 0;  // vs the dequantised reference (natural log)
  uint64_t saturated = 0, p_count = 0;
  double saturated_pct = 0, rows_pct = 0, warps_pct = 0;
  bool split = false;
  double split_qkv = 0, split_saturation = 0, split_p_conversion = 0, split_kernel_rest = 0;
  std::vector<float> q_descale, k_descale, v_descale;  // per (batch, kv_head)
  // Inputs beyond the dtype's max finite (after the descale), clamped to it by the satfinite
  // conversion: Q, K, V. In the JSON only when one is not 0.
  uint64_t inputs_saturated[3] = {0, 0, 0};
  double flops = 0;  // counted: 4 * seq_q * seq_k_visible * d per head, per pass
  double elapsed_s = 0;
  // With cfg.keep_outputs: the kernel model's bf16 output (V's descale applied) as float32,
  // (batch, seq_q, heads, d), and its natural-log LSE, (batch, heads, seq_q) as flash-attention's
  // softmax_lse.
  std::vector<float> o, lse;
  // Block mode: the operand formats and the error split by source (each part: the output with
  // that part exact against the full model's, / the reference norm; Note [Block-scaled attention]).
  bool block = false;
  std::string qk_format, p_format, v_format, p_rule;
  double split_qk = 0, split_v = 0, split_p = 0, split_exp2 = 0, split_rescale = 0;
};

// Where a run's time goes (Note [Attention phase times] in attention.cpp): thread CPU seconds per
// phase, summed over the worker threads, and the FLOPs each matrix-product phase executed.
// Provenance (timings.phases in the JSON), not results.
struct AttentionPhases {
  double operands = 0;     // gathering, casting and packing each (batch, head)'s operands
  double s_gemm = 0;       // the model's S = Q K^T, float32
  double softmax = 0;      // the model's per-element work: masks, maxima, exp2, P conversion, sums
  double pv = 0;           // the model's P_cast @ V, float32 (every variant that ran)
  double ref_gemm = 0;     // the float64 references' Q K^T and P V
  double ref_softmax = 0;  // the float64 references' scale, max, exp, sums, division
  double metrics = 0;      // differences and norms against the references
  double s_flops = 0, pv_flops = 0, ref_flops = 0;  // executed by s_gemm, pv, ref_gemm
  AttentionPhases& operator+=(const AttentionPhases& o);
};

// What the model measured, before any rendering.
struct AttentionMetrics {
  std::vector<AttentionRun> runs;  // per seq, dtype, tau (in that nesting)
  double executed_fp32_flops = 0;  // executed work of every run: Q K^T and P V per variant
  double executed_fp64_flops = 0;  // and the two float64 references, per run (runs of one seq
                                   // share them: Note [Shared references] in attention.cpp;
                                   // AttentionPhases::ref_flops counts what ran)
  double elapsed_s = 0;            // wall time of all runs (provenance, not a result)
  int threads = 0;                 // as run (cfg.threads, or all cores)
  AttentionPhases phases;          // of all runs
};

// Validates (as validate_attention_config), then runs every (seq, dtype, tau).
AttentionMetrics compute_attention(const AttentionConfig& cfg);
// The report: params = every option, results as documented in docs/commands/attention.md, tables.
Report attention_report(const AttentionConfig& cfg, const AttentionMetrics& m);

struct AttentionResult {
  std::vector<AttentionRun> runs;
  Report report;
};

// compute_attention, then attention_report of its metrics (the runs are moved into the result).
AttentionResult run_attention(const AttentionConfig& cfg);

// ---- building blocks (exposed for tests)

// Seeded N(0, 1) input of shape (batch, seq, heads, d): row (b, s) is drawn from its own
// NumPy generator, numpy.random.default_rng(input_row_seed(seed, tensor, b, s))
// .standard_normal(heads * d), so any row can be re-made in NumPy and results do not depend on
// the thread count. tensor: 0 = Q, 1 = K, 2 = V.
uint64_t input_row_seed(uint64_t seed, int tensor, int b, int s);
std::vector<float> seeded_input(uint64_t seed, int tensor, int batch, int seq, int heads, int d,
                                int threads);

// A format with f's precision and subnormals but 1 more exponent bit (f itself for bf16/fp32):
// the "nothing clips" P conversion of the error split.
Format unclipped_format(const Format& f);

}  // namespace fa4sim
