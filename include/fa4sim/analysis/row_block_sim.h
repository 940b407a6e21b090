// row_block_sim.h: RowBlockSim, FlashAttention-4's online softmax simulated row block by row
// block over tiles of scores, with the per-row steps of core/online_softmax.h (which says what is
// modelled, after which upstream code, and what is not: Note [Lazy rescale]). This is the
// simulator around the core: it allocates, throws, and runs the AVX2 loops of the P @ V
// accumulation and the P conversion.
//
// The per-tile API (for `fa4sim rescale` and the end-to-end attention model):
//   RowBlockSim sim(params, rows, d);            // rows of one CTA tile (any count; warps of
//                                                // params.warp_rows rows inside it)
//   for each key tile, in the order the kernel visits them (BlockOrder):
//     sim.process_tile(S, lds, V, ldv, n);       // S: rows x n float32 scores (row stride lds),
//                                                // V: n x d float32 (row stride ldv) or nullptr
//                                                // to only track maxima, sums and counts
//   sim.finalize(O, ldo, lse);                   // O: rows x d float32, lse: rows (natural log)
//   sim.counts()                                 // rescales per row and per warp, saturations
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "fa4sim/core/block_scale.h"
#include "fa4sim/core/formats.h"
#include "fa4sim/core/online_softmax.h"

namespace fa4sim {

// The smallest positive float32 P that the conversion to `f` clips (its correctly rounded value
// would exceed max_finite; e.g. 464 for E4M3, 61440 for E5M2); +inf for fp32.
float saturation_threshold(const Format& f);

// out[k] = quantize(f, P[k], ov) for k in [0, n), bit for bit. With AVX2, satfinite and a narrow
// format (total_bits < 32) non-negative non-NaN inputs are rounded 8 at a time: at or above
// f.min_normal by round-to-nearest-even on the float32 bits, below it by adding and subtracting
// 2^(emin - man_bits + 23) (which leaves x rounded to a multiple of the subnormal spacing), then
// clamped to max_finite. Everything else goes through quantize_array. out may alias P.
void quantize_p(const Format& f, Overflow ov, const float* P, float* out, int n);

struct RescaleCounts {
  uint64_t tiles = 0;           // tiles processed (per row-block)
  uint64_t row_decisions = 0;   // rows x (tiles - 1): the denominator of rows %
  uint64_t row_rescales = 0;    // row-tile pairs with acc_scale < 1
  uint64_t warp_decisions = 0;  // warps x (tiles - 1): the denominator of warps %
  uint64_t warp_rescales = 0;   // warp-tile pairs where any row had acc_scale < 1
  uint64_t p_count = 0;         // P values converted (unmasked keys)
  uint64_t saturated = 0;       // P values at or above saturation_threshold(p_format)
  RescaleCounts& operator+=(const RescaleCounts& o);
};

class RowBlockSim {
 public:
  // `rows` >= 1 rows of one tile; warps are consecutive groups of params.warp_rows rows (the last
  // warp may be partial: it still votes once). `d` = head dimension (columns of V and O).
  // `counts_only`: track maxima, rescale votes and saturations only (no row sums, no O, no LSE;
  // P is computed only where it could saturate): the fast path of `fa4sim rescale --counts-only`.
  RowBlockSim(const SoftmaxParams& params, int rows, int d, bool counts_only = false);

  // Feeds one key tile of n >= 1 keys. S: rows x n scores (row r at S + r * lds); -inf marks a
  // masked key (P = 0). NaN/+inf scores are the caller's to refuse. V: n x d (key k at
  // V + k * ldv) or nullptr (then O is not touched: counts, maxima and row sums only).
  // Schedule mode numbers the tile's columns 0..n-1 (the kernel's row of n scores).
  void process_tile(const float* S, size_t lds, const float* V, size_t ldv, int n);

  // Writes O / row_sum (rows x d at O + r * ldo; may be nullptr) and the natural-log LSE
  // (rows; may be nullptr). A row whose keys were all masked gets O = 0 and LSE = -inf.
  void finalize(float* O, size_t ldo, float* lse) const;

  // Per-row max_offset (rows values) in place of params.max_offset, for P and the LSE: the seed
  // article's one-shot experiment gives each row its own offset u_r. Empty = params.max_offset.
  void set_row_max_offsets(std::vector<float> offsets) { row_offset_ = std::move(offsets); }

  // P converted per block of keys in a block-scaled format (block_round: the scale from each
  // block's amax of the float32 P, then the elements) in place of params.p_format; saturations
  // count the P values the block's scale clips. nullptr = the element-wise p_format (default).
  // The block size must divide every tile's key count but the last (a partial block is padded
  // with zeros).
  void set_p_block(const BlockFormat* f) {
    has_p_block_ = f != nullptr;
    if (f != nullptr) p_block_ = *f;
  }

  // Adds the thread CPU seconds of each tile's P_cast @ V to *acc (nullptr = not timed, the
  // default): `fa4sim attention`'s phase times (Note [Attention phase times] in attention.cpp).
  void set_pv_timer(double* acc) { pv_timer_ = acc; }

  const RescaleCounts& counts() const { return counts_; }
  const std::vector<float>& row_max() const { return row_max_; }
  const std::vector<float>& row_sum() const { return row_sum_; }
  // The last tile's per-row acc_scale (1 where no rescale), for tests and tracing.
  const std::vector<float>& last_acc_scale() const { return acc_scale_; }
  int rows() const { return rows_; }
  int d() const { return d_; }

 private:
  SoftmaxParams p_;
  int rows_, d_;
  float sat_threshold_;
  bool first_ = true;
  bool counts_only_ = false;
  double* pv_timer_ = nullptr;
  bool has_p_block_ = false;
  BlockFormat p_block_;
  std::vector<float> row_max_, row_sum_, acc_scale_, o_, row_offset_;
  std::vector<float> P_, Pc_;  // per-tile scratch: one row of P, the tile's P_cast
  RescaleCounts counts_;
};

}  // namespace fa4sim
