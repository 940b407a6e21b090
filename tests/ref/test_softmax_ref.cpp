// Tests for softmax_ref.h: the float64 softmax(S) @ V reference is a softmax, and its blocked,
// vectorised loops give the plain float64 loop's bits (the contract's "Bit-exact vs" line).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "fa4sim/ref/softmax_ref.h"
#include "normal_matrix.h"

namespace fa4sim {
namespace {

using test::normal_matrix;

// The float64 reference is a softmax: rows of weights sum to 1, so V = 1 gives O = 1.
TEST(SoftmaxRef, ReferenceIsASoftmax) {
  const int rows = 4, keys = 300, d = 3;
  const auto S = normal_matrix(rows, keys, 5.0, 71);
  std::vector<float> V(size_t(keys) * size_t(d), 1.0f);
  std::vector<double> O, lse;
  softmax_reference(S.data(), rows, keys, 1.0f, V.data(), d, O, lse, 2);
  for (double o : O) EXPECT_NEAR(o, 1.0, 1e-14);
  for (int r = 0; r < rows; ++r) {
    long double l = 0;
    for (int k = 0; k < keys; ++k)
      l += std::exp2l((long double)S[size_t(r) * size_t(keys) + size_t(k)]);
    EXPECT_NEAR(lse[size_t(r)], double(std::log(l)), 1e-12);
  }
}

// softmax_reference (panels, row chunks, AVX2) = the plain float64 loop, bit for bit.
TEST(SoftmaxRef, ReferenceMatchesScalarLoop) {
  const int rows = 11, keys = 600, d = 21;
  const auto S = normal_matrix(rows, keys, 3.0, 93);
  const auto V = normal_matrix(keys, d, 1.0, 94);
  std::vector<double> O, lse;
  softmax_reference(S.data(), rows, keys, 0.5f, V.data(), d, O, lse, 2);
  for (int r = 0; r < rows; ++r) {
    const float* s = S.data() + size_t(r) * size_t(keys);
    double m = -std::numeric_limits<double>::infinity(), l = 0;
    for (int k = 0; k < keys; ++k) m = std::max(m, double(s[k]));
    std::vector<double> p(static_cast<size_t>(keys));
    for (int k = 0; k < keys; ++k) l += p[size_t(k)] = std::exp2((double(s[k]) - m) * 0.5);
    for (int j = 0; j < d; ++j) {
      double a = 0;
      for (int k = 0; k < keys; ++k)
        a = std::fma(p[size_t(k)], double(V[size_t(k) * size_t(d) + size_t(j)]), a);
      ASSERT_EQ(O[size_t(r) * size_t(d) + size_t(j)], a / l) << r << " " << j;
    }
  }
}

// A row whose every key is masked (-inf) gives O = 0 and LSE = -inf, the rows around it stay finite
// (the contract's "Special values" line).
TEST(SoftmaxRef, FullyMaskedRow) {
  const int rows = 3, keys = 40, d = 5;
  auto S = normal_matrix(rows, keys, 2.0, 95);
  for (int k = 0; k < keys; ++k)
    S[size_t(keys) + size_t(k)] = -std::numeric_limits<float>::infinity();
  const auto V = normal_matrix(keys, d, 1.0, 96);
  std::vector<double> O, lse;
  softmax_reference(S.data(), rows, keys, 1.0f, V.data(), d, O, lse, 2);
  for (int j = 0; j < d; ++j) EXPECT_EQ(O[size_t(d) + size_t(j)], 0.0);
  EXPECT_EQ(lse[1], -std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isfinite(lse[0]));
  EXPECT_TRUE(std::isfinite(lse[2]));
}

}  // namespace
}  // namespace fa4sim
