// gpu_common.cpp: the parts of include/fa4sim/gpu/gpu.h that need no device (names for reports).
#include "fa4sim/gpu/gpu.h"

namespace fa4sim::gpu {

const char* name_of(Op op) {
  switch (op) {
    case Op::ex2_emu: return "exp2-emu";
    case Op::ex2_mufu: return "exp2-mufu";
    case Op::rcp_mufu: return "rcp-mufu";
    case Op::lg2_mufu: return "lg2-mufu";
    case Op::cvt_e4m3_satfinite: return "e4m3-satfinite";
    case Op::cvt_e5m2_satfinite: return "e5m2-satfinite";
    case Op::cvt_bf16: return "bf16";
    case Op::cvt_f16: return "fp16";
    case Op::cvt_bf16_satfinite: return "bf16-satfinite";
    case Op::cvt_f16_satfinite: return "fp16-satfinite";
  }
  return "?";
}

const char* ptx_of(Op op) {
  switch (op) {
    case Op::ex2_emu:
      return "max.ftz.f32, add.rm.ftz.f32, sub.rn.ftz.f32 x2, fma.rn.ftz.f32 x degree, shl.b32, "
             "add.s32";
    case Op::ex2_mufu: return "ex2.approx.ftz.f32";
    case Op::rcp_mufu: return "rcp.approx.ftz.f32";
    case Op::lg2_mufu: return "lg2.approx.ftz.f32";
    case Op::cvt_e4m3_satfinite: return "cvt.rn.satfinite.e4m3x2.f32 (both lanes)";
    case Op::cvt_e5m2_satfinite: return "cvt.rn.satfinite.e5m2x2.f32 (both lanes)";
    case Op::cvt_bf16: return "cvt.rn.bf16.f32";
    case Op::cvt_f16: return "cvt.rn.f16.f32";
    case Op::cvt_bf16_satfinite: return "cvt.rn.satfinite.bf16.f32";
    case Op::cvt_f16_satfinite: return "cvt.rn.satfinite.f16.f32";
  }
  return "?";
}

}  // namespace fa4sim::gpu
