// attention_kernel.cuh: sm_90a attention forward with FlashAttention-4's softmax.
//
// Models flash_attn/cute/softmax.py SoftmaxSm100 and flash_fwd_sm100.py @0251105a (see
// include/fa4sim/gpu/gpu_attention.h for the layout contract). Per key block, per row:
//   m_new = max(m_old, max(s)); m_safe = m_new or 0 if -inf; a = (m_old - m_safe) * scale_log2
//   acc_scale = ex2.approx(a); tau > 0 and a >= -tau -> keep m_old, acc_scale = 1
//   P = exp2(fma(s, scale_log2, max_offset - row_max * scale_log2))   MUFU or emulated, per tile
//   row_sum = row_sum * acc_scale + sum(P in float32); P -> input dtype (or FP8) -> P @ V
//   O *= acc_scale only when __any_sync over the warp's 16 rows says some acc_scale < 1
// The first block processed sets row_max and never rescales.
//
// Note [Why wgmma, and how]
//   Hopper's tensor cores reach their rate only through wgmma (warpgroup MMA, asynchronous,
//   B from shared memory through a descriptor); an earlier mma.sync (FA2-design) version of this
//   kernel reached 235 TFLOP/s at d = 128, below torch's FA2-based flash backend. Here a CTA is
//   2 warpgroups (256 threads), 64 query rows each, and a key block is 64 keys:
//   - S = Q K^T: m64n64k16 with Q's A fragments in registers (ldmatrix'd once) and K from
//     128-byte-swizzled smem (K-major B); O += P V: m64nDk16 with P's A fragments in registers
//     and V from the same swizzled layout read MN-major (the instruction transposes it).
//   - K/V: three smem stages filled one block ahead by cp.async from every thread; full/empty
//     mbarriers per stage (cp.async.mbarrier.arrive.noinc / mbarrier.arrive) instead of
//     CTA-wide barriers, so the two warpgroups can drift apart.
//   - Ping-pong (as FA3): a warpgroup's MMA phase issues P V of the previous block and S of this
//     one back to back, then passes the tensor cores to the other warpgroup (named barriers 1
//     and 2) and does its softmax while the other one's MMAs run. Every MMA phase is
//     straight-line code (the first block is peeled): a branch between wgmmas makes ptxas
//     wait for each one before the next (WARPGROUP.DEPBAR after every HGMMA in the SASS).
//   Not done (FA3 does): TMA loads, a producer warp, overlapping a warpgroup's softmax with its
//   own next Q K^T, FP8 wgmma.
//   The accumulator layout per warp is the m16n8 C fragment (a thread owns rows lane/4 and
//   lane/4 + 8 of its warp's 16, columns 2(lane%4) + {0,1} of each 8-column tile), and P's
//   register A fragment is the m16n8k16 one, so the per-row softmax and the per-tile emulation
//   choice read as in FA2. A warp owns 16 rows: the rescale vote is over 16 rows.
//
// Note [Emulation granularity]
//   A thread holds columns 8t + 2(lane%4) + {0,1} of tile t. Choosing MUFU vs emulation per
//   column would split a warp (lanes with different lane%4 taking different paths), and a
//   divergent warp issues both paths: no MUFU time saved. So the choice is per 8-column tile
//   (uniform across the warp; the branch on the mask bit is warp-uniform). Upstream (sm100)
//   chooses per column pair because there a thread owns a whole row.
//
// Note [FP8 on the fp16 MMA]
//   E4M3/E5M2 values are exactly representable in fp16, so FP8 Q/K/V are widened to fp16 before
//   the kernel and the MMA runs in fp16 with float32 accumulation. P is rounded by the hardware's
//   cvt.rn.satfinite.{e4m3,e5m2}x2.f32 and widened back exactly (cvt.rn.f16x2.{e4m3,e5m2}x2), so
//   the saturation mechanism (issue #2716) is the hardware's own. Not modelled: the FP8 MMA's
//   own accumulation (Hopper's FP8 tensor cores add with fewer mantissa bits) and its speed.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "attention_params.h"
#include "ex2_ptx.cuh"
#include "wgmma_ops.cuh"

namespace fa4sim::cuda {

// ---- small PTX helpers

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, bool valid) {
  const int n = valid ? 16 : 0;  // 0 source bytes: the 16 destination bytes are zero-filled
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(n));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t addr, uint32_t (&r)[4]) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// mbarrier and named-barrier helpers (PTX ISA 8.x, sm_90).
__device__ __forceinline__ void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  }
}
// Arrives on `bar` once every cp.async this thread issued so far has completed (no pending-count
// increment: the arrival counts against the barrier's expected count).
__device__ __forceinline__ void cp_async_arrive(uint32_t bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(bar) : "memory");
}
__device__ __forceinline__ void named_sync(int id, int threads) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}
__device__ __forceinline__ void named_arrive(int id, int threads) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(threads) : "memory");
}

// Two float32 -> packed pair in the MMA's input type; `lo` is the lower column. For FP8 casts
// the pair goes through the FP8 format (satfinite, RNE) and back to fp16 exactly. Returns the
// packed 16-bit pair; *cvt_bits gets the stored bits of each (FP8 byte, or the 16-bit value).
template <typename T>
__device__ __forceinline__ uint32_t pack_p(float lo, float hi, int p_cast, uint16_t* cvt_lo,
                                           uint16_t* cvt_hi) {
  uint32_t out;
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
    *cvt_lo = uint16_t(out & 0xFFFFu);
    *cvt_hi = uint16_t(out >> 16);
  } else {
    if (p_cast == kPCastInput) {
      asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(out) : "f"(hi), "f"(lo));
      *cvt_lo = uint16_t(out & 0xFFFFu);
      *cvt_hi = uint16_t(out >> 16);
    } else {
      uint16_t f8;
      if (p_cast == kPCastE4M3) {
        asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(f8) : "f"(hi), "f"(lo));
        asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(out) : "h"(f8));
      } else {
        asm("cvt.rn.satfinite.e5m2x2.f32 %0, %1, %2;" : "=h"(f8) : "f"(hi), "f"(lo));
        asm("cvt.rn.f16x2.e5m2x2 %0, %1;" : "=r"(out) : "h"(f8));
      }
      *cvt_lo = uint16_t(f8 & 0xFFu);
      *cvt_hi = uint16_t(f8 >> 8);
    }
  }
  return out;
}

// ---- shared-memory tiles in wgmma's 128-byte-swizzle canonical layout
// A tile of ROWS x D 16-bit elements is stored as D/64 column panels of ROWS x 64 (128 bytes a
// row); the 16-byte chunk c of row r sits at chunk c ^ (r % 8) (Swizzle<3,4,3>, the hardware XORs
// address bits 4-6 with bits 7-9, so every panel starts 1024-byte aligned). The same bytes serve
// as a K-major operand (Q, K: rows are M/N, the 64 columns are K) and as an MN-major one (V: rows
// are K = keys, columns are N = head dim).
template <int ROWS>
__device__ __forceinline__ uint32_t tile_off(int row,
                                             int chunk) {  // chunk: 16-byte unit in the row
  return uint32_t((chunk / 8) * (ROWS * 128) + row * 128 + (((chunk % 8) ^ (row & 7)) << 4));
}

// Loads rows [row0, row0 + ROWS) of a [rows_total][D] tensor into a tile (zero-fill past the end).
// Thread tid moves chunks tid + j * NTHREADS: a fixed trip count, so the loop unrolls fully.
template <int ROWS, int D, int NTHREADS>
__device__ __forceinline__ void load_tile(uint32_t smem, const char* g, int row0, int rows_total,
                                          int tid) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kTotal = ROWS * kChunks;
  static_assert(kTotal % NTHREADS == 0, "every thread moves the same number of chunks");
#pragma unroll
  for (int j = 0; j < kTotal / NTHREADS; ++j) {
    const int i = tid + j * NTHREADS;
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = row0 + r < rows_total;
    const int gr = valid ? row0 + r : 0;
    cp_async_16(smem + tile_off<ROWS>(r, c), g + (int64_t(gr) * D + c * 8) * 2, valid);
  }
}

// wgmma shared-memory descriptor: start address, leading/stride byte offsets (16-byte units),
// layout type 1 = 128-byte swizzle (bits 62-63).
__device__ __forceinline__ uint64_t gmma_desc(uint32_t addr, uint32_t lbo_bytes,
                                              uint32_t sbo_bytes) {
  return uint64_t((addr >> 4) & 0x3FFFu) | (uint64_t((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (uint64_t((sbo_bytes >> 4) & 0x3FFFu) << 32) | (uint64_t(1) << 62);
}
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_commit() {
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}
__device__ __forceinline__ void wgmma_wait0() {
  asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
__device__ __forceinline__ void fence_proxy_async() {
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// Keeps the compiler from moving accumulator reads/writes across an asynchronous wgmma.
template <int N>
__device__ __forceinline__ void reg_fence(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int N, int M>
__device__ __forceinline__ void reg_fence_u(uint32_t (&r)[N][M]) {
#pragma unroll
  for (int i = 0; i < N; ++i)
#pragma unroll
    for (int j = 0; j < M; ++j) asm volatile("" : "+r"(r[i][j])::"memory");
}

template <typename T, int N>
__device__ __forceinline__ void wgmma_s_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db,
                                           int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if constexpr (N == 64)
      wgmma_rs_m64n64k16_bf16(d, a, db, scale_d);
    else
      wgmma_rs_m64n128k16_bf16(d, a, db, scale_d);
  } else {
    if constexpr (N == 64)
      wgmma_rs_m64n64k16_f16(d, a, db, scale_d);
    else
      wgmma_rs_m64n128k16_f16(d, a, db, scale_d);
  }
}
template <typename T, int N>
__device__ __forceinline__ void wgmma_pv(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if constexpr (N == 64)
      wgmma_rs_m64n64k16_bf16_tb(d, a, db);
    else
      wgmma_rs_m64n128k16_bf16_tb(d, a, db);
  } else {
    if constexpr (N == 64)
      wgmma_rs_m64n64k16_f16_tb(d, a, db);
    else
      wgmma_rs_m64n128k16_f16_tb(d, a, db);
  }
}

// ---- the kernel's pieces outside the softmax
// Key blocks this CTA visits: all of them, or (causal) those with a key <= the last query row.
template <int kBM, int kBN>
__device__ __forceinline__ int visible_blocks(const AttnParams& p, int m0, int n_blocks_total) {
  int n_blocks = n_blocks_total;
  if (p.causal) {
    const int last_key = min(p.seq_k, m0 + kBM);  // keys < last_key can be visible
    n_blocks = min(n_blocks_total, (last_key + kBN - 1) / kBN);
  }
  return n_blocks;
}

// mbarriers: full[st] completes when every thread's cp.asyncs of a stage have landed
// (cp.async.mbarrier.arrive.noinc), empty[st] when every thread has finished the P V that read it.
template <int kStages, int kThreads>
__device__ __forceinline__ void init_stage_barriers(uint32_t bar_full, uint32_t bar_empty) {
#pragma unroll
  for (int i = 0; i < kStages; ++i) {
    mbar_init(bar_full + 8u * i, kThreads);
    mbar_init(bar_empty + 8u * i, kThreads);
  }
}

// O += P V for one key block: P from registers (the A fragments `pa`), V from the stage at sV.
template <typename T, int D, int kBN>
__device__ __forceinline__ void issue_pv(float (&o_acc)[D / 8 * 4],
                                         const uint32_t (&pa)[kBN / 16][4], uint32_t sV) {
#pragma unroll
  for (int kk = 0; kk < kBN / 16; ++kk) {
    const uint64_t db = gmma_desc(sV + uint32_t(kk) * 16u * 128u, kBN * 128u, 1024u);
    wgmma_pv<T, D>(o_acc, pa[kk], db);
  }
}

// S = Q K^T for one key block: Q from registers, K from the stage at sK.
template <typename T, int D, int kBN>
__device__ __forceinline__ void issue_qk(float (&s)[kBN / 2], const uint32_t (&q_frag)[D / 16][4],
                                         uint32_t sK) {
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk) {
    const uint32_t koff = uint32_t(kk % 4) * 32u;  // 16 elements further in the 128-byte row
    const uint64_t db = gmma_desc(sK + uint32_t(kk / 4) * (kBN * 128u) + koff, 16u, 1024u);
    wgmma_s_rs<T, kBN>(s, q_frag[kk], db, kk > 0 ? 1 : 0);
  }
}

// ---- the softmax of one key block, per thread (the kernel's steps, inlined into it)
// Where this thread's accumulator elements sit: rows row_base + 8 * hh (hh = 0, 1) of the
// (batch, head) slice bh, columns 8t + col_q + {0, 1} of each 8-column tile t.
struct ThreadRows {
  int64_t bh, bhk;  // (batch, head) of Q/O and of K/V
  int row_base, col_q, lane;
};

// S = -inf where the key is past seq_k or (causal) after the query row.
template <int kBN>
__device__ __forceinline__ void mask_scores(float (&s)[kBN / 2], const AttnParams& p,
                                            const ThreadRows& t, int n0) {
#pragma unroll
  for (int nt = 0; nt < kBN / 8; ++nt)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int col = n0 + nt * 8 + t.col_q + (i & 1);
      const int row = t.row_base + (i >> 1) * 8;
      if (col >= p.seq_k || (p.causal && col > row)) s[nt * 4 + i] = -INFINITY;
    }
}

// The row max of this block and the stale-max rule: acc_scale = ex2(a) with a = (m_old - m_new)
// * scale_log2, kept at 1 (and the old max kept) when tau > 0 and a >= -tau. The first block
// only sets the max. Returns the warp's vote: whether any of its 16 rows has acc_scale < 1.
template <int kBN>
__device__ __forceinline__ bool update_row_max(const float (&s)[kBN / 2], float (&row_max)[2],
                                               float (&acc_scale)[2], bool first, float scale_log2,
                                               float tau) {
  constexpr int kNT = kBN / 8;
  bool want_rescale = false;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float
        mt[kNT];  // a tree of maxima (max is exact and associative: any order gives the same bits)
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) mt[nt] = fmaxf(s[nt * 4 + 2 * hh], s[nt * 4 + 2 * hh + 1]);
#pragma unroll
    for (int w = kNT / 2; w >= 1; w /= 2)
#pragma unroll
      for (int nt = 0; nt < w; ++nt) mt[nt] = fmaxf(mt[nt], mt[nt + w]);
    float m = mt[0];
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
    m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
    const float m_old = row_max[hh];
    const float m_new = fmaxf(m_old, m);
    float sc = 1.f;
    if (first) {
      row_max[hh] = m_new;
    } else {
      const float m_safe = m_new == -INFINITY ? 0.f : m_new;
      const float a = (m_old - m_safe) * scale_log2;
      sc = ex2_mufu(a);
      if (tau > 0.f && a >= -tau) {
        sc = 1.f;
      } else {
        row_max[hh] = m_new;
      }
    }
    acc_scale[hh] = sc;
    want_rescale |= sc < 1.f;
  }
  return __any_sync(0xffffffffu, want_rescale);
}

template <int kDT>
__device__ __forceinline__ void rescale_o(float (&o_acc)[kDT * 4], const float (&acc_scale)[2]) {
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt) {
    o_acc[dt * 4 + 0] *= acc_scale[0];
    o_acc[dt * 4 + 1] *= acc_scale[0];
    o_acc[dt * 4 + 2] *= acc_scale[1];
    o_acc[dt * 4 + 3] *= acc_scale[1];
  }
}

// P = exp2(fma(s, scale_log2, max_offset - row_max * scale_log2)), by MUFU or emulation per
// 8-column tile; row_sum = row_sum * acc_scale + P in column order; P cast to the MMA's input
// (or FP8) and packed as the A fragment `pa` of the next P V. INSTR: saturation counts and the
// S / P / P_cast dumps.
template <typename T, int kBN, bool INSTR, int EMU>
__device__ __forceinline__ void softmax_p(const float (&s)[kBN / 2], const float (&row_max)[2],
                                          float (&row_sum)[2], const float (&acc_scale)[2],
                                          uint32_t (&pa)[kBN / 16][4], uint32_t (&sat_count)[2],
                                          const AttnParams& p, const ThreadRows& t, int n0,
                                          float scale_log2) {
  constexpr int kNT = kBN / 8;
  float bias[2];
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const float rm = row_max[hh] == -INFINITY ? 0.f : row_max[hh];
    bias[hh] = p.max_offset - rm * scale_log2;
    row_sum[hh] = row_sum[hh] * acc_scale[hh];
  }
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    float pv[4];
    // warp-uniform (Note [Emulation granularity]); a constant when EMU >= 0
    const bool emu = EMU < 0 ? bool((p.emu_mask >> nt) & 1u) : (nt * EMU) % kNT < EMU;
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float x = __fmaf_rn(s[nt * 4 + i], scale_log2, bias[i >> 1]);
      pv[i] = emu ? ex2_emu_ptx<3>(x) : ex2_mufu(x);
    }
    row_sum[0] = row_sum[0] + pv[0];
    row_sum[0] = row_sum[0] + pv[1];
    row_sum[1] = row_sum[1] + pv[2];
    row_sum[1] = row_sum[1] + pv[3];
    uint16_t cv[4];
    const uint32_t lo = pack_p<T>(pv[0], pv[1], p.p_cast, &cv[0], &cv[1]);
    const uint32_t hi = pack_p<T>(pv[2], pv[3], p.p_cast, &cv[2], &cv[3]);
    // A fragment of the 16-key step nt/2: regs 0/1 = keys 0-7 (rows g, g+8), 2/3 = keys 8-15
    pa[nt / 2][(nt % 2) * 2 + 0] = lo;
    pa[nt / 2][(nt % 2) * 2 + 1] = hi;
    if constexpr (INSTR) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        if (pv[i] >= p.p_max_finite) ++sat_count[i >> 1];
        const int row = t.row_base + (i >> 1) * 8;
        const int col = n0 + nt * 8 + t.col_q + (i & 1);
        if (p.s_dump != nullptr && row < p.seq_q && col < p.seq_k) {
          const int64_t idx = (t.bh * p.seq_q + row) * p.seq_k + col;
          p.s_dump[idx] = s[nt * 4 + i];
          p.p_dump[idx] = pv[i];
          p.pc_dump[idx] = cv[i];
        }
      }
    }
  }
}

// Instrumented build: per (row, key block) flags (1 seen | 2 acc_scale < 1 | 4 the warp
// rescaled O) and the row max after the block.
__device__ __forceinline__ void write_block_flags(const AttnParams& p, const ThreadRows& t,
                                                  int n_blocks_total, int nb,
                                                  const float (&row_max)[2],
                                                  const float (&acc_scale)[2], bool warp_rescale) {
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    const int row = t.row_base + hh * 8;
    if (t.lane % 4 == 0 && row < p.seq_q) {
      const int64_t idx = (t.bh * p.seq_q + row) * n_blocks_total + nb;
      p.flags[idx] = uint8_t(1u | (acc_scale[hh] < 1.f ? 2u : 0u) | (warp_rescale ? 4u : 0u));
      p.row_max_out[idx] = row_max[hh];
    }
  }
}

// The epilogue: O = O_acc / row_sum * v_descale as bf16 (0 for an empty row), LSE in nats, and
// (INSTR) the per-row saturation counts.
template <int D, bool INSTR>
__device__ __forceinline__ void store_o_lse(const float (&o_acc)[D / 8 * 4],
                                            const float (&row_max)[2], const float (&row_sum)[2],
                                            const uint32_t (&sat_count)[2], const AttnParams& p,
                                            const ThreadRows& t, float scale_log2) {
  constexpr int kDT = D / 8;
  const float v_scale = p.v_descale != nullptr ? p.v_descale[t.bhk] : 1.f;
  __nv_bfloat16* gO = static_cast<__nv_bfloat16*>(p.o) + t.bh * p.seq_q * D;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float rs = row_sum[hh];
    rs = rs + __shfl_xor_sync(0xffffffffu, rs, 1);
    rs = rs + __shfl_xor_sync(0xffffffffu, rs, 2);
    const int row = t.row_base + hh * 8;
    const float inv_ok = rs > 0.f ? 1.f : 0.f;
    const float denom = rs > 0.f ? rs : 1.f;
    if (row < p.seq_q) {
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const float o0 = o_acc[dt * 4 + 2 * hh] / denom * v_scale * inv_ok;
        const float o1 = o_acc[dt * 4 + 2 * hh + 1] / denom * v_scale * inv_ok;
        *reinterpret_cast<__nv_bfloat162*>(gO + int64_t(row) * D + dt * 8 + t.col_q) =
            __floats2bfloat162_rn(o0, o1);
      }
      if (t.lane % 4 == 0) {
        const float rm = row_max[hh] == -INFINITY ? 0.f : row_max[hh];
        p.lse[t.bh * p.seq_q + row] =
            rs > 0.f ? (rm * scale_log2 + log2f(rs) - p.max_offset) * 0.6931471805599453f
                     : -INFINITY;
      }
    }
    if constexpr (INSTR) {
      uint32_t sc = sat_count[hh];
      sc += __shfl_xor_sync(0xffffffffu, sc, 1);
      sc += __shfl_xor_sync(0xffffffffu, sc, 2);
      if (t.lane % 4 == 0 && row < p.seq_q) p.saturated[t.bh * p.seq_q + row] = sc;
    }
  }
}

// ---- the kernel
// T: __nv_bfloat16 or __half (MMA input type). D: head dim. INSTR: instrumented build.
// 2 warpgroups (256 threads); warpgroup g owns query rows m0 + 64g .. m0 + 64g + 63, warp w of
// the CTA rows m0 + 16w .. m0 + 16w + 15 (the wgmma accumulator layout: a thread holds rows
// 16w + lane/4 and 16w + lane/4 + 8, columns 8t + 2(lane%4) + {0,1} of each 8-column tile t).
// K/V tiles are double-buffered: block it+1 loads (cp.async) while block it computes.
// EMU: -1 = the emulated tiles come from p.emu_mask at run time (a warp-uniform branch per tile);
// k >= 0 = tiles t with (t * k) % kNT < k are emulated, fixed at compile time, so the softmax is
// one straight-line block the compiler can schedule (the timed kernel; same arithmetic).
template <typename T, int D, bool INSTR, int kBN, int EMU>
__global__ void __launch_bounds__(256, 1) attention_fwd_kernel(const AttnParams p) {
  constexpr int kThreads = 256, kBM = 128, kStages = 3;
  constexpr int kDT = D / 8;  // O n8 tiles
  constexpr uint32_t kQBytes = kBM * D * 2, kKVBytes = kBN * D * 2;
  extern __shared__ char smem_raw[];
  const uint32_t sQ = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sK0 = sQ + kQBytes;  // stage s: K at sK0 + s * 2 * kKVBytes, V right after
  auto sK = [&](int st) { return sK0 + uint32_t(st) * 2u * kKVBytes; };
  auto sV = [&](int st) { return sK0 + uint32_t(st) * 2u * kKVBytes + kKVBytes; };

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, wg = warp / 4;
  const int m_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int h_kv = h / (p.heads / p.kv_heads);
  const int64_t bh = int64_t(b) * p.heads + h;
  const int64_t bhk = int64_t(b) * p.kv_heads + h_kv;
  const int m0 = m_block * kBM;
  const char* gQ = static_cast<const char*>(p.q) + bh * p.seq_q * D * 2;
  const char* gK = static_cast<const char*>(p.k) + bhk * p.seq_k * D * 2;
  const char* gV = static_cast<const char*>(p.v) + bhk * p.seq_k * D * 2;

  float scale_log2 = p.scale_log2;
  if (p.qk_descale != nullptr) scale_log2 = scale_log2 * p.qk_descale[bhk];

  const int n_blocks_total = (p.seq_k + kBN - 1) / kBN;
  const int n_blocks = visible_blocks<kBM, kBN>(p, m0, n_blocks_total);
  if (n_blocks == 0) return;  // seq_k == 0 never reaches here (validated)

  const int row_base = m0 + warp * 16 + lane / 4;  // this thread's rows: row_base + 8 * hh
  const ThreadRows thr{bh, bhk, row_base, (lane % 4) * 2, lane};

  float o_acc[kDT * 4];
#pragma unroll
  for (int i = 0; i < kDT * 4; ++i) o_acc[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  uint32_t sat_count[2] = {0u, 0u};

  auto block_of = [&](int it) { return p.reverse_blocks ? n_blocks - 1 - it : it; };
  const uint32_t bar_full = sK(kStages), bar_empty = bar_full + 8u * kStages;
  if (tid == 0) init_stage_barriers<kStages, kThreads>(bar_full, bar_empty);
  __syncthreads();
  auto load_block = [&](int j) {  // block j (iteration order) into stage j % kStages
    const int st = j % kStages;
    if (j >= kStages) mbar_wait(bar_empty + 8u * st, uint32_t((j / kStages - 1) & 1));
    const int n0 = block_of(j) * kBN;
    load_tile<kBN, D, kThreads>(sK(st), gK, n0, p.seq_k, tid);
    load_tile<kBN, D, kThreads>(sV(st), gV, n0, p.seq_k, tid);
    cp_async_arrive(bar_full + 8u * st);
  };
  load_tile<kBM, D, kThreads>(sQ, gQ, m0, p.seq_q, tid);
  load_block(0);

  // Ping-pong (Note [Why wgmma, and how]): a warpgroup's "MMA phase" issues P V of the previous
  // block and S = Q K^T of this one, then hands the tensor cores to the other (named barriers 1
  // and 2) and runs its softmax while the other's MMAs execute. One key block per `step`.
  if (wg == 1) named_arrive(1, kThreads);  // warpgroup 0 goes first
  uint32_t pa[kBN / 16][4];                // P of the previous block, the A operand of its P V
  // Q's A fragments (the m16n8k16 layout per warp), loaded once: S = Q K^T reads only K from smem.
  uint32_t q_frag[D / 16][4];
  // HAS_PV: issue the previous block's P V in the same MMA phase. The first block is peeled off
  // (HAS_PV false): ptxas keeps one phase's wgmmas in flight only in straight-line code.
  auto step = [&](const int it, auto has_pv) {
    constexpr bool kHasPV = decltype(has_pv)::value;
    const int nb = block_of(it);
    const int n0 = nb * kBN;
    const int st = it % kStages;
    mbar_wait(bar_full + 8u * st, uint32_t((it / kStages) & 1));
    fence_proxy_async();  // cp.async wrote through the generic proxy; wgmma reads through the async one

    // ---- MMA phase: O += P_prev V_prev; S = Q K^T (64 x kBN per warpgroup)
    float s[kBN / 2];
    named_sync(1 + wg, kThreads);
    reg_fence(o_acc);
    reg_fence_u(pa);
    reg_fence_u(q_frag);
    wgmma_fence();
    if constexpr (kHasPV) issue_pv<T, D, kBN>(o_acc, pa, sV((it - 1) % kStages));
    issue_qk<T, D, kBN>(s, q_frag, sK(st));
    wgmma_commit();
    if (wg == 0 || it + 1 < n_blocks) named_arrive(2 - wg, kThreads);
    wgmma_wait0();
    reg_fence(s);
    reg_fence(o_acc);
    if constexpr (kHasPV) mbar_arrive(bar_empty + 8u * ((it - 1) % kStages));
    if (it + 1 < n_blocks) load_block(it + 1);

    // ---- mask (key tail, causal)
    if ((n0 + kBN > p.seq_k) || (p.causal && n0 + kBN - 1 > m0)) mask_scores<kBN>(s, p, thr, n0);

    // ---- row max, stale-max rule, O rescale vote
    float acc_scale[2];
    const bool warp_rescale =
        update_row_max<kBN>(s, row_max, acc_scale, it == 0, scale_log2, p.tau);
    if (warp_rescale) rescale_o<kDT>(o_acc, acc_scale);

    // ---- P = exp2(s * scale_log2 + bias), per-tile MUFU or emulation; row sums; cast
    softmax_p<T, kBN, INSTR, EMU>(s, row_max, row_sum, acc_scale, pa, sat_count, p, thr, n0,
                                  scale_log2);
    if constexpr (INSTR)
      write_block_flags(p, thr, n_blocks_total, nb, row_max, acc_scale, warp_rescale);
    reg_fence_u(pa);
  };
  mbar_wait(bar_full, 0u);  // Q arrived with block 0
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    ldmatrix_x4(sQ + tile_off<kBM>(warp * 16 + (lane % 16), kk * 2 + lane / 16), q_frag[kk]);
  step(0, std::false_type{});
  for (int it = 1; it < n_blocks; ++it) step(it, std::true_type{});

  // ---- the last block's P V
  reg_fence(o_acc);
  wgmma_fence();
  issue_pv<T, D, kBN>(o_acc, pa, sV((n_blocks - 1) % kStages));
  wgmma_commit();
  wgmma_wait0();
  reg_fence(o_acc);

  // ---- epilogue: O / row_sum (times V's descale), LSE
  store_o_lse<D, INSTR>(o_acc, row_max, row_sum, sat_count, p, thr, scale_log2);
}

}  // namespace fa4sim::cuda
