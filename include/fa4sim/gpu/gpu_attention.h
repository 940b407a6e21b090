// gpu_attention.h: host API of the sm_90a attention-forward kernel with FlashAttention-4's
// softmax (GPU backend II), and the CPU side that checks it.
//
// Models: the forward softmax of Dao-AILab/flash-attention flash_attn/cute/softmax.py
// (SoftmaxSm100.update_row_max / scale_subtract_rowmax / apply_exp2_convert) and
// flash_fwd_sm100.py (max_offset, rescale_threshold, correction-warp vote) @0251105a, ported to
// Hopper with wgmma warpgroup tensor-core instructions (see src/cuda/attention_kernel.cuh,
// Note [Why wgmma, and how]).
// Does not model: upstream's TMA/tcgen05 pipelining, 2-CTA mode, the separate correction warp
// (here each warp rescales its own O), FP8 tensor-core MMAs (FP8 inputs run through the fp16
// MMA on exactly converted values, see Note [FP8 on the fp16 MMA]).
//
// ---- Layout and granularity (what the CPU model must use to compare counts)
//   Q [batch, heads, seq_q, d], K/V [batch, kv_heads, seq_k, d], O [batch, heads, seq_q, d]
//   (row-major, BHSD), LSE [batch, heads, seq_q] in natural-log units. GQA: q head h reads kv
//   head h / (heads / kv_heads). Causal is top-left aligned (key j visible to query i iff j <= i),
//   as torch SDPA's is_causal.
//   A CTA owns kGpuAttnBlockM = 128 query rows: 2 warpgroups of 64 rows, 8 warps,
//   kGpuAttnWarpRows = 16 rows per warp (the wgmma m64 accumulator gives each warp 16 rows);
//   key blocks are kGpuAttnBlockN = 64 wide. The rescale vote (__any_sync) is over a warp's 16
//   rows, so `--warp-rows 16` on the CPU model gives comparable counts.
//   Emulated exps: a key block is 8 tiles of 8 columns (the mma's n8 tiles); `emu_tiles` = k
//   emulates tile t iff (t * k) % 8 < k (k of 8 tiles, spread evenly: k = 4 -> tiles 0,2,4,6).
//   The choice is per tile, never per lane, so a warp never diverges on it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fa4sim/analysis/sm90_forward.h"
#include "fa4sim/util/seed.h"
#include "fa4sim/util/report.h"

namespace fa4sim {

inline constexpr int kGpuAttnBlockM = 128;
inline constexpr int kGpuAttnBlockN = 64;
inline constexpr int kGpuAttnWarpRows = 16;
inline constexpr int kGpuAttnTilesPerBlock = kGpuAttnBlockN / 8;

enum class GpuAttnDtype { bf16, fp16, e4m3, e5m2 };
const char* gpu_attn_dtype_name(GpuAttnDtype t);
struct Format;  // core/formats.h
// The GPU's dtype of an attention input format (formats_of(FormatRole::attention_input)).
GpuAttnDtype gpu_attn_dtype(const Format& f);
// Bytes per stored element of Q/K/V.
inline int gpu_attn_dtype_bytes(GpuAttnDtype t) {
  return (t == GpuAttnDtype::e4m3 || t == GpuAttnDtype::e5m2) ? 1 : 2;
}
inline bool gpu_attn_is_fp8(GpuAttnDtype t) { return gpu_attn_dtype_bytes(t) == 1; }

// Emulated tile mask for emu_tiles = k (bit t set = tile t emulated); the rule in the header.
inline uint32_t gpu_attn_emu_mask(int emu_tiles) {
  uint32_t m = 0;
  for (int t = 0; t < kGpuAttnTilesPerBlock; ++t)
    if ((t * emu_tiles) % kGpuAttnTilesPerBlock < emu_tiles) m |= 1u << t;
  return m;
}

// Layout BHSD: Q and O [batch, heads, seq_q, d], K and V [batch, kv_heads, seq_k, d] (the kernel's;
// the field names are those of `fa4sim attention`'s AttentionConfig, whose tensors are BSHD).
struct GpuAttnShape {
  int batch = 1, heads = 1, kv_heads = 1, seq_q = 128, seq_k = 128, d = 128;
  bool causal = false;
  // Causal alignment. false: top-left, key j visible to query i iff j <= i (fa4sim's kernel, torch
  // SDPA's is_causal). true: bottom-right, j <= i + seq_k - seq_q (upstream FlashAttention's
  // causal; rows with i + seq_k - seq_q < 0 see no key: O = 0, LSE = -inf). Identical when
  // seq_q == seq_k. Only the CPU side (reference, model) and the upstream driver use true.
  bool causal_bottom_right = false;
  int64_t q_elems() const { return int64_t(batch) * heads * seq_q * d; }
  int64_t kv_elems() const { return int64_t(batch) * kv_heads * seq_k * d; }
  int key_blocks() const { return (seq_k + kGpuAttnBlockN - 1) / kGpuAttnBlockN; }
};

struct GpuAttnSoftmax {
  GpuAttnDtype dtype = GpuAttnDtype::bf16;
  double softmax_scale = 0;    // 0 -> 1/sqrt(d)
  float tau = 8;               // rescale_threshold (log2 units); 0 = rescale on every max increase
  float max_offset = 0;        // FA4: 8 for FP8, 0 otherwise
  int emu_tiles = 0;           // 0..8 tiles of 8 columns per 64-key block through the emulation
  bool reverse_blocks = true;  // walk key blocks last to first, as flash_fwd_sm100.py does
};

// Host tensors. Q/K/V hold the raw storage bits: uint16 bf16/fp16 patterns, or one FP8 byte per
// element (in the low byte of each uint16). Descales are float32 per (batch, kv_head), FP8 only.
struct GpuAttnInputs {
  std::vector<uint16_t> q, k, v;
  std::vector<float> q_descale, k_descale, v_descale;
};

// Instrumentation (the instrumented kernel only; the timed kernel has none of it compiled in).
// Flags per (q row, key block), key block in key order: bit 0 = block processed, bit 1 = this
// row's acc_scale < 1 (the row wanted a rescale), bit 2 = the warp rescaled O (any of its 16 rows
// wanted one). Dumps (only when `dump` was asked for; size heads*seq_q*seq_k each): S as the MMA
// produced it with the mask applied (-inf), P in float32 before the cast, P's converted bits.
struct GpuAttnInstr {
  std::vector<uint8_t> flags;       // [batch*heads][seq_q][key_blocks]
  std::vector<float> row_max;       // [batch*heads][seq_q][key_blocks], after each block
  std::vector<uint32_t> saturated;  // [batch*heads][seq_q]: P above the cast's max finite
  std::vector<float> s, p;          // dumps
  std::vector<uint16_t> p_cvt;      // dump: bf16/fp16 bits, or the FP8 byte
};

struct GpuAttnOutputs {
  std::vector<uint16_t> o;  // bf16 bits
  std::vector<float> lse;
  GpuAttnInstr instr;
};

// Throws Error(exit 2) for a configuration the kernel does not support (d not 64/128,
// heads not a multiple of kv_heads, sizes out of range, emu_tiles not 0..8) and for an unsafe
// softmax (max_offset + tau >= log2(max finite of P's cast), the assertion upstream added after
// issue #2716) unless allow_saturation. Needs no GPU. The "does not fit in GPU memory" check
// runs in gpu_attn_run / gpu_attn_time against the device's free memory.
void gpu_attn_validate(const GpuAttnShape& shape, const GpuAttnSoftmax& sm, bool allow_saturation);
// log2 of the largest finite value of P's cast for this input dtype (bf16, fp16, E4M3, E5M2).
double gpu_attn_p_log2_max(GpuAttnDtype t);
// Bytes the kernel needs on the device (inputs, widened FP8 copies, outputs, instrumentation).
int64_t gpu_attn_device_bytes(const GpuAttnShape& shape, const GpuAttnSoftmax& sm, bool instrument,
                              bool dump);

// FLOPs counted for a forward pass (4 * seq_q * seq_k * d per head, halved for causal with
// seq_q == seq_k: the convention of FA2/FA3 benchmarks and torch's flop counters).
double gpu_attn_flops(const GpuAttnShape& shape);

// ---- CPU side (no GPU needed): inputs, the float64 reference, the CPU model, the replay

// Seeded inputs: Q ~ N(0, 1) * q_scale, K, V ~ N(0, 1), rounded to the storage dtype (RNE,
// satfinite). FP8: each (batch, kv_head) gets descales 2^-(1 + i % 3) (q), 2^-(1 + (i+1) % 3)
// (k, v), and stores x / descale, so the plumbing of per-head descales is exercised.
GpuAttnInputs gpu_attn_make_inputs(const GpuAttnShape& shape, GpuAttnDtype dtype, double q_scale,
                                   uint64_t seed);

// float64 attention (two-pass softmax with exact exp) of the decoded, descaled inputs.
struct GpuAttnReference {
  std::vector<double> o, lse;
};
GpuAttnReference gpu_attn_reference(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                                    const GpuAttnInputs& in, int threads);

// ||out - ref|| / ||ref|| over every element (NaN anywhere -> NaN). _bits: O stored as bf16
// (fp16 = false) or fp16 bit patterns.
double gpu_attn_rel_l2_bf16(const std::vector<uint16_t>& o_bf16, const std::vector<double>& ref);
double gpu_attn_rel_l2_bits(const std::vector<uint16_t>& o, bool fp16,
                            const std::vector<double>& ref);
double gpu_attn_rel_l2(const std::vector<float>& o, const std::vector<double>& ref);

// The tiling of the kernel the CPU model follows: query rows per CTA tile, keys per block, rows
// per warp (the rescale vote's group), and O's storage type. The defaults are fa4sim's kernel;
// upstream's sm90 forward uses (192 or 128, 128, 16) and stores O in the input dtype
// (gpu_upstream.h).
// Which CPU model runs: row_block_cr, RowBlockSim (the sm100 softmax's steps, as fa4sim's own
// kernel; correctly rounded MUFU functions); sm90_mufu, upstream's sm90 forward operation for
// operation (analysis/sm90_forward.h) with the H200's MUFU models (mufu.h: the tables load once);
// sm90_cr, the same order with correctly rounded exp2 / rcp / log2 (no tables); sm90_wgmma,
// sm90_mufu with both GEMMs through the wgmma model (Sm90WgmmaGemm, core/wgmma_model.h; slower).
enum class GpuAttnCpuModel { row_block_cr, sm90_cr, sm90_mufu, sm90_wgmma };
const char* gpu_attn_cpu_model_name(GpuAttnCpuModel m);

struct GpuAttnTiling {
  int block_m = kGpuAttnBlockM, block_n = kGpuAttnBlockN, warp_rows = kGpuAttnWarpRows;
  bool out_fp16 = false;  // O rounded to fp16 (else bf16)
  GpuAttnCpuModel model = GpuAttnCpuModel::row_block_cr;
  Sm90Contraction fma{};  // the sm90 models' contraction choices (sm90_forward.h [C1]-[C3])
};

// The CPU model of the same kernel: online_softmax.h's RowBlockSim fed tile by tile in the
// kernel's order and granularity (by default 128-row CTA tiles, 64-key blocks, 16-row warps), S =
// the float32 rounding of the exact dot product, V decoded. Exp2: MUFU columns -> correctly
// rounded exp2 (Exp2Mode::rounded_fp32); with emu_tiles = k > 0, the columns of 8-column tile t of
// a key block go through ex2_emu (degree 3) iff bit t % 8 of gpu_attn_emu_mask(k) is set
// (RowBlockSim's tile_mask schedule). tiling.model = sm90_mufu / sm90_cr runs Sm90RowBlock instead
// (upstream's sm90 order; `gpu upstream check`), the same tiles, blocks and emulated tiles.
struct GpuAttnModel {
  std::vector<float> o;    // [batch, heads, seq_q, d] after the V descale, rounded to bf16/fp16
  std::vector<float> lse;  // [batch, heads, seq_q], natural log (-inf: no visible key)
  uint64_t row_decisions = 0, row_rescales = 0, warp_decisions = 0, warp_rescales = 0;
  uint64_t p_count = 0, saturated = 0;
};
GpuAttnModel gpu_attn_cpu_model(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                                const GpuAttnInputs& in, int threads,
                                const GpuAttnTiling& tiling = {});

// Counts from the instrumented kernel's flags, with the model's denominators (decisions =
// blocks after the first, per row and per warp).
struct GpuAttnCounts {
  uint64_t row_decisions = 0, row_rescales = 0, warp_decisions = 0, warp_rescales = 0;
  uint64_t saturated = 0;
};
GpuAttnCounts gpu_attn_counts(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                              const GpuAttnInstr& instr);

// Replay of the GPU's own dumped S through the core functions of online_softmax.h (the same
// block order and per-tile emulation as the kernel). Exact comparisons: row_max after each
// block, the row's rescale flag, the warp's vote, P where emulated (ex2_emu, 0 bits), P's cast
// bits (formats.h encode of the GPU's float32 P). MUFU P: ulp distance to the correctly rounded
// exp2 of the same float32 argument (histogram 0, 1, 2, >2).
struct GpuAttnReplay {
  uint64_t row_max_checked = 0, row_max_mismatch = 0;
  uint64_t flag_checked = 0, flag_mismatch = 0;
  uint64_t warp_checked = 0, warp_mismatch = 0;
  uint64_t p_emu_checked = 0, p_emu_mismatch = 0;
  uint64_t p_cvt_checked = 0, p_cvt_mismatch = 0, p_cvt_emu_checked = 0, p_cvt_emu_mismatch = 0;
  uint64_t p_mufu_checked = 0, p_mufu_ulp[4] = {0, 0, 0, 0};  // 0, 1, 2, >2 ulp
  std::vector<std::string> first_mismatches;  // at most 10, "what at (bh, row, col): ..."
};
GpuAttnReplay gpu_attn_replay(const GpuAttnShape& shape, const GpuAttnSoftmax& sm,
                              const GpuAttnInputs& in, const GpuAttnOutputs& gpu);

}  // namespace fa4sim
