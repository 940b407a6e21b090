// softmax_ref.cpp: the float64 softmax(S) @ V reference (see softmax_ref.h).
#include "fa4sim/ref/softmax_ref.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "fa4sim/core/constants.h"
#include "fa4sim/util/parallel.h"
#include "../core/fma_panel.h"

namespace fa4sim {

void softmax_reference(const float* S, int rows, int keys, float scale_log2, const float* V, int d,
                       std::vector<double>& O_ref, std::vector<double>& lse_ref, int threads) {
  O_ref.assign(size_t(rows) * size_t(d), 0.0);
  lse_ref.assign(size_t(rows), 0.0);
  constexpr int kRows = 6;  // rows per chunk: they share every load of V
  constexpr int kKeyBlock = 256;
  const int d8 = d - d % 8;
  // V in float64 once, as column panels of 8: panel c holds V[k][8c .. 8c+8) for every k,
  // contiguous (a key block of a panel, 16 KiB, stays in L1 while a row chunk sweeps it).
  std::vector<double> Vp(size_t(keys) * size_t(d8));
  parallel_chunks(uint64_t(d8 / 8), 1, threads, [&](uint64_t c, uint64_t, uint64_t) {
    double* out = Vp.data() + c * uint64_t(keys) * 8;
    for (int k = 0; k < keys; ++k)
      for (int t = 0; t < 8; ++t)
        out[size_t(k) * 8 + size_t(t)] = double(V[size_t(k) * size_t(d) + c * 8 + size_t(t)]);
  });
  parallel_chunks(uint64_t(rows), kRows, threads, [&](uint64_t, uint64_t b, uint64_t e) {
    const int nr = int(e - b);
    std::vector<double> p(size_t(kRows) * size_t(keys), 0.0);
    double l[kRows] = {}, m[kRows];
    for (int i = 0; i < nr; ++i) {
      const float* s = S + (b + uint64_t(i)) * uint64_t(keys);
      m[i] = -std::numeric_limits<double>::infinity();
      for (int k = 0; k < keys; ++k) m[i] = std::max(m[i], double(s[k]));
      if (m[i] == -std::numeric_limits<double>::infinity()) continue;  // all masked: p = 0
      double* pi = p.data() + size_t(i) * size_t(keys);
      for (int k = 0; k < keys; ++k) {
        pi[k] = std::exp2((double(s[k]) - m[i]) * double(scale_log2));
        l[i] += pi[k];
      }
    }
    // O[i][j] = sum_k p_ik V[k][j] in key order, one float64 fma per key. Keys in blocks of 256,
    // columns in panels of 8; every element takes its keys in order, so neither the blocking nor
    // the row chunking changes a value.
    std::vector<double> acc_all(size_t(kRows) * size_t(d), 0.0);
    for (int k0 = 0; k0 < keys; k0 += kKeyBlock) {
      const int k1 = std::min(keys, k0 + kKeyBlock);
      int j0 = 0;
#if defined(__AVX2__) && defined(__FMA__)
      for (; j0 < d8; j0 += 8) {
        const double* vp = Vp.data() + size_t(j0 / 8) * size_t(keys) * 8 + size_t(k0) * 8;
        double* a = acc_all.data() + j0;
        const double* pk = p.data() + k0;
        simd::fma_panel_rows(nr, a, size_t(d), pk, size_t(keys), vp, 8, k1 - k0);
      }
#endif
      for (; j0 < d; ++j0)
        for (int k = k0; k < k1; ++k)
          for (int i = 0; i < nr; ++i) {
            double& a = acc_all[size_t(i) * size_t(d) + size_t(j0)];
            a = std::fma(p[size_t(i) * size_t(keys) + size_t(k)],
                         double(V[size_t(k) * size_t(d) + size_t(j0)]), a);
          }
    }
    for (int i = 0; i < nr; ++i)
      for (int j = 0; j < d; ++j)
        O_ref[(b + uint64_t(i)) * uint64_t(d) + uint64_t(j)] =
            acc_all[size_t(i) * size_t(d) + size_t(j)];
    for (int i = 0; i < nr; ++i) {
      const uint64_t r = b + uint64_t(i);
      if (m[i] == -std::numeric_limits<double>::infinity()) {
        lse_ref[r] = m[i];
        continue;
      }
      for (int j = 0; j < d; ++j) O_ref[r * uint64_t(d) + uint64_t(j)] /= l[i];
      lse_ref[r] = (m[i] * double(scale_log2) + std::log2(l[i])) * kLn2;
    }
  });
}

}  // namespace fa4sim
