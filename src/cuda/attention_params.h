// attention_params.h: the kernel-argument block of the attention kernel, shared by the .cu
// launchers and the host code (src/cuda/attention_host.cpp, compiled by the host compiler).
// Plain C++ only: no CUDA types, so either compiler can include it.
#pragma once

#include <cstdint>

namespace fa4sim::cuda {

// P cast formats (runtime, warp-uniform).
enum : int { kPCastInput = 0, kPCastE4M3 = 1, kPCastE5M2 = 2 };

struct AttnParams {
  const void* q;
  const void* k;
  const void* v;
  void* o;  // bf16
  float* lse;
  const float* qk_descale;  // [batch*kv_heads] q_descale*k_descale (FP8) or nullptr
  const float* v_descale;   // [batch*kv_heads] or nullptr
  int batch, heads, kv_heads, seq_q, seq_k;  // GpuAttnShape's; Q/O [batch, heads, seq_q, d] (BHSD)
  int causal;
  int reverse_blocks;
  float scale_log2;  // softmax_scale * log2(e)
  float tau;
  float max_offset;
  uint32_t emu_mask;   // bit t: tile t of each key block through the emulation
  int emu_tiles;       // how many tiles: emu_mask = fa4sim::gpu_attn_emu_mask(emu_tiles)
  int p_cast;          // kPCast*
  float p_max_finite;  // P >= this clips in the cast (online_softmax.h saturation_threshold)
  // Instrumentation (INSTR build only)
  uint8_t* flags;
  float* row_max_out;
  uint32_t* saturated;
  float* s_dump;
  float* p_dump;
  uint16_t* pc_dump;
};

// Launchers defined in attention.cu (the only place the kernels are instantiated).
// dtype_bf16: bf16 MMA (else fp16). Errors are returned as cudaError_t values (int here).
int launch_attention(const AttnParams& p, bool dtype_bf16, int d, bool instrument, unsigned grid_x,
                     unsigned grid_y, unsigned grid_z, void* stream);
int launch_widen_fp8(const uint8_t* in, uint16_t* out, int64_t n_pairs, bool e5m2);
int launch_fill_normal(uint16_t* out, int64_t n, uint64_t seed, bool bf16);
size_t attention_smem_bytes(int d, int block_n = 64);

}  // namespace fa4sim::cuda
