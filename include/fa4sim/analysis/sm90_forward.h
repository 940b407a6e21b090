// sm90_forward.h: upstream FlashAttention-4's sm90 forward softmax (FlashAttentionForwardSm90 with
// softmax.py's `Softmax`, and the tricks variant of scripts/drivers/fa4_tricks.py), operation for
// operation per query row, with the GEMMs behind one seam (Sm90Gemm) so that a tensor-core model
// can replace them.
//
// Models (Dao-AILab/flash-attention, flash_attn/cute @0251105a, the source of the pinned
// flash-attn-4 4.0.0b36 wheel's sm90 path; docs/facts.md §5; line numbers are that commit's):
//   softmax.py:150-190 Softmax.online_softmax, per row r of a key block:
//     row_max_cur = fmax_reduce(S row, init row_max[r] unless first)           (utils.py:365-389)
//                   then the max over the 4 threads of the row (warp_reduction_max, group 4)
//     row_max[r] = row_max_cur; row_max_cur -> 0 if -inf (check_inf)
//     P = exp2(S * scale_log2 - row_max_cur * scale_log2, fastmath)       (softmax.py:168-178)
//         -> ex2.approx.ftz.f32 of fma(S, scale_log2, -(row_max_cur * scale_log2))  [C1]
//     row_scale = exp2((row_max_prev - row_max_cur) * scale_log2, fastmath) (softmax.py:180-182)
//     each thread: row_sum = fadd_reduce(its P values, init row_sum * row_scale)
//         (utils.py:416-422: arch < 100 -> TensorSSA.reduce(ADD, init)) [C2]
//   flash_fwd_sm90.py:1386-1402 / 1457-1475: P cast to the input dtype (utils.cvt_f16:
//     cvt.rn.{bf16x2,f16x2}.f32, utils.py:631-645), O rescaled by row_scale, then O += P V
//     (wgmma, C = O; in every variant of the loop O's sequence is: scale, add this block's P V);
//   softmax.py:193-228 Softmax.finalize: row_sum = warp_reduce(row_sum, add, width 4)
//     (utils.py:317-331: butterfly, offset 1 then 2: (t0 + t1) + (t2 + t3));
//     zero_or_nan = row_sum == 0 or NaN; scale = rcp_approx(row_sum, or 1.0) * 1.0;
//     LSE = (row_max * scale_log2 + log2(row_sum, fastmath)) * LN2, or -inf        [C3]
//   softmax.py:231-241 rescale_O: O *= scale; the epilogue stores O in the input dtype (RN).
//   The tricks variant (fa4_tricks.py SoftmaxTricks): keeps the stale max while
//   (row_max_prev - row_max_safe) * scale_log2 >= -tau (row_scale 1), P's argument
//   S * scale_log2 - (row_max_used * scale_log2 - max_offset), ex2_emulation(degree) on the n8
//   tiles t with ((t % 8) * k) % 8 < k, LSE minus max_offset * LN2.
//   scale_log2 = float32(softmax_scale) * float32(log2 e) in float32 (utils.py:183-193: the
//   kernel's Float32 argument times LOG2_E).
// Thread layout (wgmma m64nNk16 accumulator, reshape_acc_to_mn): thread q of a row's quad holds
// columns 8 i + 2 q and 8 i + 2 q + 1 of every n8 tile i, in that order.
//
// Not read from the compiled code (choices, each a switch in Sm90Contraction, so one GPU run can
// settle them; docs/divergences.md):
//   [C1] mul feeding a sub is contracted to one fma (ptxas's default --fmad=true);
//   [C2] TensorSSA.reduce adds in register order starting from the init value, and the first add
//        contracts with init's multiply: fma(row_sum, row_scale, P_0);
//   [C3] row_max * scale_log2 + log2(row_sum) contracts to fma(row_max, scale_log2, log2).
// Does not model: sinks, score_mod, local masks. The tensor core's accumulation: Sm90Gemm's
// default is none (S = the exact dot product rounded once to float32; O += P V one fma per key in
// key order); Sm90WgmmaGemm plugs in the wgmma model.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "fa4sim/core/formats.h"
#include "fa4sim/core/mufu.h"

namespace fa4sim {

// The two GEMMs of a key block: the seam for a model of wgmma's float32 accumulation. The default
// is no tensor-core model: S = sum q_x k_x exactly (double), rounded once; O = fma(P_k, V_k, O)
// for k in key order.
struct Sm90Gemm {
  virtual ~Sm90Gemm() = default;
  // S = Q K^T for one (query row, key): q and k hold d float32 values (the decoded inputs).
  virtual float qk(const float* q, const float* k, int d) const;
  // o[0..d) += sum_k p[k] v[k][0..d), keys k = 0..n-1 (v row stride ldv): wgmma with C = o.
  virtual void pv(float* o, const float* p, const float* v, size_t ldv, int n, int d) const;
  // A key block at once, the same bits as the calls above: S[r][c] = qk(Q row r, K row c) for
  // r < rows, c < n (row strides ldq, ldk, lds); O row r (stride ldo) = pv(O row r, P row r,
  // V) for r < rows (P row stride ldp). The defaults make those calls; a model overrides them
  // to prepare each operand once per block instead of once per row or pair.
  virtual void qk_tile(float* S, size_t lds, const float* Q, size_t ldq, int rows, const float* K,
                       size_t ldk, int n, int d) const;
  virtual void pv_rows(float* O, size_t ldo, const float* P, size_t ldp, int rows, const float* V,
                       size_t ldv, int n, int d) const;
};

// The tensor core through the seam: both GEMMs as chains of Hopper wgmma m64nNk16 steps, each
// output element through core/wgmma_model.h's bit-exact model (MMA-Sim's Hopper set; 0 mismatches
// against the H200 in 1.02e8 dot products per type, docs/wgmma.md). S: C = +0 for the first step
// (upstream's zero_init), then the running result, k-blocks of 16 in order 0, 16, ...; O: C = O,
// then the key block's 16-key steps in key order. Inputs are values of `in_format` (bf16 or fp16:
// P after its cast, V, Q, K decoded), so their bits are exact. Assumed, not read from the compiled
// code: the k order of the chain and that zero_init equals C = +0.
struct Sm90WgmmaGemm : Sm90Gemm {
  explicit Sm90WgmmaGemm(const Format& in_format);
  float qk(const float* q, const float* k, int d) const override;
  void pv(float* o, const float* p, const float* v, size_t ldv, int n, int d) const override;
  // Each input decoded once per block and finite steps in loops over arrays (sm90_forward.cpp's
  // finite_step): 3.5x faster in test_gpu_upstream_slow (data/bench/wgmma_tiles_2026-12-03_s19.json).
  void qk_tile(float* S, size_t lds, const float* Q, size_t ldq, int rows, const float* K,
               size_t ldk, int n, int d) const override;
  void pv_rows(float* O, size_t ldo, const float* P, size_t ldp, int rows, const float* V,
               size_t ldv, int n, int d) const override;

 private:
  const Format* f_;
  bool fp16_;
};

// The contractions not read from the compiled code ([C1]-[C3] above); true = one fma.
struct Sm90Contraction {
  bool exp_argument = true;  // [C1] fma(S, scale_log2, -row_max_scaled)
  bool row_sum_init = true;  // [C2] fma(row_sum, row_scale, P_0)
  bool lse = true;           // [C3] fma(row_max, scale_log2, log2(row_sum))
};

struct Sm90Softmax {
  float scale_log2 = 1;
  float tau = 0, max_offset = 0;  // 0, 0: the stock kernel
  int emu_eighths = 0;            // the variant's k: emulated n8 tiles ((t % 8) * k) % 8 < k
  int emu_degree = 3;
  const Format* p_format = &kBF16;  // P's cast (the input dtype)
  MufuHardware mufu{};              // loaded: the H200's MUFU; empty: correctly rounded (fast)
  Sm90Contraction fma{};
  int warp_rows = 16;  // a warp's rows (its rescale vote; the counts only)
};

// Rescale decisions (blocks after the first): per row, row_scale < 1; per warp, any of its rows.
struct Sm90Counts {
  uint64_t row_decisions = 0, row_rescales = 0, warp_decisions = 0, warp_rescales = 0;
};

// One CTA tile of rows, fed key block by key block in the kernel's order.
class Sm90RowBlock {
 public:
  Sm90RowBlock(const Sm90Softmax& sm, int rows, int d, const Sm90Gemm& gemm);
  // S: rows x n float32 scores (row stride lds; -inf = masked); V: n x d (row stride ldv).
  // n <= the block's width; the thread layout numbers the block's columns from 0.
  void process_block(const float* S, size_t lds, const float* V, size_t ldv, int n);
  // O: rows x d (row stride ldo, float32 before the output cast); lse: rows (natural log).
  void finalize(float* O, size_t ldo, float* lse) const;
  const Sm90Counts& counts() const { return counts_; }

 private:
  Sm90Softmax sm_;
  int rows_, d_;
  const Sm90Gemm& gemm_;
  bool first_ = true;
  std::vector<float> row_max_, row_sum_, o_;  // row_sum_: 4 per row, one per thread of the quad
  std::vector<float> p_, pc_;
  Sm90Counts counts_;
};

}  // namespace fa4sim
