// attention_scores_avx2.cpp: score_product's AVX2/FMA kernel for builds that target a baseline
// below AVX2 (the wheel: FA4SIM_RUNTIME_DISPATCH). CMake compiles this file alone with -mavx2
// -mfma; score_product (attention_scores.cpp) calls it only when the CPU has both. The kernel is
// gemm_panels (attention_gemm.h), as a -march=native build runs it, so the bits are the same (Note [Score product
// order]). The function is flattened: no out-of-line AVX2 copy of a shared inline function
// (gemm_panels, simd::fma_panel) is left for the linker to give baseline callers, and every AVX2 instruction is
// inside a function whose name has "avx2" (the wheel test's objdump check).
#include "attention_scores.h"

#if FA4SIM_RUNTIME_DISPATCH && defined(__AVX2__) && defined(__FMA__)

namespace fa4sim::detail {

[[gnu::flatten]] void score_product_avx2(const float* Q, int rows, const Panels<float>& Kp,
                                         const float* K, int nv, int d, float* S) {
  gemm_panels(Q, size_t(d), rows, d, Kp, K, 1, size_t(d), nv, S, size_t(nv));
}

}  // namespace fa4sim::detail

#endif
