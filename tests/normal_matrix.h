// normal_matrix.h: the seeded test matrices of the softmax tests (core/test_online_softmax,
// analysis/test_row_sim, ref/test_softmax_ref): std::mt19937_64 normals, optionally rising.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace fa4sim::test {

// rows x cols, row-major: N(0, sigma^2) + rise * c / cols in column c, rounded to float32.
inline std::vector<float> normal_matrix(int rows, int cols, double sigma, uint32_t seed,
                                        double rise = 0) {
  std::mt19937_64 g(seed);
  std::normal_distribution<double> n(0.0, sigma);
  std::vector<float> m(size_t(rows) * size_t(cols));
  for (int r = 0; r < rows; ++r)
    for (int c = 0; c < cols; ++c)
      m[size_t(r) * size_t(cols) + size_t(c)] = float(n(g) + rise * c / cols);
  return m;
}

}  // namespace fa4sim::test
