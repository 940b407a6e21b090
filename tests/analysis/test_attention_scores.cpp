// Tests of src/analysis/attention_scores.cpp: the model's float32 score product gives, element by
// element, the bits of the naive loop `c = 0; for k: c = std::fma(q[k], k[k], c)` (Note [Score
// product order]), written here again, for every blocking edge of the kernel (row groups of 6,
// key panels of 16, any d). The operands are random float32 (not quantized), so that the sums
// round and another order would show.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <vector>

#include "../../src/analysis/attention_scores.h"
#include "../normal_matrix.h"

namespace {

using fa4sim::test::normal_matrix;

uint32_t bits(float x) { return std::bit_cast<uint32_t>(x); }

struct Shape {
  int rows, nv, d;
};

// Partial row groups (rows % 6), partial and single key panels (nv % 16, nv < 16), odd d, d = 1.
const Shape kShapes[] = {{128, 1024, 128}, {37, 300, 64},   {5, 700, 96}, {13, 61, 13},
                         {1, 9, 8},        {128, 129, 128}, {6, 16, 7},   {7, 17, 1},
                         {1, 1, 256},      {64, 33, 256}};

TEST(AttentionScores, EveryElementIsTheNaiveFmaChain) {
  uint32_t seed = 1;
  for (const Shape& s : kShapes) {
    const auto Q = normal_matrix(s.rows, s.d, 1.0, seed++);
    const auto K = normal_matrix(s.nv, s.d, 1.0, seed++);
    std::vector<float> S(size_t(s.rows) * size_t(s.nv), -1.0f);
    const auto Kp = fa4sim::detail::panels_of_transpose(K.data(), size_t(s.d), s.nv, s.d);
    fa4sim::detail::score_product(Q.data(), s.rows, Kp, K.data(), s.nv, s.d, S.data());
    int bad = 0;
    for (int i = 0; i < s.rows; ++i)
      for (int j = 0; j < s.nv; ++j) {
        float c = 0.0f;
        for (int k = 0; k < s.d; ++k)
          c = std::fma(Q[size_t(i) * size_t(s.d) + size_t(k)],
                       K[size_t(j) * size_t(s.d) + size_t(k)], c);
        const float got = S[size_t(i) * size_t(s.nv) + size_t(j)];
        if (bits(got) != bits(c) && ++bad <= 5)
          ADD_FAILURE() << "rows " << s.rows << " nv " << s.nv << " d " << s.d << ": S[" << i
                        << "][" << j << "] = " << got << ", the naive chain " << c;
      }
    EXPECT_EQ(bad, 0) << "rows " << s.rows << " nv " << s.nv << " d " << s.d;
  }
}

// The order is seen: for these operands a plain sum in another order (pairs of halves) differs
// from the chain somewhere, so the test above could fail for a kernel that reorders.
TEST(AttentionScores, AnotherOrderWouldDiffer) {
  const int d = 128, n = 256;
  const auto Q = normal_matrix(1, d, 1.0, 99), K = normal_matrix(n, d, 1.0, 100);
  std::vector<float> S(static_cast<size_t>(n));
  const auto Kp = fa4sim::detail::panels_of_transpose(K.data(), size_t(d), n, d);
  fa4sim::detail::score_product(Q.data(), 1, Kp, K.data(), n, d, S.data());
  int differ = 0;
  for (int j = 0; j < n; ++j) {
    float lo = 0.0f, hi = 0.0f;
    for (int k = 0; k < d / 2; ++k) lo = std::fma(Q[size_t(k)], K[size_t(j) * d + size_t(k)], lo);
    for (int k = d / 2; k < d; ++k) hi = std::fma(Q[size_t(k)], K[size_t(j) * d + size_t(k)], hi);
    differ += bits(lo + hi) != bits(S[size_t(j)]);
  }
  EXPECT_GT(differ, 0);
}

}  // namespace
