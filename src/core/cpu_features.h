// cpu_features.h (private to src/): what the CPU running a baseline build (the wheel:
// FA4SIM_RUNTIME_DISPATCH) can do, for the loops compiled apart with -mavx2 -mfma
// (exp2_emu_dispatch.cpp, attention_scores_avx2.cpp).
#pragma once

namespace fa4sim::detail {

// Whether the CPU has AVX2 and FMA (asked once).
inline bool cpu_has_avx2_fma() {
  static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  return yes;
}

}  // namespace fa4sim::detail
