// Tests of src/analysis/attention_gemm.h: the float64 references' products of `fa4sim attention`
// give, element by element, the bits of the naive loop `c = 0; for k: c = std::fma(a, b, c)`
// (an independent implementation of the documented order), for every blocking edge.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "../../src/analysis/attention_gemm.h"

namespace {

using fa4sim::detail::Panels8;

std::vector<double> normal(size_t n, uint64_t seed) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> dist;
  std::vector<double> x(n);
  for (double& v : x) v = dist(g);
  return x;
}

uint64_t bits(double x) {
  uint64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Counts the elements of C (rows x n, stride ldc) whose bits differ from the naive chain of
// a(i, k) * b(k, j) over k = 0..depth-1, and prints the first few.
int mismatches(const std::vector<double>& A, size_t lda, const double* Bs, size_t bk, size_t bj,
               int rows, int depth, int n, const std::vector<double>& C, size_t ldc) {
  int bad = 0;
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < n; ++j) {
      double c = 0.0;
      for (int k = 0; k < depth; ++k)
        c = std::fma(A[size_t(i) * lda + size_t(k)], Bs[size_t(k) * bk + size_t(j) * bj], c);
      const double got = C[size_t(i) * ldc + size_t(j)];
      if (bits(got) != bits(c) && ++bad <= 5)
        ADD_FAILURE() << "C[" << i << "][" << j << "] = " << got << ", the naive chain " << c;
    }
  return bad;
}

struct Shape {
  int rows, keys, d, nv;  // nv: the keys a (causal) tile sees, <= keys
};

// Shapes with partial row groups (rows % 6), partial column panels (n % 8), key blocks past 256
// and a tile that sees fewer keys than the panels hold.
const Shape kShapes[] = {{128, 1024, 128, 1024}, {37, 300, 64, 300}, {5, 700, 96, 523},
                         {13, 65, 13, 61},       {1, 9, 8, 9},       {128, 257, 128, 129},
                         {6, 16, 7, 3}};

TEST(AttentionGemm, QKTransposeIsTheNaiveFmaChain) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(testing::Message()
                 << "rows " << s.rows << " keys " << s.keys << " d " << s.d << " nv " << s.nv);
    const std::vector<double> Q = normal(size_t(s.rows) * size_t(s.d), 1);
    const std::vector<double> K = normal(size_t(s.keys) * size_t(s.d), 2);
    const Panels8 Kp = fa4sim::detail::panels_of_transpose(K.data(), size_t(s.d), s.keys, s.d);
    std::vector<double> S(size_t(s.rows) * size_t(s.nv), std::nan(""));
    fa4sim::detail::gemm_panels(Q.data(), size_t(s.d), s.rows, s.d, Kp, K.data(), 1, size_t(s.d),
                                s.nv, S.data(), size_t(s.nv));
    EXPECT_EQ(
        mismatches(Q, size_t(s.d), K.data(), 1, size_t(s.d), s.rows, s.d, s.nv, S, size_t(s.nv)),
        0);
  }
}

TEST(AttentionGemm, PVIsTheNaiveFmaChainInKeyOrder) {
  for (const Shape& s : kShapes) {
    SCOPED_TRACE(testing::Message()
                 << "rows " << s.rows << " keys " << s.keys << " d " << s.d << " nv " << s.nv);
    std::vector<double> P = normal(size_t(s.rows) * size_t(s.nv), 3);
    for (double& p : P) p = std::exp(p);  // positive weights, as softmax's
    const std::vector<double> V = normal(size_t(s.keys) * size_t(s.d), 4);
    const Panels8 Vp = fa4sim::detail::panels_of(V.data(), size_t(s.d), s.keys, s.d);
    std::vector<double> O(size_t(s.rows) * size_t(s.d), std::nan(""));
    fa4sim::detail::gemm_panels(P.data(), size_t(s.nv), s.rows, s.nv, Vp, V.data(), size_t(s.d), 1,
                                s.d, O.data(), size_t(s.d));
    EXPECT_EQ(
        mismatches(P, size_t(s.nv), V.data(), size_t(s.d), 1, s.rows, s.nv, s.d, O, size_t(s.d)),
        0);
  }
}

TEST(AttentionGemm, PanelsHoldTheFullColumnGroupsOnly) {
  const std::vector<double> M = normal(5 * 20, 5);  // 5 x 20: 2 full panels of columns
  const Panels8 p = fa4sim::detail::panels_of(M.data(), 20, 5, 20);
  EXPECT_EQ(p.panels, 2);
  EXPECT_EQ(p.depth, 5);
  ASSERT_EQ(p.data.size(), size_t(2 * 5 * 8));
  EXPECT_EQ(p.data[(1 * 5 + 3) * 8 + 2], M[3 * 20 + 8 + 2]);  // panel 1, row 3, column 10
  const Panels8 t = fa4sim::detail::panels_of_transpose(M.data(), 20, 5, 20);  // M^T: 20 x 5
  EXPECT_EQ(t.panels, 0);  // M^T has 5 columns: no full panel
  EXPECT_EQ(t.depth, 20);
}

}  // namespace
