// attention_scores.cpp: see attention_scores.h.
//
// ---- Note [Scores on the baseline ISA]
// The model's scores are Eigen's float32 product of the quantized Q and K. Each product of two
// inputs is exact in float32 (at most 11 + 11 significand bits), but the sums round, and Eigen
// orders them by its kernel for the vector width it is compiled for: the -march=native build
// (AVX2) and the wheel (x86-64-v2: SSE) then give scores a float32 rounding apart on some
// elements. The bf16 P hides most of that, the error split's float32-P variant does not: on an
// AVX2 machine `fa4sim attention`'s error_split.p_conversion differed by 1.4e-9 relative between
// the two builds (0.0023204420946854936 against 0.0023204420914984354, B1 H4/2 S128 d64). So this
// file is compiled for the baseline ISA in every x86 build (CMakeLists.txt: -mno-avx), and both
// builds take the same sums in the same order. It costs the native build the AVX width on this
// product alone; P V and the float64 references keep theirs (they fix their order explicitly).
#include "attention_scores.h"

#include <Eigen/Dense>

namespace fa4sim::detail {

void score_product(const float* Q, int rows, const float* K, int nv, int d, float* S) {
  using Mat = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  Eigen::Map<const Mat> q(Q, rows, d), k(K, nv, d);
  Eigen::Map<Mat> s(S, rows, nv);
  s.noalias() = q * k.transpose();
}

}  // namespace fa4sim::detail
