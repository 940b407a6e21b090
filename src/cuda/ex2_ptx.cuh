// ex2_ptx.cuh: the GPU's own exp2 instructions as inline PTX, shared by every kernel.
//
// The MUFU's reciprocal rcp_mufu(x) (`rcp.approx.ftz.f32`) and log2 lg2_mufu(x)
// (`lg2.approx.ftz.f32`), and two device functions, one per path a FlashAttention-4 softmax exp
// can take:
//   ex2_mufu(x)        MUFU: `ex2.approx.ftz.f32` (the hardware exp2; max 2 ulp from 2^x per
//                      the PTX ISA; bit-exact CPU model: include/fa4sim/core/mufu.h
//                      ex2_approx_ftz)
//   ex2_emu_ptx<deg>(x) the FMA-pipe emulation, flash_attn/cute/utils.py ex2_emulation
//                      @0251105a, written as the PTX ops the upstream emits, one by one, so the
//                      GPU side of every parity test runs the hardware's instructions (never the
//                      C++ model compiled for the device). Bit-exact model on the CPU:
//                      include/fa4sim/core/exp2_emu.h ex2_emu(x, deg) (same op sequence, same notes).
// Hopper has no packed .f32x2 forms: the scalar ops below compute the same values lane by lane.
// Nothing here is compiled by the host compiler; include it from .cu files only.
#pragma once

#include <cstdint>

#include "fa4sim/core/exp2_emu.h"

namespace fa4sim::cuda {

// MUFU exp2 (flush-to-zero of subnormal inputs and results).
__device__ __forceinline__ float ex2_mufu(float x) {
  float y;
  asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// MUFU reciprocal, as upstream's cute.arch.rcp_approx issues it (flush-to-zero of subnormal inputs
// and results). Bit-exact CPU model: include/fa4sim/core/mufu.h rcp_approx_ftz.
__device__ __forceinline__ float rcp_mufu(float x) {
  float y;
  asm volatile("rcp.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

// MUFU log2, as upstream's cute.math.log2(..., fastmath=True) issues it for the LSE (flush-to-zero
// of subnormal inputs). Bit-exact CPU model: include/fa4sim/core/mufu.h lg2_approx_ftz.
__device__ __forceinline__ float lg2_mufu(float x) {
  float y;
  asm volatile("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ float max_ftz_ptx(float a, float b) {
  float y;
  asm("max.ftz.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ float add_rm_ftz_ptx(float a, float b) {
  float y;
  asm("add.rm.ftz.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ float sub_rn_ftz_ptx(float a, float b) {
  float y;
  asm("sub.rn.ftz.f32 %0, %1, %2;" : "=f"(y) : "f"(a), "f"(b));
  return y;
}
__device__ __forceinline__ float fma_rn_ftz_ptx(float a, float b, float c) {
  float y;
  asm("fma.rn.ftz.f32 %0, %1, %2, %3;" : "=f"(y) : "f"(a), "f"(b), "f"(c));
  return y;
}

// Horner step i = I .. 0 with the coefficients as compile-time constants (one fma.rn.ftz each).
template <int DEG, int I>
__device__ __forceinline__ float ex2_horner(float p, float f) {
  if constexpr (I < 0) {
    return p;
  } else {
    constexpr float c = kPolyEx2[DEG][I];
    return ex2_horner<DEG, I - 1>(fma_rn_ftz_ptx(p, f, c), f);
  }
}

// The emulated exp2, degree DEG (0..5); see exp2_emu.h for the contract (domain x <= 127,
// special values, the -127 subnormal splice). Why each rounding mode: add.rm leaves floor(x) in
// the low mantissa bits of x + 1.5*2^23; the splice is add.s32 (LEA on the ALU pipe, not IMAD on
// the FMA pipe the trick relieves).
template <int DEG>
__device__ __forceinline__ float ex2_emu_ptx(float x) {
  static_assert(DEG >= 0 && DEG <= kExp2MaxDegree, "degree 0..5");
  const float xc = max_ftz_ptx(x, kExp2ClampLo);
  const float xr = add_rm_ftz_ptx(xc, kExp2RoundMagic);
  const float xb = sub_rn_ftz_ptx(xr, kExp2RoundMagic);
  const float f = sub_rn_ftz_ptx(xc, xb);
  constexpr float c_top = kPolyEx2[DEG][DEG];
  const float p = ex2_horner<DEG, DEG - 1>(c_top, f);
  uint32_t xr_bits = __float_as_uint(xr), p_bits = __float_as_uint(p), out;
  asm("{\n\t.reg .b32 t;\n\tshl.b32 t, %1, 23;\n\tadd.s32 %0, t, %2;\n\t}"
      : "=r"(out)
      : "r"(xr_bits), "r"(p_bits));
  return __uint_as_float(out);
}

}  // namespace fa4sim::cuda
