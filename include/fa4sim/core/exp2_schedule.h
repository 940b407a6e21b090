// exp2_schedule.h: which exps of a score row FlashAttention-4 sends to the FMA-pipe emulation.
//
// Models: Dao-AILab/flash-attention, flash_attn/cute/flash_fwd_sm100.py, apply_exp2_convert and
// its (ex2_emu_freq, ex2_emu_res, ex2_emu_start_frg) arguments, at commit 0251105a (2026-08-15);
// docs/facts.md §1. The tuning table that picks the triple per (use_2cta, causal, head_dim_padded,
// is_sm103) lives in data/fa4_tuning.json, not here.
// The rule, per row of S (row_width columns):
//   the row is cut into fragments of 32 columns, frg_cnt = row_width / 32;
//   inside fragment j the columns go in pairs (k, k+1), k even (k counted inside the fragment);
//   the pair uses the hardware exp2 (MUFU ex2.approx.ftz.f32) when
//       freq == 0  or  k % freq < freq - res  or  j >= frg_cnt - 1  or  j < start_frg
//   and is emulated (ex2_emulation_2, both columns) otherwise.
// So the last fragment is always hardware, fragments before start_frg are hardware, and inside
// the others `res` of every `freq` columns (counted from the fragment's first column) are emulated.
// Does not model: which warp computes which row (every row of a tile uses the same columns).
//
// Header-only and FA4_HD: the GPU kernels include this file and use the same rule.
//
// ---- Contract: emulated(col, row_width, freq, res, start_frg)
// Inputs:  any ints. The schedule is well formed when schedule_valid() is true: row_width is a
//          positive multiple of 32, freq >= 0, and for freq > 0: 0 <= res < freq (upstream only
//          uses res = 4 or 6 < freq), start_frg >= 0.
// Result:  true iff column `col` (0-based, < row_width) is emulated. Total: an ill-formed
//          schedule or a column outside [0, row_width) gives false (hardware exp2).
#pragma once

#include "fa4sim/core/hd.h"

namespace fa4sim {

inline constexpr int kExp2FragmentCols = 32;  // columns per fragment of a row of S

FA4_HD constexpr bool schedule_valid(int row_width, int freq, int res, int start_frg) {
  if (row_width <= 0 || row_width % kExp2FragmentCols != 0) return false;
  if (freq < 0) return false;
  if (freq == 0) return true;  // no emulation; res and start_frg are ignored
  return res >= 0 && res < freq && start_frg >= 0;
}

FA4_HD constexpr bool emulated(int col, int row_width, int freq, int res, int start_frg) {
  if (!schedule_valid(row_width, freq, res, start_frg) || freq == 0) return false;
  if (col < 0 || col >= row_width) return false;
  const int frg_cnt = row_width / kExp2FragmentCols;
  const int j = col / kExp2FragmentCols;                // fragment index
  const int k = (col % kExp2FragmentCols) & ~1;         // even column of the pair, in the fragment
  if (j >= frg_cnt - 1 || j < start_frg) return false;  // last fragment / before start: MUFU
  return !(k % freq < freq - res);
}

// Number of emulated columns in a row (0 for an ill-formed schedule).
FA4_HD constexpr int emulated_count(int row_width, int freq, int res, int start_frg) {
  int n = 0;
  for (int c = 0; c < row_width; ++c) n += emulated(c, row_width, freq, res, start_frg) ? 1 : 0;
  return n;
}

}  // namespace fa4sim
