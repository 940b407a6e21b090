// online_softmax.h: FlashAttention-4's online softmax with conditional rescaling, simulated row
// block by row block, step by step as the sm100 forward kernel does it.
//
// Models: Dao-AILab/flash-attention, flash_attn/cute/softmax.py, SoftmaxSm100.update_row_max /
// scale_subtract_rowmax / apply_exp2_convert / finalize, and the correction warp of
// flash_fwd_sm100.py (vote_ballot_sync(scale < 1)), at commit 0251105a (2026-08-15);
// docs/facts.md §2. Per row, per key block (a tile of n keys, n = 128 on sm100):
//   block_max = max(s over the tile)                   (masked keys are -inf)
//   first tile: row_max = block_max, acc_scale = 1      (no rescale)
//   later:      m_new  = max(row_max, block_max)
//               m_safe = m_new, or 0 where m_new = -inf (row_max_safe)
//               a      = (row_max - m_safe) * scale_log2         (float32 sub, mul)
//               tau > 0 and a >= -tau:  keep row_max (stale), acc_scale = 1
//               else:                   row_max = m_new, acc_scale = exp2(a)
//   P = exp2(fma(s, scale_log2, max_offset - row_max_safe * scale_log2))   float32
//   P_cast = convert(P) to the MMA input type (bf16, fp16, e4m3, e5m2), formats.h, satfinite
//   row_sum = row_sum * acc_scale + sum(P)              (the float32 P, not P_cast)
//   O = O * acc_scale + P_cast @ V                      (float32 accumulator)
//   final: O / row_sum; LSE = (row_max * scale_log2 + log2(row_sum) - max_offset) * ln 2
// The correction warp rescales the O rows of a warp (32 rows on sm100; `warp_rows`) when ANY
// row of the warp has acc_scale < 1; rows whose scale is 1 are multiplied by 1, so the warp rule
// changes what the GPU spends, never the numbers. Both counts are kept.
//
// Note [Lazy rescale]: with tau > 0 the max used for P may lag the true running max by up to tau
// (log2 units), so P can reach 2^(max_offset + tau). O and row_sum are both measured against the
// same stale max, so O / row_sum is unchanged in exact arithmetic, PROVIDED the conversion of P
// can hold 2^(max_offset + tau). The kernel asserts max_offset + tau < log2(dtype_max); E4M3
// (max 448 = 2^8.807) with max_offset 8 and tau 4 violates it and P saturates while row_sum
// counts the unclamped value (upstream issue #2716). `saturation_threshold()` gives the float32
// P from which the conversion clips.
//
// Does NOT model (simulator choices, see README "Divergences"):
//   * the order of the float32 additions inside the tensor-core MMA and inside the row-sum
//     reduction: P_cast @ V is accumulated in key order with one fma per product (one rounding
//     per key), the per-tile sum of P in 8 interleaved partial sums combined pairwise;
//   (The MUFU's functions, ex2.approx for P and acc_scale, rcp.approx for 1 / row_sum and
//   lg2.approx for the LSE, are the H200's bit-exact models of core/mufu.h when
//   Exp2Choice::hardware is set (`--exp mufu`, emuN, schedule), correctly rounded float32
//   functions otherwise (`--exp cr`, the fast mode; docs/mufu.md).)
//   * whether `max_offset - row_max * scale_log2` is itself fused: it is computed as a float32
//     multiply then subtract (identical when scale_log2 = 1, the default of `fa4sim rescale`).
//
// The row-block simulator that runs these steps over tiles of scores (RowBlockSim, with its
// vector loops) is analysis/row_block_sim.h.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>

#include "fa4sim/core/exp2_emu.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/core/hd.h"
#include "fa4sim/core/mufu.h"

namespace fa4sim {

// ---- parameters

// The order in which key tiles are visited. The sm100 forward kernel walks from the last key
// block to the first (n_block_max - 1 down to n_block_min); the seed article walks forward.
// For i.i.d. scores the order does not matter statistically; for scores that rise across the
// keys it decides everything (walked in reverse, the max comes first).
// Note [Score range]: the simulator takes scores in log2 units (score * scale_log2) in float32.
// Beyond 2^24 in magnitude float32 holds no fraction of such a number: every exp2 argument
// x - row_max is an integer, the softmax is all-or-nothing and its errors measure float32's
// spacing, not the kernel (at 1e30 an LSE "error" of 2.5e22 is one ulp). Past ~1.7e38 the
// difference itself overflows. Commands refuse scaled scores beyond this bound (exit 2) instead
// of printing such numbers; real attention logits stay below ~1e3.
inline constexpr double kMaxScaledScore = 16777216.0;  // 2^24

// The one rule for the log2-unit knobs of every command (check, rescale, attention, gpu):
// tau and max_offset are finite, >= 0 and at most kMaxLog2Knob, so that P's bound
// 2^(max_offset + tau) stays a float32 number. Throws fa4sim::Error naming `opt` (exit 2).
inline constexpr double kMaxLog2Knob = 64.0;
void check_log2_knob(const std::string& opt, double v);

enum class BlockOrder : uint8_t { reverse, forward };
inline constexpr BlockOrder kKernelBlockOrder = BlockOrder::reverse;
inline constexpr BlockOrder kArticleBlockOrder = BlockOrder::forward;
const char* block_order_name(BlockOrder o);  // "reverse" / "forward"

// How P = exp2(x) (and acc_scale = exp2(a)) is computed.
enum class Exp2Mode : uint8_t {
  exact,         // exp2 of the argument computed in float64 from the float32 scores, rounded once
                 // to float32 (the seed article's NumPy model; no float32 FMA rounding)
  rounded_fp32,  // correctly rounded float32 exp2 of the kernel's float32 argument: what the
                 // MUFU's ex2.approx aims at (within 2 ulp of it on the H200); `--exp cr`, the
                 // fast mode
  ex2_approx,    // ex2.approx.ftz.f32 of the kernel's float32 argument, bit for bit: the H200's
                 // measured model (mufu.h, SoftmaxParams::mufu); `--exp mufu`
  emu,           // ex2_emu(argument, degree) for every element (exp2_emu.h, bit-exact)
  schedule,      // upstream's mixed schedule: emulated columns use ex2_emu(degree), the rest
                 // the MUFU (ex2_approx when Exp2Choice::hardware, else rounded_fp32)
};

struct Exp2Choice {
  Exp2Mode mode = Exp2Mode::rounded_fp32;
  // The MUFU's functions (every exp2 not emulated, acc_scale, 1 / row_sum, log2 of the LSE) by the
  // H200's measured models (mufu.h) instead of correctly rounded float32 functions. Set by
  // parse_exp2_choice for mufu (ex2_approx), emuN and schedule (the kernel runs them on the MUFU);
  // off for cr and exact, and by default (the tables are then never loaded).
  bool hardware = false;
  int degree = 3;  // emu, and the emulated columns of schedule (upstream uses 3)
  int freq = 0;    // schedule (freq, res, start_frg): see exp2_schedule.h
  int res = 4;
  int start_frg = 0;
  // schedule by tiles instead (when tile_mask != 0): column c of a key tile is emulated iff bit
  // (c / 8) % 32 of tile_mask is set: a Hopper wgmma accumulator gives each thread 2 columns of
  // every n8 tile, so a warp-uniform choice is per 8-column tile (`fa4sim gpu upstream`'s variant
  // of upstream's sm90 forward, gpu_upstream.h).
  uint32_t tile_mask = 0;
  // schedule: the tiles the kernel processes with a mask function (a row's first tile, and tiles
  // holding a masked score) use the MUFU for every column, as upstream's sm100 softmax_step passes
  // `ex2_emu_freq if mask_fn is None else 0` (flash_fwd_sm100.py); false: the schedule everywhere.
  bool masked_tiles_mufu = false;
};

struct SoftmaxParams {
  float scale_log2 = 1.0f;         // softmax_scale * log2(e); 1 = scores already in log2 units
  float max_offset = 0.0f;         // the kernel's per-dtype offset: 8 for FP8, 0 otherwise
  float rescale_threshold = 0.0f;  // tau (log2 units); 0 = no threshold logic
  Exp2Choice exp2;
  Format p_format = kBF16;  // the MMA input type P is converted to (kFP32: no cast)
  Overflow p_overflow = Overflow::satfinite;  // cvt.rn.satfinite, as the kernel
  int warp_rows = 32;  // rows per warp for the correction warp's vote (sm100: 32)
  // The measured tables when exp2.hardware (RowBlockSim loads them, mufu_hardware()); not loaded:
  // the correctly rounded functions.
  MufuHardware mufu{};
};

// ---- core: per-row steps (FA4_HD, no allocation, no I/O)

FA4_HD float neg_inf_f32() { return -std::numeric_limits<float>::infinity(); }

// row_max_safe: a row whose max is still -inf (every key masked) uses 0 so that P = exp2(-inf) = 0
// instead of exp2(nan).
FA4_HD float row_max_safe(float row_max) { return row_max == neg_inf_f32() ? 0.0f : row_max; }

// Correctly rounded float32 2^x (the MUFU-like path): exp2 in float64, rounded once. float64
// exp2 is accurate to < 1 ulp of float64, so this is the correctly rounded float32 except for
// arguments whose 2^x lies within ~2^-52 relative of a float32 rounding midpoint.
FA4_HD float exp2_mufu_like(float x) {
  return static_cast<float>(std::exp2(static_cast<double>(x)));
}

// The MUFU's exp2, rcp and log2: the hardware models when `hw` is loaded, else correctly rounded
// float32 (exp2 and log2 in double rounded once, 1.0f / x).
FA4_HD float mufu_exp2(float x, const MufuHardware& hw) {
  return hw.loaded() ? ex2_approx_ftz(x, hw.ex2) : exp2_mufu_like(x);
}
FA4_HD float mufu_rcp(float x, const MufuHardware& hw) {
  return hw.loaded() ? rcp_approx_ftz(x, hw.rcp) : 1.0f / x;
}
FA4_HD float mufu_log2(float x, const MufuHardware& hw) {
  return hw.loaded() ? lg2_approx_ftz(x, hw.lg2)
                     : static_cast<float>(std::log2(static_cast<double>(x)));
}

struct RowUpdate {
  float row_max;    // the max P is measured against from now on (may be stale)
  float acc_scale;  // factor applied to O and row_sum (1 = no rescale)
  bool rescale;     // acc_scale < 1: this row asks its warp to rescale
};

// ---- Contract: update_row_max(row_max_old, block_max, scale_log2, tau, first, exact_exp2)
// Inputs:   row_max_old, block_max: float32 maxima (-inf allowed, NaN not); scale_log2 > 0;
//           tau >= 0 (0 = no threshold logic); first = this is the row's first tile.
// Output:   the kernel's update_row_max: the new (possibly stale) row_max and acc_scale.
//           acc_scale = exp2(a) rounded to float32 (a in float32; exact_exp2 = float64 a), or the
//           MUFU's ex2.approx of a when `hw` is loaded (mufu.h).
// Invariant: true running max - row_max <= tau / scale_log2 after every call (Note [Lazy rescale]).
FA4_HD RowUpdate update_row_max(float row_max_old, float block_max, float scale_log2, float tau,
                                bool first, bool exact_exp2, const MufuHardware& hw = {}) {
  if (first) return {block_max, 1.0f, false};
  const float m_new = row_max_old > block_max ? row_max_old : block_max;
  const float m_safe = row_max_safe(m_new);
  // row_max_old = -inf (all keys so far masked) gives a = -inf and acc_scale = 0: O and row_sum
  // are still 0, so nothing changes, as on the GPU.
  const float a = (row_max_old - m_safe) * scale_log2;
  if (tau > 0.0f && a >= -tau) return {row_max_old, 1.0f, false};
  const float acc_scale =
      exact_exp2 ? static_cast<float>(std::exp2((static_cast<double>(row_max_old) - m_safe) *
                                                static_cast<double>(scale_log2)))
                 : mufu_exp2(a, hw);
  return {m_new, acc_scale, acc_scale < 1.0f};
}

// The kernel's per-row constant of the packed FMA: max_offset - row_max_safe * scale_log2.
FA4_HD float p_bias(float row_max, float scale_log2, float max_offset) {
  return max_offset - row_max_safe(row_max) * scale_log2;
}

// The float32 argument of exp2 for one score: one FMA (fma.rn.f32x2 on sm100).
FA4_HD float p_argument(float s, float scale_log2, float bias) {
  return std::fma(s, scale_log2, bias);
}

// P for one score with the non-schedule exp2 modes; `emulated` selects ex2_emu for schedule mode
// (the caller asks exp2_schedule.h which columns are emulated).
FA4_HD float p_exp2(float s, float row_max, const SoftmaxParams& p, bool emulated) {
  switch (p.exp2.mode) {
    case Exp2Mode::exact: {
      const double x = static_cast<double>(s) * p.scale_log2 + p.max_offset -
                       static_cast<double>(row_max_safe(row_max)) * p.scale_log2;
      return static_cast<float>(std::exp2(x));
    }
    case Exp2Mode::emu:
      return ex2_emu(p_argument(s, p.scale_log2, p_bias(row_max, p.scale_log2, p.max_offset)),
                     p.exp2.degree);
    case Exp2Mode::ex2_approx:  // needs p.mufu loaded (RowBlockSim loads it)
      return ex2_approx_ftz(
          p_argument(s, p.scale_log2, p_bias(row_max, p.scale_log2, p.max_offset)), p.mufu.ex2);
    case Exp2Mode::rounded_fp32:
      return exp2_mufu_like(
          p_argument(s, p.scale_log2, p_bias(row_max, p.scale_log2, p.max_offset)));
    case Exp2Mode::schedule:
    default: {
      const float x = p_argument(s, p.scale_log2, p_bias(row_max, p.scale_log2, p.max_offset));
      return emulated ? ex2_emu(x, p.exp2.degree) : mufu_exp2(x, p.mufu);
    }
  }
}

}  // namespace fa4sim
