// attention_kernel.cuh: sm_90a attention forward with FlashAttention-4's softmax.
//
// Models flash_attn/cute/softmax.py SoftmaxSm100 and flash_fwd_sm100.py @0251105a (see
// include/fa4sim/gpu_attention.h for the layout contract). Per key block, per row:
//   m_new = max(m_old, max(s)); m_safe = m_new or 0 if -inf; a = (m_old - m_safe) * scale_log2
//   acc_scale = ex2.approx(a); tau > 0 and a >= -tau -> keep m_old, acc_scale = 1
//   P = exp2(fma(s, scale_log2, max_offset - row_max * scale_log2))   MUFU or emulated, per tile
//   row_sum = row_sum * acc_scale + sum(P in float32); P -> input dtype (or FP8) -> P @ V
//   O *= acc_scale only when __any_sync over the warp's 16 rows says some acc_scale < 1
// The first block processed sets row_max and never rescales.
//
// Note [Why wgmma, and how]
//   Hopper's tensor cores reach their rate only through wgmma (warpgroup MMA, asynchronous,
//   B from shared memory through a descriptor); mma.sync tops out near FA2's level (the torch
//   SDPA flash backend), which an earlier mma.sync version of this kernel did not reach (235
//   TFLOP/s at d = 128). Here: 2 warpgroups per CTA, 64 query rows each; S = Q K^T by
//   m64n64k16 with Q and K from 128-byte-swizzled smem; P stays in registers and is the A
//   operand of m64nDk16 against V (MN-major B, transposed by the instruction). Loads are cp.async
//   into two K/V stages, one block ahead. Not done (FA3 does): TMA, producer/consumer warp
//   specialisation, ping-pong between warpgroups, overlapping softmax with the next QK^T.
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
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
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
__device__ __forceinline__ uint32_t tile_off(int row, int chunk) {  // chunk: 16-byte unit in the row
  return uint32_t((chunk / 8) * (ROWS * 128) + row * 128 + (((chunk % 8) ^ (row & 7)) << 4));
}

// Loads rows [row0, row0 + ROWS) of a [rows_total][D] tensor into a tile (zero-fill past the end).
template <int ROWS, int D, int NTHREADS>
__device__ __forceinline__ void load_tile(uint32_t smem, const char* g, int row0, int rows_total,
                                          int tid) {
  constexpr int kChunks = D / 8;  // 16-byte chunks per row
  constexpr int kTotal = ROWS * kChunks;
#pragma unroll
  for (int i = tid; i < kTotal; i += NTHREADS) {
    const int r = i / kChunks, c = i % kChunks;
    const bool valid = row0 + r < rows_total;
    const int gr = valid ? row0 + r : 0;
    cp_async_16(smem + tile_off<ROWS>(r, c), g + (int64_t(gr) * D + c * 8) * 2, valid);
  }
}

// wgmma shared-memory descriptor: start address, leading/stride byte offsets (16-byte units),
// layout type 1 = 128-byte swizzle (bits 62-63).
__device__ __forceinline__ uint64_t gmma_desc(uint32_t addr, uint32_t lbo_bytes, uint32_t sbo_bytes) {
  return uint64_t((addr >> 4) & 0x3FFFu) | (uint64_t((lbo_bytes >> 4) & 0x3FFFu) << 16) |
         (uint64_t((sbo_bytes >> 4) & 0x3FFFu) << 32) | (uint64_t(1) << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
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

template <typename T, int N>
__device__ __forceinline__ void wgmma_s(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if constexpr (N == 64) wgmma_ss_m64n64k16_bf16(d, da, db, scale_d);
    else wgmma_ss_m64n128k16_bf16(d, da, db, scale_d);
  } else {
    if constexpr (N == 64) wgmma_ss_m64n64k16_f16(d, da, db, scale_d);
    else wgmma_ss_m64n128k16_f16(d, da, db, scale_d);
  }
}
template <typename T, int N>
__device__ __forceinline__ void wgmma_pv(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db) {
  if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    if constexpr (N == 64) wgmma_rs_m64n64k16_bf16_tb(d, a, db);
    else wgmma_rs_m64n128k16_bf16_tb(d, a, db);
  } else {
    if constexpr (N == 64) wgmma_rs_m64n64k16_f16_tb(d, a, db);
    else wgmma_rs_m64n128k16_f16_tb(d, a, db);
  }
}

// ---- the kernel
// T: __nv_bfloat16 or __half (MMA input type). D: head dim. INSTR: instrumented build.
// 2 warpgroups (256 threads); warpgroup g owns query rows m0 + 64g .. m0 + 64g + 63, warp w of
// the CTA rows m0 + 16w .. m0 + 16w + 15 (the wgmma accumulator layout: a thread holds rows
// 16w + lane/4 and 16w + lane/4 + 8, columns 8t + 2(lane%4) + {0,1} of each 8-column tile t).
// K/V tiles are double-buffered: block it+1 loads (cp.async) while block it computes.
template <typename T, int D, bool INSTR, int kBN = 64>
__global__ void __launch_bounds__(256, 1) attention_fwd_kernel(const AttnParams p) {
  constexpr int kThreads = 256, kBM = 128;
  constexpr int kNT = kBN / 8;   // S n8 tiles per key block
  constexpr int kDT = D / 8;     // O n8 tiles
  constexpr uint32_t kQBytes = kBM * D * 2, kKVBytes = kBN * D * 2;
  extern __shared__ char smem_raw[];
  const uint32_t sQ = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sK0 = sQ + kQBytes;  // stage s: K at sK0 + s * 2 * kKVBytes, V right after
  auto sK = [&](int st) { return sK0 + uint32_t(st) * 2u * kKVBytes; };
  auto sV = [&](int st) { return sK0 + uint32_t(st) * 2u * kKVBytes + kKVBytes; };

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, wg = warp / 4;
  const int m_block = blockIdx.x, h = blockIdx.y, b = blockIdx.z;
  const int h_kv = h / (p.heads_q / p.heads_kv);
  const int64_t bh = int64_t(b) * p.heads_q + h;
  const int64_t bhk = int64_t(b) * p.heads_kv + h_kv;
  const int m0 = m_block * kBM;
  const char* gQ = static_cast<const char*>(p.q) + bh * p.seq_q * D * 2;
  const char* gK = static_cast<const char*>(p.k) + bhk * p.seq_k * D * 2;
  const char* gV = static_cast<const char*>(p.v) + bhk * p.seq_k * D * 2;

  float scale_log2 = p.scale_log2;
  if (p.qk_descale != nullptr) scale_log2 = scale_log2 * p.qk_descale[bhk];

  const int n_blocks_total = (p.seq_k + kBN - 1) / kBN;
  int n_blocks = n_blocks_total;
  if (p.causal) {
    const int last_key = min(p.seq_k, m0 + kBM);  // keys < last_key can be visible
    n_blocks = min(n_blocks_total, (last_key + kBN - 1) / kBN);
  }
  if (n_blocks == 0) return;  // seq_k == 0 never reaches here (validated)

  // Rows of this thread: row_base + 8 * hh.
  const int row_base = m0 + warp * 16 + lane / 4;
  const int col_q = (lane % 4) * 2;

  float o_acc[kDT * 4];
#pragma unroll
  for (int i = 0; i < kDT * 4; ++i) o_acc[i] = 0.f;
  float row_max[2] = {-INFINITY, -INFINITY}, row_sum[2] = {0.f, 0.f};
  uint32_t sat_count[2] = {0u, 0u};

  auto block_of = [&](int it) { return p.reverse_blocks ? n_blocks - 1 - it : it; };
  load_tile<kBM, D, kThreads>(sQ, gQ, m0, p.seq_q, tid);
  load_tile<kBN, D, kThreads>(sK(0), gK, block_of(0) * kBN, p.seq_k, tid);
  load_tile<kBN, D, kThreads>(sV(0), gV, block_of(0) * kBN, p.seq_k, tid);
  cp_async_commit();

  // Descriptor bases: this warpgroup's 64 Q rows (8 row groups of 1024 bytes).
  const uint32_t q_wg = sQ + uint32_t(wg) * 64u * 128u;

  for (int it = 0; it < n_blocks; ++it) {
    const int nb = block_of(it);
    const int n0 = nb * kBN;
    const int st = it & 1;
    if (it + 1 < n_blocks) {
      const int nn = block_of(it + 1) * kBN;
      load_tile<kBN, D, kThreads>(sK(st ^ 1), gK, nn, p.seq_k, tid);
      load_tile<kBN, D, kThreads>(sV(st ^ 1), gV, nn, p.seq_k, tid);
    }
    cp_async_commit();
    cp_async_wait<1>();  // this block's K and V (and Q) have landed
    fence_proxy_async();  // cp.async wrote through the generic proxy; wgmma reads through the async one
    __syncthreads();

    // ---- S = Q K^T (64 x kBN per warpgroup), D/16 k-steps of m64nBNk16
    float s[kNT * 4];
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      const uint32_t koff = uint32_t(kk % 4) * 32u;  // 16 elements further in the 128-byte row
      const uint64_t da = gmma_desc(q_wg + uint32_t(kk / 4) * (kBM * 128u) + koff, 16u, 1024u);
      const uint64_t db = gmma_desc(sK(st) + uint32_t(kk / 4) * (kBN * 128u) + koff, 16u, 1024u);
      wgmma_s<T, kBN>(s, da, db, kk > 0 ? 1 : 0);
    }
    wgmma_commit();
    wgmma_wait0();
    reg_fence(s);

    // ---- mask (key tail, causal)
    const bool need_mask = (n0 + kBN > p.seq_k) || (p.causal && n0 + kBN - 1 > m0);
    if (need_mask) {
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int col = n0 + nt * 8 + col_q + (i & 1);
          const int row = row_base + (i >> 1) * 8;
          if (col >= p.seq_k || (p.causal && col > row)) s[nt * 4 + i] = -INFINITY;
        }
    }

    // ---- row max, stale-max rule
    float acc_scale[2];
    bool want_rescale = false;
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
      float m = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) m = fmaxf(m, fmaxf(s[nt * 4 + 2 * hh], s[nt * 4 + 2 * hh + 1]));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
      m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
      const float m_old = row_max[hh];
      const float m_new = fmaxf(m_old, m);
      float sc = 1.f;
      if (it == 0) {
        row_max[hh] = m_new;
      } else {
        const float m_safe = m_new == -INFINITY ? 0.f : m_new;
        const float a = (m_old - m_safe) * scale_log2;
        sc = ex2_mufu(a);
        if (p.tau > 0.f && a >= -p.tau) {
          sc = 1.f;
        } else {
          row_max[hh] = m_new;
        }
      }
      acc_scale[hh] = sc;
      want_rescale |= sc < 1.f;
    }
    const bool warp_rescale = __any_sync(0xffffffffu, want_rescale);
    if (warp_rescale) {
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        o_acc[dt * 4 + 0] *= acc_scale[0];
        o_acc[dt * 4 + 1] *= acc_scale[0];
        o_acc[dt * 4 + 2] *= acc_scale[1];
        o_acc[dt * 4 + 3] *= acc_scale[1];
      }
    }

    // ---- P = exp2(s * scale_log2 + bias), per-tile MUFU or emulation; row sums; cast
    uint32_t pa[kNT / 2][4];  // A fragments of P @ V, one per 16-key step
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
      const bool emu = (p.emu_mask >> nt) & 1u;  // warp-uniform, Note [Emulation granularity]
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
          const int row = row_base + (i >> 1) * 8;
          const int col = n0 + nt * 8 + col_q + (i & 1);
          if (p.s_dump != nullptr && row < p.seq_q && col < p.seq_k) {
            const int64_t idx = (bh * p.seq_q + row) * p.seq_k + col;
            p.s_dump[idx] = s[nt * 4 + i];
            p.p_dump[idx] = pv[i];
            p.pc_dump[idx] = cv[i];
          }
        }
      }
    }
    if constexpr (INSTR) {
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const int row = row_base + hh * 8;
        if (lane % 4 == 0 && row < p.seq_q) {
          const int64_t idx = (bh * p.seq_q + row) * n_blocks_total + nb;
          p.flags[idx] = uint8_t(1u | (acc_scale[hh] < 1.f ? 2u : 0u) | (warp_rescale ? 4u : 0u));
          p.row_max_out[idx] = row_max[hh];
        }
      }
    }

    // ---- O += P V: kBN/16 k-steps of m64nDk16, A = P from registers, B = V (MN-major)
    reg_fence(o_acc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      const uint64_t db = gmma_desc(sV(st) + uint32_t(kk) * 16u * 128u, kBN * 128u, 1024u);
      wgmma_pv<T, D>(o_acc, pa[kk], db);
    }
    wgmma_commit();
    wgmma_wait0();
    reg_fence(o_acc);
    __syncthreads();  // every warpgroup is done with stage st before it is reloaded
  }

  // ---- epilogue: O / row_sum (times V's descale), LSE
  const float v_scale = p.v_descale != nullptr ? p.v_descale[bhk] : 1.f;
  __nv_bfloat16* gO = static_cast<__nv_bfloat16*>(p.o) + bh * p.seq_q * D;
#pragma unroll
  for (int hh = 0; hh < 2; ++hh) {
    float rs = row_sum[hh];
    rs = rs + __shfl_xor_sync(0xffffffffu, rs, 1);
    rs = rs + __shfl_xor_sync(0xffffffffu, rs, 2);
    const int row = row_base + hh * 8;
    const float inv_ok = rs > 0.f ? 1.f : 0.f;
    const float denom = rs > 0.f ? rs : 1.f;
    if (row < p.seq_q) {
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const float o0 = o_acc[dt * 4 + 2 * hh] / denom * v_scale * inv_ok;
        const float o1 = o_acc[dt * 4 + 2 * hh + 1] / denom * v_scale * inv_ok;
        *reinterpret_cast<__nv_bfloat162*>(gO + int64_t(row) * D + dt * 8 + col_q) =
            __floats2bfloat162_rn(o0, o1);
      }
      if (lane % 4 == 0) {
        const float rm = row_max[hh] == -INFINITY ? 0.f : row_max[hh];
        p.lse[bh * p.seq_q + row] =
            rs > 0.f ? (rm * scale_log2 + log2f(rs) - p.max_offset) * 0.6931471805599453f
                     : -INFINITY;
      }
    }
    if constexpr (INSTR) {
      uint32_t sc = sat_count[hh];
      sc += __shfl_xor_sync(0xffffffffu, sc, 1);
      sc += __shfl_xor_sync(0xffffffffu, sc, 2);
      if (lane % 4 == 0 && row < p.seq_q) p.saturated[bh * p.seq_q + row] = sc;
    }
  }
}

}  // namespace fa4sim::cuda
