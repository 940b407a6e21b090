// row_stream.cpp: fa4sim's counter-based row streams (see row_stream.h).
#include "fa4sim/util/row_stream.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include "splitmix_avx2.h"
#include "ziggurat_avx2.h"

namespace fa4sim {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001B3ull;
  return h;
}

// The stream is counter-based: draw i (from 1) is mix(state + i * gamma), so four draws are
// computed at once and the ziggurat's fast path (99.3 % of draws: x = rabs * w[idx], accepted
// when rabs < k[idx]) is taken for the four lanes together. At the first lane that misses it, the
// accepted lanes before it are kept and that draw is redone by the scalar ziggurat_normal from
// the state just before it (which then takes its slow path, consuming further draws exactly as
// normal() does). The output is therefore normal() draw for draw; test_row_stream checks it.
void RowStream::normals(double* out, int n) {
  int i = 0;
#if defined(__AVX2__) && defined(__FMA__)
  constexpr uint64_t kGamma = kSplitmixGamma;
  const __m256i steps = _mm256_set_epi64x(int64_t(4 * kGamma), int64_t(3 * kGamma),
                                          int64_t(2 * kGamma), int64_t(kGamma));
  while (i + 4 <= n) {
    __m256i z = _mm256_add_epi64(_mm256_set1_epi64x(int64_t(state)), steps);
    z = simd::splitmix64_mix4(z);
    const int ok = simd::ziggurat_fast4(z, out + i);
    if (ok == 0xF) {
      i += 4;
      state += 4 * kGamma;
      continue;
    }
    const int j = __builtin_ctz(unsigned(~ok) & 0xFu);  // first lane off the fast path
    i += j;
    state += uint64_t(j) * kGamma;
    out[i++] = normal();
  }
#endif
  for (; i < n; ++i) out[i] = normal();
}

}  // namespace fa4sim
