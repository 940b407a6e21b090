// gpu_upstream.h: `fa4sim gpu upstream`: upstream FlashAttention-4 itself (the `flash-attn-4`
// package, CuTe DSL, pinned to 4.0.0b36 with nvidia-cutlass-dsl 4.8.1) as the reference kernel on
// an H100/H200, driven through scripts/drivers/fa4_upstream.py.
//
// Two comparisons:
//   exp2    upstream's own flash_attn/cute/utils.py `ex2_emulation(x, poly_degree=N)`, compiled
//           by the CuTe DSL for sm_90, on every float32 bit pattern, against fa4sim's ex2_emu
//           (exp2_emu.h), 0 bits tolerance, mismatches per input class (gpu_verify.h's compare).
//   check   upstream's `flash_attn.cute.interface.flash_attn_func` (sm90: FlashAttentionForwardSm90
//           in flash_fwd_sm90.py, softmax.py's `Softmax`) on seeded inputs, against the float64
//           reference and the CPU model configured as that kernel (upstream_sm90_tiling below):
//           upstream's sm90 softmax operation for operation (analysis/sm90_forward.h: tau 0, max
//           offset 0, the quad's row sums, rcp and lg2 in finalize) with the H200's MUFU models
//           (core/mufu.h), P in the input dtype, key blocks last to first, causal aligned
//           bottom-right, O stored in the input dtype. Its bit identity with upstream: the share
//           of O elements and of LSE values equal bit for bit, and the first mismatches.
// Criteria of `check` (per run): upstream's rel-L2 vs float64 over the CPU model's within 1 %
// (ratio in [0.99, 1.01]); upstream's LSE error vs float64, in float32 ulps (Note [LSE ulps]),
// at most the CPU model's own plus kUpstreamLseUlpSlack; the same rows without any visible key
// (LSE -inf) on both sides.
// Note [LSE ulps]: an LSE error is counted in float32 ulps at max(|LSE|, 1): the LSE is
// row_max * scale_log2 + log2(row_sum) scaled by ln 2, whose rounding is that of its larger term,
// and log2's error is absolute near row_sum = 1 (docs/mufu.md), so ulps of an LSE near 0 would
// count an absolute error as thousands of ulps; at |LSE| >= 1 this is the float32 ulp of the LSE
// (an absolute 2e-6 is below one ulp once |LSE| >= 16).
// What the CPU model cannot follow in upstream's sm90 softmax: docs/divergences.md.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "fa4sim/util/seed.h"
#include "fa4sim/gpu/gpu_attention.h"
#include "fa4sim/gpu/gpu_verify.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

inline constexpr const char* kUpstreamInstallHint =
    "install it on the GPU machine with scripts/gpu/upstream_install.sh; the wheels come from "
    "scripts/gpu/upstream_fetch.sh (README 'Upstream FA4')";
inline constexpr double kUpstreamL2RatioTol = 0.01;
inline constexpr double kUpstreamLseUlpSlack = 4.0;  // Note [LSE ulps]
// float32 ulps between x and the float64 ref, at max(|ref|, 1) (Note [LSE ulps]).
double lse_error_ulps(double x, double ref);

// scripts/drivers/fa4_upstream.py (from the source tree compiled in).
std::string upstream_script_path();

// What `fa4_upstream.py info` reports: versions of the pinned packages, torch, the device.
json upstream_env(const std::string& python);
// Throws Error(kExitNoGpu) when env says no CUDA device, Error(exit 2, kUpstreamInstallHint) when
// flash_attn.cute does not import.
void upstream_require(const json& env);

// ---- forward: configurations, validation with upstream's reasons, the tiling

// Throws Error(exit 2) for what upstream's sm90 path refuses, with upstream's own message:
// FP8 inputs ("FP8 is only supported on SM100 ..."), head dims outside 8..256 or not a multiple
// of 8 (its _validate_head_dims), heads not a multiple of kv_heads, sizes < 1.
void upstream_validate(const GpuAttnShape& shape, GpuAttnDtype dtype);
// Throws Error(exit 2) when a check's float64 reference would be too large (work > 2e11 MACs).
void upstream_validate_check_size(const GpuAttnShape& shape);

// Upstream's sm90 forward tiling for this shape (flash_attn/cute/interface.py
// _tile_size_fwd_sm90, not local, not block-sparse): (192, 128) for d <= 64, (192, 144) or
// (192, 128) causal for d <= 96, (128, 128) for d <= 128, (128, 128 or 112) for d <= 192,
// (128, 80) above; 16 rows per warp (a warpgroup's wgmma m64 accumulator, 4 warps of 16 rows);
// O stored in the input dtype.
GpuAttnTiling upstream_sm90_tiling(int d, bool causal, GpuAttnDtype dtype);

// FA4's softmax tricks inside upstream's sm90 forward (scripts/drivers/fa4_tricks.py): the variant swaps
// upstream's `Softmax` for a subclass with SoftmaxSm100's threshold tau (the O rescale skipped
// unless a warp of 16 rows votes for it), max_offset, and ex2_emulation (degree 3) on k/8 of the
// n8 tiles of each key block (tile t iff ((t % 8) * k) % 8 < k, the rule of gpu_attn_emu_mask).
// The CPU model runs the same: tau, max_offset, emu_tiles = k, 16-row warps.
struct UpstreamTricks {
  bool variant = false;  // false: upstream's stock kernel (tau 0, no emulation, no offset)
  float tau = 0, max_offset = 0;
  int emu_eighths = 0;
  // The variant also counts its rescale decisions and returns them in place of the LSE
  // (scripts/drivers/fa4_tricks.py, Note [Rescale counts through the LSE]); the LSE criteria are skipped.
  bool count = false;
};
inline constexpr double kUpstreamCountWarpUnit = 4096.0;  // LSE slot = rows + 4096 * warps

struct UpstreamRunConfig {
  std::string label;
  GpuAttnShape shape;  // causal_bottom_right is set by the driver (upstream's alignment)
  GpuAttnDtype dtype = GpuAttnDtype::bf16;
  double q_scale = 1;
  uint64_t seed = kDefaultSeed;
  UpstreamTricks tricks;
};
// The standard set: bf16/fp16 x d 64/128 x causal/not x {MHA 1024, GQA 4:2 ragged 300 x 333},
// plus seq 8192 (d 128 bf16 causal and not; d 64 fp16 causal with q-scale 8): 19 runs.
std::vector<UpstreamRunConfig> upstream_suite();
// The variant's numerics grid: tau {0, 4, 8} x q-scale {1, 8} x {bf16 d 64, fp16 d 128} x emulated
// fraction {0, 1/4, 1/2}, seq 1024, 2 heads: 36 runs.
std::vector<UpstreamRunConfig> upstream_tricks_suite();
// Throws Error(exit 2) for tricks the variant does not take (tau or max_offset outside [0, 64],
// emu_eighths outside 0..8, max_offset + tau >= log2(max finite of P's type)).
void upstream_validate_tricks(const UpstreamTricks& t, GpuAttnDtype dtype);

struct UpstreamRunResult {
  UpstreamRunConfig config;
  GpuAttnTiling tiling;
  bool ran = false;   // upstream produced O and LSE
  std::string error;  // upstream's message when it refused or failed
  double upstream_rel_l2 = 0, model_rel_l2 = 0, ratio = 0;
  double lse_upstream_vs_ref = 0, lse_model_vs_ref = 0, lse_upstream_vs_model = 0;  // max |diff|
  // The same maxima in float32 ulps of the float64 LSE (the spacing of float32 at |LSE|): an
  // absolute tolerance of 2e-6 is below one ulp once |LSE| >= 16.
  double lse_upstream_vs_ref_ulp = 0, lse_model_vs_ref_ulp = 0, max_abs_lse = 0;
  uint64_t empty_rows_upstream = 0, empty_rows_ref = 0;  // rows with LSE -inf
  uint64_t o_elements = 0, o_equal_to_model = 0;         // O bits equal to the CPU model's
  double max_abs_o_vs_model = 0;
  // LSE bit identity with the CPU model: values equal bit for bit (of lse_values, -inf rows
  // included), and over the lse_rows rows where both are finite the largest distance in float32
  // ulps (ordered bit distance).
  uint64_t lse_values = 0, lse_rows = 0, lse_equal_to_model = 0;
  double lse_max_ulp_upstream_vs_model = 0;
  // The first mismatches (at most kUpstreamFirstMismatches of O, then of the LSE), with the
  // element's position; ulps: O in the output dtype's, the LSE in float32's (bit distance).
  struct Mismatch {
    std::string what;      // "O" or "LSE"
    int64_t bh = 0;        // batch * heads + head
    int row = 0, col = 0;  // query row; O's column (the LSE: -1)
    double upstream = 0, model = 0, ulps = 0;
  };
  std::vector<Mismatch> first_mismatches;
  // --compare-models: the identity shares of every CPU model (gpu_attn_cpu_model_name), in
  // order rowblock-cr, sm90-cr, sm90-mufu, sm90-wgmma.
  struct ModelShare {
    std::string model;
    uint64_t o_equal = 0, lse_equal = 0;
  };
  std::vector<ModelShare> model_shares;
  bool pass = false;
  double first_call_s = 0;  // upstream's first call (includes its JIT compile)
  // The CPU model's rescale decisions on these inputs, and (tricks.count) the GPU's.
  uint64_t row_decisions = 0, row_rescales = 0, warp_decisions = 0, warp_rescales = 0;
  bool counted = false;
  uint64_t gpu_row_rescales = 0, gpu_warp_rescales = 0;
  double rows_tol_pp = 0, warps_tol_pp = 0;
};

inline constexpr size_t kUpstreamFirstMismatches = 8;

// The analysis of one run once upstream's O (bits, [batch, heads, seq_q, d]) and LSE
// ([batch, heads, seq_q]) are known, against the CPU model tiling.model. compare_models: also
// the identity shares of the four CPU models (four more model runs). Needs no GPU.
UpstreamRunResult upstream_analyse(const UpstreamRunConfig& c, const GpuAttnInputs& in,
                                   const std::vector<uint16_t>& o_bits,
                                   const std::vector<float>& lse, const GpuAttnTiling& tiling,
                                   int threads, bool compare_models = false);

struct UpstreamCheckOptions {
  std::vector<UpstreamRunConfig> runs;
  std::string python = "python3";
  int threads = 0;
  // Keep the inputs, the driver's answer and upstream's outputs in this folder (created; must
  // not hold a previous run's manifest), for a later --from.
  std::string save_dir;
  // Read upstream's outputs from a folder a --save run wrote, instead of running upstream: needs
  // no GPU. The runs must be the same (checked against its manifest, exit 2 otherwise).
  std::string from_dir;
  bool compare_models = false;  // upstream_analyse's compare_models
  GpuAttnCpuModel model = GpuAttnCpuModel::sm90_mufu;
  Sm90Contraction fma{};  // the sm90 models' contraction choices (sm90_forward.h [C1]-[C3])
};
struct UpstreamCheckResult {
  json env;                             // the driver's report of versions and the device
  std::vector<UpstreamRunResult> runs;  // one per UpstreamCheckOptions::runs, in order
};
// The driver's manifest of these runs (a JSON array, one object per run: id, dtype, tricks, the
// shape, q_scale, seed, and the paths of q/k/v/o/lse under `dir`): what --save writes and --from
// checks (paths aside).
json upstream_check_manifest(const UpstreamCheckOptions& o, const std::string& dir);
// Validates every run, requires the GPU and upstream, runs upstream once for all runs (or reads
// a saved run: from_dir), analyses each.
UpstreamCheckResult compute_upstream_check(const UpstreamCheckOptions& o);
// The table and the JSON of `gpu upstream check`; results.pass = every run ran and passed. Needs
// no GPU.
Report upstream_check_report(const UpstreamCheckOptions& o, const UpstreamCheckResult& r);
Report run_upstream_check(const UpstreamCheckOptions& o);  // upstream_check_report(o, compute_...)

// ---- exp2: upstream's ex2_emulation vs ex2_emu over all 2^32 inputs

struct UpstreamExp2Options {
  std::vector<int> degrees{0, 1, 2, 3, 4, 5};  // the keys of upstream's POLY_EX2
  std::string python = "python3";
  int threads = 0;
  int total_log2 = 32;  // inputs 0 .. 2^total_log2 - 1 (32 = every pattern)
  bool progress = true;
};
struct UpstreamExp2Result {
  int degree = 0;
  bool compiled = false;     // upstream's code built and ran for this degree
  std::string error;         // upstream's message when it did not
  std::vector<double> poly;  // upstream's coefficients as its driver printed them
  GpuVerifyResult cmp;       // counts per input class, first mismatches
  double wall_s = 0, compile_s = 0;
};
// Reads one `fa4_upstream.py exp2` stream (a JSON line, then the output bits of inputs
// 0 .. total-1 as little-endian uint32) and compares it with ex2_emu(x, degree). Needs no GPU.
UpstreamExp2Result upstream_exp2_compare_stream(FILE* f, int degree, uint64_t total, int threads,
                                                const std::function<void(uint64_t)>& progress);
// Every degree of UpstreamExp2Options::degrees, in order, and the driver's environment.
struct UpstreamExp2SweepResult {
  json env;  // the driver's report of versions and the device
  std::vector<UpstreamExp2Result> degrees;
};
// Validates the options, requires the GPU and upstream, streams and compares each degree (a
// driver that exits non-zero after a compiled degree is an error).
UpstreamExp2SweepResult compute_upstream_exp2(const UpstreamExp2Options& o);
// The table and the JSON of `gpu upstream exp2`; results.bit_exact = no mismatch on any degree that
// compiled. Needs no GPU.
Report upstream_exp2_report(const UpstreamExp2Options& o, const UpstreamExp2SweepResult& r);
Report run_upstream_exp2(const UpstreamExp2Options& o);  // upstream_exp2_report(o, compute_...)

// ---- speed of the variants next to the stock kernel and cuDNN (one process, one run)

struct UpstreamBenchOptions {
  int batch = 4, heads = 32;
  std::vector<int> seqs{4096}, ds{64, 128}, causal{0, 1};  // ds: head dims
  std::vector<float> taus{0, 4, 8};
  std::vector<int> emu_eighths{0, 2, 4};
  int warmup = 5, iters = 20;
  std::string python = "python3";
};
// The driver's answer (`fa4_upstream.py bench-tricks`), as it printed it.
struct UpstreamBenchResult {
  json env;  // versions and the device
  // One object per shape (head_dim, causal, seq, ...) with "timings": per kernel (cuDNN, stock,
  // the variants in order) its "kind", "tricks" (variants), "ms" and "tflops", or "error".
  json rows;
};
// Validates every shape and variant, requires the GPU and upstream, runs the driver once.
UpstreamBenchResult compute_upstream_bench(const UpstreamBenchOptions& o);
// The table and the JSON of `gpu upstream bench` (results.rows: the driver's rows, each timing
// with "vs_stock" = stock time / its time where both are known). Needs no GPU.
Report upstream_bench_report(const UpstreamBenchOptions& o, const UpstreamBenchResult& r);
Report run_upstream_bench(const UpstreamBenchOptions& o);  // upstream_bench_report(o, compute_...)

}  // namespace fa4sim
