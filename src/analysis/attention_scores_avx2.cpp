// attention_scores_avx2.cpp: score_product's AVX2/FMA kernel for builds that target a baseline
// below AVX2 (the wheel: FA4SIM_RUNTIME_DISPATCH). CMake compiles this file alone with -mavx2
// -mfma; score_product (attention_scores.cpp) calls it only when the CPU has both. The kernel is
// score_panels16, as a -march=native build runs it, so the bits are the same (Note [Score product
// order]). The function is flattened: no out-of-line AVX2 copy of a shared inline function
// (simd::fma_panel) is left for the linker to give baseline callers, and every AVX2 instruction is
// inside a function whose name has "avx2" (the wheel test's objdump check).
#include "attention_scores.h"

#if FA4SIM_RUNTIME_DISPATCH && defined(__AVX2__) && defined(__FMA__)

namespace fa4sim::detail {

[[gnu::flatten]] void score_product_avx2(const float* Q, int rows, const float* K, int nv, int d,
                                         float* S) {
  thread_local std::vector<float> pack;
  score_panels16(Q, rows, K, nv, d, S, pack);
}

}  // namespace fa4sim::detail

#endif
